"""Every import format read from real files (wallabag's importer fixtures) and from files
written from each format's documentation: detected, with titles, tags, dates, folders and
read state kept (``tests/imports/README`` says where each came from)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from readdod.capture.formats import READERS, Entry, Problem, Skipped, detect
from readdod.capture.plan import Options, Planned, census, plan

FILES = Path(__file__).parent / "imports"
REAL = FILES / "wallabag"


def _read(path: Path) -> tuple[str, list[Entry], list[Problem], list[Skipped]]:
    text = path.read_text()
    fmt = detect(path.name, text)
    got = list(READERS[fmt](text))
    return (
        fmt,
        [g for g in got if isinstance(g, Entry)],
        [g for g in got if isinstance(g, Problem)],
        [g for g in got if isinstance(g, Skipped)],
    )


# (file, format, entries, archived, starred, {field of the first entry: value})
CASES: list[tuple[Path, str, int, int, int, dict[str, Any]]] = [
    (
        REAL / "firefox-bookmarks.json",
        "firefox",
        2,
        0,
        0,
        {"tags": ("test", "tag"), "saved_at": "2013-12-27T17:41:31Z"},
    ),
    (REAL / "chrome-bookmarks", "chrome", 1, 0, 0, {"saved_at": "2016-09-20T13:15:29Z"}),
    (
        REAL / "pinboard_export",
        "pinboard",
        3,
        0,
        0,
        {
            "title": "Complexities of an Infinite Scroller",
            "tags": ("infinite", "dom", "performance", "scroll"),
            "saved_at": "2016-10-31T15:57:56Z",
        },
    ),
    (
        REAL / "delicious_export.2021.02.06_21.10.json",
        "delicious",
        3,
        0,
        0,
        {"tags": ("basket", "javascript", "loader", "localStorage")},
    ),
    (REAL / "readability.json", "readability", 3, 0, 1, {"saved_at": "2016-08-25T12:05:00Z"}),
    (REAL / "instapaper-export.csv", "instapaper", 4, 1, 1, {"tags": ()}),
    (REAL / "wallabag-v1.json", "wallabag", 2, 1, 0, {"tags": ("Framabag",)}),
    (REAL / "omnivore.json", "omnivore", 20, 1, 0, {"tags": ("RSS",)}),
    (REAL / "pocket.csv", "pocket", 7, 2, 0, {"saved_at": "2020-09-17T06:06:28Z"}),
    (REAL / "shaarli-bookmarks.html", "netscape", 2, 0, 0, {"tags": ("firefoxos",)}),
    (FILES / "instapaper.csv", "instapaper", 4, 1, 1, {"saved_at": "2023-11-14T22:13:20Z"}),
    (FILES / "readwise.csv", "readwise", 3, 1, 1, {"tags": ("focus", "work")}),
    (FILES / "linkwarden.json", "linkwarden", 1, 0, 1, {"folder": ("Research",)}),
    (FILES / "firefox-bookmarks.html", "netscape", 6, 0, 0, {"folder": ("Cooking", "Bread")}),
]


@pytest.mark.parametrize(
    ("path", "fmt", "count", "archived", "starred", "first"),
    CASES,
    ids=[c[0].name for c in CASES],
)
def test_each_format_is_detected_and_keeps_what_people_had(
    path: Path, fmt: str, count: int, archived: int, starred: int, first: dict[str, Any]
) -> None:
    got_fmt, entries, problems, _ = _read(path)
    assert got_fmt == fmt
    assert len(entries) == count, problems
    assert all(e.url and e.url.startswith("http") for e in entries)
    assert all(e.title for e in entries if fmt not in ("readability",))
    assert sum(e.archived for e in entries) == archived
    assert sum(e.starred for e in entries) == starred
    for field, value in first.items():
        assert getattr(entries[0], field) == value, field


def test_instapaper_csv_keeps_folder_timestamp_and_tags_not_the_literal_brackets() -> None:
    _, entries, _, _ = _read(FILES / "instapaper.csv")
    assert [e.tags for e in entries] == [(), ("history",), (), ("food", "weekend", "Recipes")]
    assert [e.folder for e in entries] == [(), (), (), ("Recipes",)]
    assert entries[2].highlights == ("the sentence I kept",)
    assert all(e.saved_at for e in entries)


def test_readwise_feed_rows_are_skipped_and_counted() -> None:
    _, entries, _, skipped = _read(FILES / "readwise.csv")
    assert [e.url for e in entries if "feed" in (e.url or "")] == []
    assert [s.kind for s in skipped] == ["feed rows (not saved reading)"] * 2


def test_wallabag_v1_splits_its_comma_joined_tags() -> None:
    text = (REAL / "wallabag-v1.json").read_text().replace('"Framabag"', '"framasoft,tag"')
    entries = [e for e in READERS["wallabag"](text) if isinstance(e, Entry)]
    assert entries[0].tags == ("framasoft", "tag")


def test_browser_json_folders_leave_out_the_browsers_own_roots() -> None:
    chrome = list(READERS["chrome"]((REAL / "chrome-bookmarks").read_text()))
    assert [e.folder for e in chrome if isinstance(e, Entry)] == [()]
    doc = (
        '{"roots": {"bookmark_bar": {"type": "folder", "name": "Barre", "children": ['
        '{"type": "folder", "name": "Rust", "children": [{"type": "url", "name": "Book",'
        ' "url": "https://example.org/book", "date_added": "13300000000000000"}]}]}}}'
    )
    (book,) = READERS["chrome"](doc)
    assert isinstance(book, Entry) and book.folder == ("Rust",)


def test_firefox_export_folders_become_tags_and_duplicates_merge() -> None:
    text = (FILES / "firefox-bookmarks.html").read_text()
    opts = Options(fmt="netscape", intent="read")
    counted = census(READERS["netscape"](text), opts)
    got = list(plan(READERS["netscape"](text), opts, counted))
    planned = [g for g in got if isinstance(g, Planned)]
    repeats = [g for g in got if isinstance(g, Skipped)]
    # Every anchor is accounted for: 6 links, 2 of them repeats of earlier ones.
    assert counted.entries == 6 and len(planned) + len(repeats) == 6 and len(repeats) == 2
    by_url = {p.params["url"]: p.params for p in planned}
    sourdough = by_url["https://example.org/sourdough"]
    # Tags of every copy merged, folder paths as tags; the earliest date kept.
    assert sourdough["tags"] == ["baking", "Cooking/Bread", "bread"]
    assert sourdough["origin"]["saved_at"] == "2017-07-14T02:40:00Z"
    assert by_url["https://example.org/sqlite-wal"]["tags"] == ["Work", "db"]
    assert "tags" not in by_url["https://example.org/top"]


def test_placeholders_and_short_kept_content_are_fetched_instead() -> None:
    opts = Options(fmt="wallabag", intent="read")
    placeholder = Entry(
        line=1,
        url="https://example.org/a",
        title="No title found",
        html="<p>Oh, what a shame, no content.</p>",
    )
    short = Entry(line=2, url="https://example.org/b", html="<p>Subscribe to read more</p>")
    article = Entry(line=3, url="https://example.org/c", html="<p>" + "words " * 200 + "</p>")
    got = [p for p in plan([placeholder, short, article], opts) if isinstance(p, Planned)]
    assert ["html" in p.params for p in got] == [False, False, True]
    assert "title" not in got[0].params


def test_archived_entries_are_planned_archived_unless_asked() -> None:
    _, entries, _, _ = _read(REAL / "pocket.csv")
    kept = [p for p in plan(entries, Options(fmt="pocket", intent="i")) if isinstance(p, Planned)]
    assert sum(p.params.get("archived", False) for p in kept) == 2
    asked = Options(fmt="pocket", intent="i", process_archived=True)
    assert not any(p.params.get("archived") for p in plan(entries, asked) if isinstance(p, Planned))


def test_highlights_are_the_note_when_there_is_none() -> None:
    marked = Entry(
        line=1,
        url="https://example.org/m",
        highlights=("Reviews spaced over days beat one long session.",),
        description="a teaser",
    )
    (p,) = plan([marked], Options(fmt="omnivore"))
    assert isinstance(p, Planned) and p.highlights == 1
    # Without --intent, what the person marked is what the engines read the page for.
    assert p.params["intent"] == "Highlighted: “Reviews spaced over days beat one long session.”"
    assert p.params["origin"]["highlights"] == list(marked.highlights)
    assert p.params["origin"]["description"] == "a teaser"
    (given,) = plan([marked], Options(fmt="omnivore", intent="study"))
    assert isinstance(given, Planned) and given.params["intent"] == "study"
    assert given.params["origin"]["note"].startswith("Highlighted: ")
