"""What users read holds together: the README stays a front door, every relative
link leads somewhere, and the error table is the code's own list of codes."""

import re
from pathlib import Path

import pytest

from readdod.errors import RETRYABLE, ErrorCode

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "ARCHITECTURE.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def _prose(text: str) -> str:
    """The text outside fenced code blocks, where links are links."""
    return FENCE.sub("", text)


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return words.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(h) for h in HEADING.findall(_prose(page.read_text()))}


def _relative_links(page: Path) -> list[str]:
    found = LINK.findall(_prose(page.read_text()))
    return [t for t in found if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def test_the_pages_have_links_to_check() -> None:
    assert len(_relative_links(README)) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_something_that_exists(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        found = file.exists()
        if found and anchor and file.suffix == ".md":
            found = anchor in _anchors(file)
        if not found:
            broken.append(target)
    assert broken == []


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) < 200
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings == ["Two commands", "A five-minute tour", "Where to go next"]


def test_the_readme_gives_the_test_command_that_ci_runs() -> None:
    readme = README.read_text()
    (command,) = re.findall(r"&& (python -m pytest [^\n`]*)\n", readme)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    runs = [line for line in ci if line.startswith("python -m pytest ")]
    assert any(line.startswith(command + " ") or line == command for line in runs), runs


def _error_table() -> list[list[str]]:
    text = (DOCS / "errors.md").read_text()
    table = text[text.index("| error_code | retryable |") :].split("\n\n", 1)[0]
    rows = [r.strip("|").split("|") for r in table.splitlines()[2:]]
    return [[cell.strip() for cell in row] for row in rows]


def test_the_error_table_lists_every_code_once_and_no_other() -> None:
    listed = [row[0].strip("`") for row in _error_table()]
    assert sorted(listed) == sorted(code.value for code in ErrorCode)
    assert len(listed) == len(set(listed))


def test_the_error_table_says_what_the_code_says_of_retrying() -> None:
    words = {True: "yes", False: "no", None: "depends"}
    told = {row[0].strip("`"): row[1] for row in _error_table()}
    assert told == {code.value: words[RETRYABLE[code]] for code in ErrorCode}
