"""Export rendering (pure), file naming, and the atomic writer on a real file system."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from readdod import export
from readdod.errors import ErrorCode, ExportError
from readdod.export import atomic, jsonfmt, markdown, naming
from readdod.export.document import ExportDoc
from readdod.export.writer import Exporter, write_failure
from readdod.items.models import Card, CardSource, RenderSpec, Score, Todo

ITEM = "01JEXPORTTESTITEM000000000"
TRICKY = 'yes: no # not a comment\n"quoted" \\ back\ttab \x85nel \u2028ls \x7f del 🦆 - {x} @a %b'

TODOS = [
    Todo(title="Write the decision note", kind="output", estimate_min=30),
    Todo(title="Try WAL on a copy", kind="action", estimate_min=15),
    Todo(title="Read the checkpoint docs", kind="read", estimate_min=10),
]


def _doc(
    *,
    title: str = "SQLite WAL, explained",
    intent: str = "decide whether we adopt WAL mode",
    item_id: str = ITEM,
    sections: list[str] | None = None,
    tags: list[str] | None = None,
) -> ExportDoc:
    card = Card(
        title=title,
        one_liner="WAL lets readers and a writer work at once.",
        summary="First paragraph.\n\nSecond paragraph.",
        key_points=["Readers do not block", "Checkpoints move pages back", "FULL is durable"],
        todos=TODOS,
        priority="P1",
        match_score=82,
        tags=["db"],
        source=CardSource(url="https://example.org/wal?a=1&b=(2)", title="WAL [notes]"),
        render_spec=RenderSpec(
            template="card", version="card.v1", sections=sections or ["todos", "key_points"]
        ),
    )
    return ExportDoc(
        item_id=item_id,
        url="https://example.org/wal",
        final_url=None,
        title="SQLite WAL",
        intent=intent,
        tags=tags if tags is not None else ["sqlite"],
        created_at="2026-11-20T10:00:00.000Z",
        exported_at="2026-11-26T01:02:03.000Z",
        card=card,
        card_version=3,
        card_created_by="user",
        score=Score(
            match_score=82,
            priority="P1",
            reasons=["Mentions WAL 12 times", "Answers the intent", "Recent"],
            recommendation="read",
        ),
    )


def _front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    block = text[4 : text.index("\n---\n", 4)]
    loaded = yaml.safe_load(block)
    assert isinstance(loaded, dict)
    return loaded


# --- markdown ----------------------------------------------------------------


def test_markdown_front_matter_is_yaml_that_reads_back_exactly() -> None:
    doc = _doc(intent=TRICKY, tags=["no", "on", "#hash", "a: b", TRICKY])
    text = markdown.render(doc).decode()
    meta = _front_matter(text)
    assert meta["id"] == ITEM
    assert meta["intent"] == TRICKY  # every escape survives a real YAML parser
    assert meta["url"] == "https://example.org/wal?a=1&b=(2)"
    assert meta["priority"] == "P1" and meta["match_score"] == 82
    assert meta["recommendation"] == "read"
    assert meta["tags"] == sorted({"no", "on", "#hash", "a: b", TRICKY, "db"})
    assert meta["created"] == "2026-11-20T10:00:00.000Z"
    assert meta["exported"] == "2026-11-26T01:02:03.000Z"
    assert meta["card_version"] == 3
    assert meta["title"] == "SQLite WAL, explained"


@pytest.mark.parametrize("title", ["yes", "null", "- a\n- b", "---", TRICKY, "1e3", "~"])
def test_a_title_can_never_break_the_front_matter(title: str) -> None:
    text = markdown.render(_doc(title=title)).decode()
    meta = _front_matter(text)
    assert meta["title"] == " ".join(title.split())  # one line, still a string
    assert isinstance(meta["title"], str) and meta["id"] == ITEM
    assert text.count("\n---\n") == 1  # the block closes exactly once


def test_markdown_body_has_every_section_in_the_cards_order() -> None:
    text = markdown.render(_doc(sections=["todos", "key_points"])).decode()
    body = text[text.index("\n---\n") + 5 :]
    assert body.startswith("\n# SQLite WAL, explained\n")
    todos = [line for line in body.splitlines() if line.startswith("- [ ] ")]
    assert todos == [
        "- [ ] Write the decision note (output, ~30 min)",
        "- [ ] Try WAL on a copy (action, ~15 min)",
        "- [ ] Read the checkpoint docs (read, ~10 min)",
    ]
    heads = [line for line in body.splitlines() if line.startswith("## ")]
    assert heads == ["## Todos", "## Key points", "## Summary", "## Why", "## Source"]
    assert "> WAL lets readers and a writer work at once." in body
    assert "First paragraph.\n\nSecond paragraph." in body
    assert "- Readers do not block" in body
    assert "- Mentions WAL 12 times" in body and "Recommendation: read" in body
    assert "[WAL \\[notes\\]](<https://example.org/wal?a=1&b=(2)>)" in body
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_markdown_list_items_stay_on_one_line() -> None:
    doc = _doc()
    card = msgspec.structs.replace(
        doc.card, key_points=["two\nlines", "b", "c"], one_liner="one\n# not a heading"
    )
    text = markdown.render(msgspec.structs.replace(doc, card=card)).decode()
    assert "- two lines\n" in text and "> one # not a heading\n" in text
    assert "\n# not a heading" not in text


# --- json --------------------------------------------------------------------


def test_json_export_is_the_card_and_the_item() -> None:
    doc = _doc()
    raw = jsonfmt.render(doc)
    got = msgspec.json.decode(raw, type=jsonfmt.CardExport)
    assert got.id == ITEM and got.schema == jsonfmt.SCHEMA
    assert msgspec.to_builtins(got.card) == msgspec.to_builtins(doc.card)
    assert got.card_version == 3 and got.card_created_by == "user"
    assert got.item.intent == doc.intent and got.item.url == doc.url
    assert got.item.tags == ["db", "sqlite"]
    assert got.reasons == ["Mentions WAL 12 times", "Answers the intent", "Recent"]
    assert got.recommendation == "read"
    assert json.loads(raw)["card"]["todos"][0]["title"] == "Write the decision note"


@pytest.mark.parametrize("fmt", export.FORMATS)
def test_every_rendering_begins_with_its_marker(fmt: str) -> None:
    other = "01JOTHERITEM00000000000000"
    out = export.render(fmt, _doc())
    assert out.startswith(export.marker(fmt, ITEM))
    assert not out.startswith(export.marker(fmt, other))


def test_default_key_changes_with_what_the_file_shows() -> None:
    base = export.default_key(ITEM, 3, 2, "markdown", "/n")
    assert base == export.default_key(ITEM, 3, 2, "markdown", "/n")
    variants = {
        export.default_key(ITEM, 4, 2, "markdown", "/n"),
        export.default_key(ITEM, 3, 3, "markdown", "/n"),
        export.default_key(ITEM, 3, 2, "json", "/n"),
        export.default_key(ITEM, 3, 2, "markdown", "/m"),
        export.default_key("01JOTHER", 3, 2, "markdown", "/n"),
        # The item's own fields the file carries, and the file-name pattern.
        export.default_key(ITEM, 3, 2, "markdown", "/n", shown=("{slug}.{ext}", "A title")),
        export.default_key(ITEM, 3, 2, "markdown", "/n", shown=("{slug}.{ext}", "Another")),
    }
    assert base not in variants and len(variants) == 7


# --- naming ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("SQLite WAL, explained!", "sqlite-wal-explained"),
        ("Huerto en el balcón: guía_rápida", "huerto-en-el-balcon-guia-rapida"),
        ("日本語のタイトル", "日本語のタイトル"),
        ("../../etc/passwd", "etc-passwd"),
        ("", "item"),
        ("---", "item"),
        ("a" * 80, "a" * 60),
        ("word " * 20, "-".join(["word"] * 12)),
    ],
)
def test_slugify(title: str, slug: str) -> None:
    assert naming.slugify(title) == slug


def test_file_names_and_suffixes() -> None:
    kw: dict[str, Any] = {"date": "2026-11-20", "slug": "wal", "item_id": ITEM, "fmt": "markdown"}
    assert naming.file_name(naming.DEFAULT_PATTERN, ext="md", **kw) == "2026-11-20-wal.md"
    assert naming.file_name(naming.DEFAULT_PATTERN, ext="md", n=3, **kw) == "2026-11-20-wal-3.md"
    assert naming.file_name("{id}", ext="md", n=2, **kw) == ITEM.lower() + "-2"
    assert naming.file_name("{slug}.{format}.{ext}", ext="md", **kw) == "wal.markdown.md"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("", "empty"),
        ("notes/{slug}.{ext}", "not a path"),
        ("{date}-{title}.{ext}", "unknown placeholder {title}"),
        ("{slug!r}.{ext}", "no format spec"),
        ("{date}.{ext}", "must contain {slug} or {id}"),
        ("{slug", "not a valid pattern"),
    ],
)
def test_bad_filename_patterns_are_refused(pattern: str, problem: str) -> None:
    found = naming.check_pattern(pattern)
    assert found is not None and problem in found
    assert naming.check_pattern(naming.DEFAULT_PATTERN) is None


# --- the writer ----------------------------------------------------------------


def _write(
    ex: Exporter, folder: Path, item_id: str, data: bytes, *, slug: str = "wal", prev: Any = ()
) -> Path:
    def candidate(n: int) -> str:
        return naming.file_name(
            ex.pattern, date="2026-11-20", slug=slug, ext="md", item_id=item_id, fmt="markdown", n=n
        )

    return ex.write(folder, candidate, list(prev), markdown.marker(item_id), data)


def _rendered(item_id: str, title: str = "WAL") -> bytes:
    return markdown.render(_doc(item_id=item_id, title=title))


def test_collisions_get_suffixes_and_an_item_keeps_its_own_file(tmp_path: Path) -> None:
    folder = tmp_path / "notes" / "deep"  # created on demand
    ex = Exporter(folder)
    a, b, c = (
        "01JAAAAAAAAAAAAAAAAAAAAAAA",
        "01JBBBBBBBBBBBBBBBBBBBBBBB",
        "01JCCCCCCCCCCCCCCCCCCCCCCC",
    )
    pa = _write(ex, folder, a, _rendered(a))
    pb = _write(ex, folder, b, _rendered(b))
    # A person's own note and a folder also hold names: neither is touched.
    (folder / "2026-11-20-wal-3.md").write_text("my own note\n")
    (folder / "2026-11-20-wal-4.md").mkdir()
    pc = _write(ex, folder, c, _rendered(c))
    assert [p.name for p in (pa, pb, pc)] == [
        "2026-11-20-wal.md",
        "2026-11-20-wal-2.md",
        "2026-11-20-wal-5.md",
    ]
    assert (folder / "2026-11-20-wal-3.md").read_text() == "my own note\n"

    # The same item again, with a new card: its own file is rewritten in place.
    again = _write(ex, folder, b, _rendered(b, title="WAL, revised"))
    assert again == pb and "WAL, revised" in pb.read_text()
    # A changed title (new slug) still finds the item's earlier file.
    moved = _write(ex, folder, a, _rendered(a, title="Other"), slug="other", prev=[str(pa)])
    assert moved == pa and "Other" in pa.read_text()
    assert sorted(p.name for p in folder.iterdir()) == [
        "2026-11-20-wal-2.md",
        "2026-11-20-wal-3.md",
        "2026-11-20-wal-4.md",
        "2026-11-20-wal-5.md",
        "2026-11-20-wal.md",
    ]


def test_a_crash_between_write_and_record_converges(tmp_path: Path) -> None:
    """The file is on disk but nothing recorded it: the next export rewrites the same file."""
    ex = Exporter(tmp_path)
    first = _write(ex, tmp_path, ITEM, _rendered(ITEM))
    stale = tmp_path / f".{first.name}.deadbeef.tmp"
    stale.write_bytes(b"half")  # a crash mid-write, long ago
    old = time.time() - 3600
    os.utime(stale, (old, old))
    young = tmp_path / f".{first.name}.cafebabe.tmp"
    young.write_bytes(b"being written")  # another export of the same name, right now
    second = _write(ex, tmp_path, ITEM, _rendered(ITEM, title="v2"))
    assert second == first and "v2" in first.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, young.name])


def test_write_atomic_replaces_whole_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    atomic.write_atomic(target, b"one")
    atomic.write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    with pytest.raises(FileExistsError):
        atomic.write_atomic(target, b"three", replace=False)
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]


def test_parent_is_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "notes"
    blocker.write_text("not a folder")
    ex = Exporter(blocker / "sub")
    with pytest.raises(ExportError) as exc:
        _write(ex, blocker / "sub", ITEM, _rendered(ITEM))
    assert exc.value.code is ErrorCode.EXPORT_WRITE_FAILED
    assert f"{blocker} is a file, not a folder" in exc.value.message
    assert exc.value.path == str(blocker / "sub")
    assert blocker.read_text() == "not a folder"


_CHILD = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    from readdod.errors import ExportError
    from readdod.export import markdown
    from readdod.export.writer import Exporter

    folder, mode, item = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if mode == "readonly" and os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # root ignores permission bits; a plain user does not
    if mode == "fsize":
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    marker = markdown.marker(item)
    try:
        Exporter(folder).write(folder, lambda n: f"card-{n}.md", [], marker, marker + b"x" * 20000)
    except ExportError as exc:
        print(json.dumps({"code": exc.error_code, "path": exc.path, "message": exc.message}))
    else:
        print(json.dumps({"code": None}))
    """
)


def _child(folder: Path, mode: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder), mode, ITEM],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_read_only_folder() -> None:
    # Not under tmp_path: its parents are private to root, so the plain user
    # the child becomes could not even reach the folder.
    with tempfile.TemporaryDirectory(prefix="readdod-ro-") as top:
        Path(top).chmod(0o755)
        folder = Path(top) / "ro"
        folder.mkdir()
        (folder / "card-1.md").write_text("keep me\n")
        folder.chmod(0o555)
        try:
            got = _child(folder, "readonly")
            listed = sorted(p.name for p in folder.iterdir())
        finally:
            folder.chmod(0o755)
        kept = (folder / "card-1.md").read_text()
    assert got["code"] == "EXPORT_WRITE_FAILED"
    assert got["path"] == str(folder / "card-2.md")
    assert "permission denied" in got["message"] and str(folder / "card-2.md") in got["message"]
    assert listed == ["card-1.md"] and kept == "keep me\n"


def test_file_size_limit_leaves_nothing_behind(tmp_path: Path) -> None:
    got = _child(tmp_path, "fsize")
    assert got["code"] == "EXPORT_WRITE_FAILED"
    assert got["path"] == str(tmp_path / "card-1.md")
    assert "file size limit" in got["message"]
    assert list(tmp_path.iterdir()) == []  # no partial file, no temp file


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "no space left"),
        (errno.EDQUOT, "quota"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.ENAMETOOLONG, "export.filename"),
    ],
)
def test_write_failures_say_what_and_where(tmp_path: Path, code: int, words: str) -> None:
    path = tmp_path / "x.md"
    err = write_failure(path, OSError(code, os.strerror(code)))
    assert err.code is ErrorCode.EXPORT_WRITE_FAILED and err.path == str(path)
    assert str(path) in err.message and words in err.message and "--out DIR" in err.message


def test_folder_must_be_absolute() -> None:
    from readdod.errors import ValidationFailed

    ex = Exporter(None)
    with pytest.raises(ValidationFailed, match="absolute"):
        ex.folder("notes")
    with pytest.raises(ValidationFailed, match=r"export\.dir"):
        ex.folder(None)
    assert ex.folder("/a/b/../c") == Path("/a/c")


def test_config_refuses_a_bad_filename_naming_the_key() -> None:
    from readdod.errors import ConfigError
    from readdod.settings import config

    with pytest.raises(ConfigError, match=r"export: filename unknown placeholder \{title\}"):
        config.parse(b'[export]\nfilename = "{title}.{ext}"\n', "cfg.toml")
    parsed = config.parse(b'[export]\nfilename = "{id}.{ext}"\nformat = "json"\n')
    assert parsed.export.filename == "{id}.{ext}" and parsed.export.format == "json"
