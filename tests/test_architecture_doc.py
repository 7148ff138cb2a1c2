"""ARCHITECTURE.md stays readable and true: short table rows, every part of the
package on the map, and every file, folder or name it cites really there."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "readdod"
DOC = ROOT / "ARCHITECTURE.md"

#: A table row longer than this is a paragraph in a cell: put the detail in a list.
MAX_ROW = 300
CITED = re.compile(r"`([^`\s]+)`")
PATH_LIKE = re.compile(r"^[\w*.-]*(?:/[\w*.-]*)*$")


def _text() -> str:
    return DOC.read_text()


def _parts_table() -> list[str]:
    text = _text()
    section = text[text.index("## The parts") :]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "no parts table"
    return rows


def _repository_files() -> list[str]:
    """Every file git knows of here (tracked or new), as repository paths."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [p for p in listed if (ROOT / p).exists()]


def _exists(cited: str, files: list[str], folders: set[str]) -> bool:
    """Whether a cited path (``a/b.py``, ``a/``, ``sql/*.sql``) ends some path here."""
    if cited.endswith("/"):
        name = cited.rstrip("/")
        return any(f == name or f.endswith("/" + name) for f in folders)
    pattern = re.compile(r"(^|/)" + re.escape(cited).replace(r"\*", r"[^/]*") + "$")
    return any(pattern.search(f) for f in files)


def _defines(module: Path, names: list[str]) -> bool:
    source = module.read_text()
    return all(
        re.search(rf"^\s*(?:async def|def|class) {n}\b|^{n}\b\s*[:=]", source, re.M) for n in names
    )


def test_no_table_row_is_a_paragraph() -> None:
    rows = [line for line in _text().splitlines() if line.startswith("|")]
    assert rows
    assert [r[:60] for r in rows if len(r) > MAX_ROW] == []


def test_every_part_of_the_package_is_on_the_map() -> None:
    named: set[str] = set()
    for row in _parts_table():
        named |= set(CITED.findall(row.split("|")[1]))
    assert named
    top = {
        p.name + "/" if p.is_dir() else p.name
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name not in {"__init__.py", "__main__.py"})
    }
    assert top - named == set(), "parts missing from ARCHITECTURE.md"
    assert named - top == set(), "parts ARCHITECTURE.md names that do not exist"


def test_every_cited_file_and_name_exists() -> None:
    files = _repository_files()
    folders = {str(Path(f).parent) for f in files} | {
        str(p) for f in files for p in Path(f).parents if str(p) != "."
    }
    checked, missing = 0, []
    for cited in set(CITED.findall(_text())):
        path, dot, names = cited.partition(".")
        if "/" not in cited and not cited.endswith(".py"):
            continue  # a word, a setting or a bare name: nothing to look up
        if cited.endswith(".py") or not dot or "*" in cited or not PATH_LIKE.match(path):
            found = PATH_LIKE.match(cited) is not None and _exists(cited, files, folders)
        else:  # `core/leases.Leases.claim`: a module and names defined in it
            stem = path.removesuffix("/__init__")
            modules = [
                f for f in files if re.search(rf"(^|/){re.escape(stem)}(\.py|/__init__\.py)$", f)
            ]
            found = any(_defines(ROOT / m, names.split(".")) for m in modules)
        checked += 1
        if not found:
            missing.append(cited)
    assert checked > 100
    assert sorted(missing) == []


def _blocks() -> list[tuple[str, str]]:
    """Each table row, paragraph and list item that opens with a folder, with it."""
    blocks, current = [], ""
    for line in [*_text().splitlines(), ""]:
        opens = re.match(r"^(?:\| |- |)`([\w/]+/)`", line)
        if opens or not line.strip() or line.startswith(("|", "- ")):
            if current:
                blocks.append(current)
            current = line if opens else ""
        elif current:
            current += "\n" + line
    found = []
    for block in blocks:
        folder = re.match(r"^(?:\| |- |)`([\w/]+/)`", block)
        assert folder
        if block.startswith("|") and block.split("|")[1].strip() != f"`{folder.group(1)}`":
            continue  # a row of several parts: its modules may be in any of them
        found.append((folder.group(1), block))
    return found


def test_a_module_named_under_a_folder_is_in_that_folder() -> None:
    """`metrics/`: ... `listen.py` says listen.py is in metrics/: it must be."""
    folders = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*") if p.is_dir()}
    checked, wrong = 0, []
    for folder, block in _blocks():
        homes = [
            f for f in folders if f == folder.rstrip("/") or f.endswith("/" + folder.rstrip("/"))
        ]
        assert homes, folder
        for name in re.findall(r"`(\w+\.py)`", block):
            checked += 1
            if not any((PACKAGE / home / name).exists() for home in homes):
                wrong.append(f"{folder}{name}")
    assert checked > 50
    assert wrong == []
