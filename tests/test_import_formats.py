"""The export readers and the import plan: pure, on files written from each format's
documented layout (``tests/imports/``) and on broken variants of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from readdod.capture.formats import READERS, Entry, Problem, detect
from readdod.capture.formats.detect import UnknownFormat
from readdod.capture.plan import Options, Planned, capture_id, plan

FILES = Path(__file__).parent / "imports"


def _read(name: str, fmt: str | None = None) -> tuple[list[Entry], list[Problem]]:
    text = (FILES / name).read_text()
    got = list(READERS[fmt or detect(name, text)](text))
    return [e for e in got if isinstance(e, Entry)], [p for p in got if isinstance(p, Problem)]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("bookmarks.html", "netscape"),
        ("pocket.csv", "pocket"),
        ("omnivore.json", "omnivore"),
        ("wallabag.json", "wallabag"),
        ("karakeep.json", "karakeep"),
        ("urls.txt", "urls"),
    ],
)
def test_each_export_is_recognised(name: str, fmt: str) -> None:
    assert detect(name, (FILES / name).read_text()) == fmt


def test_an_unknown_file_is_refused_saying_what_it_looked_like() -> None:
    with pytest.raises(UnknownFormat, match="give --format"):
        detect("notes.txt", "dear diary\nnothing here\n")
    with pytest.raises(UnknownFormat, match="bookmarks"):
        detect("x.json", '{"items": []}')


def test_netscape_keeps_time_title_tags_and_description() -> None:
    entries, problems = _read("bookmarks.html")
    first = entries[0]
    assert first.url == "https://example.org/sqlite-wal"
    assert first.title == "SQLite & the WAL"
    assert first.tags == ("databases", "sqlite")
    assert first.saved_at == "2021-01-01T00:00:00Z"
    # A <DD> is the source's description (a teaser, often), not the person's note.
    assert first.description == "to tune our write path" and first.note is None
    assert first.line == 12
    # A title across lines is one line; a link with no <DD> has no note.
    assert entries[1].title == "A page with no note" and entries[1].description is None
    # The description of a link in a nested folder stays with that link.
    assert (entries[2].title, entries[2].description) == ("Bread", "bake on Sundays")
    assert problems == [Problem(22, "a link without an address (no HREF)")]


def test_pocket_csv_reads_by_header_and_reports_bad_rows_by_line() -> None:
    entries, problems = _read("pocket.csv")
    assert [e.url for e in entries] == [
        "https://example.org/papers",
        "https://example.org/commas",
        "https://example.org/plain",
    ]
    assert entries[0].tags == ("research", "reading")
    assert entries[0].saved_at == "2023-11-14T22:13:20Z"
    assert entries[1].title == 'Commas, quotes "and" more'
    assert entries[2].saved_at is None  # "notatime"
    assert problems == [Problem(4, "the row has no url")]


def test_pocket_csv_with_a_broken_row_goes_on_after_it() -> None:
    text = 'url,title\nhttps://example.org/a,A\nhttps://example.org/b,"B"oops\nhttps://example.org/c,C\n'
    got = list(READERS["pocket"](text))
    assert [g.url for g in got if isinstance(g, Entry)] == [
        "https://example.org/a",
        "https://example.org/c",
    ]
    (problem,) = [g for g in got if isinstance(g, Problem)]
    assert problem.line == 3


def test_a_csv_without_a_url_column_is_one_problem() -> None:
    assert list(READERS["pocket"]("title,link\na,b\n")) == [
        Problem(1, "no url column in the header (found: title, link)")
    ]


def test_omnivore_labels_dates_and_bad_entries() -> None:
    entries, problems = _read("omnivore.json")
    assert [(e.line, e.url) for e in entries] == [
        (2, "https://example.org/spacing"),
        (25, "https://example.org/archived"),
    ]
    assert entries[0].tags == ("learning", "memory")
    # Omnivore's description is the publisher's teaser: never the intent.
    assert entries[0].description == "revisit before the exam" and entries[0].note is None
    assert entries[1].tags == ("later",)
    assert entries[1].saved_at == "2023-04-01T06:30:00Z"
    assert [p.line for p in problems] == [17, 18]


def test_wallabag_brings_the_kept_page_and_the_annotations() -> None:
    entries, problems = _read("wallabag.json")
    assert problems == []
    rust = entries[0]
    assert rust.html is not None and "Futures are polled" in rust.html
    assert rust.tags == ("rust", "async")
    assert rust.saved_at == "2021-06-01T07:00:00Z"
    assert rust.note == "learn how pinning works"
    assert entries[1].html is None  # empty content: the link is fetched


def test_karakeep_links_texts_and_what_cannot_be_imported() -> None:
    entries, problems = _read("karakeep.json")
    assert entries[0].url == "https://example.org/structured"
    assert entries[0].note == "apply to the daemon's loops"
    assert entries[0].saved_at == "2024-04-24T23:06:40Z"
    assert entries[1].url is None and entries[1].text is not None
    assert [p.line for p in problems] == [18, 25]


def test_url_list_lines() -> None:
    entries, problems = _read("urls.txt")
    assert [(e.line, e.url, e.title) for e in entries] == [
        (2, "https://example.org/one", None),
        (3, "https://example.org/two", "The second one"),
        (6, "https://example.org/three", "Three, OneTab style"),
    ]
    assert problems == [Problem(5, "not a link: 'not a link at all'")]


def test_json_cut_off_keeps_the_entries_before_the_cut() -> None:
    text = (FILES / "omnivore.json").read_text()
    cut = text[: text.index('"Archived one"')]
    got = list(READERS["omnivore"](cut))
    assert [g.url for g in got if isinstance(g, Entry)] == ["https://example.org/spacing"]
    last = got[-1]
    assert isinstance(last, Problem) and "not valid JSON at line 28" in last.message


def test_json_of_the_wrong_shape_is_one_problem() -> None:
    assert list(READERS["karakeep"]("[1, 2]")) == [
        Problem(1, "expected a JSON object with a 'bookmarks' list")
    ]
    assert list(READERS["wallabag"]('{"a": 1}')) == [
        Problem(1, "expected the file to be a JSON list of entries")
    ]


def _planned(name: str, opts: Options) -> tuple[list[Planned], list[Problem]]:
    text = (FILES / name).read_text()
    got = list(plan(READERS[detect(name, text)](text), opts))
    return [g for g in got if isinstance(g, Planned)], [g for g in got if isinstance(g, Problem)]


def test_plan_takes_the_note_as_intent_and_keeps_the_origin() -> None:
    planned, _ = _planned("karakeep.json", Options(fmt="karakeep", tags=("imported",)))
    first = planned[0].params
    assert first["intent"] == "apply to the daemon's loops"
    assert first["tags"] == ["python", "anyio", "imported"]
    assert first["origin"] == {
        "source": "import:karakeep",
        "saved_at": "2024-04-24T23:06:40Z",
        "note": "apply to the daemon's loops",
    }
    assert planned[1].needs_intent


def test_a_description_is_kept_and_never_the_intent() -> None:
    planned, problems = _planned("bookmarks.html", Options(fmt="netscape", tags=("imported",)))
    first = planned[0].params
    assert "intent" not in first and planned[0].needs_intent
    assert first["tags"] == ["databases", "sqlite", "imported"]
    assert first["priority"] == "P3"
    assert first["origin"] == {
        "source": "import:netscape",
        "saved_at": "2021-01-01T00:00:00Z",
        "description": "to tune our write path",
    }
    # The same link again later in the file is left out; place: is no web address.
    assert [p.params["url"] for p in planned].count("https://example.org/sqlite-wal") == 1
    assert [p.line for p in problems] == [21, 22]


def test_given_intent_wins_and_the_note_is_still_kept() -> None:
    planned, _ = _planned("bookmarks.html", Options(fmt="netscape", intent="tune the db"))
    assert {p.params["intent"] for p in planned} == {"tune the db"}
    assert planned[0].params["origin"]["description"] == "to tune our write path"


def test_capture_id_follows_the_canonical_link() -> None:
    a = Entry(line=1, url="https://Example.org/x?utm_source=a#top")
    b = Entry(line=9, url="https://example.org/x", title="other")
    c = Entry(line=1, url="https://example.org/y")
    assert capture_id(a) == capture_id(b) != capture_id(c)
    assert capture_id(Entry(line=1, url="javascript:alert(1)")) is None


def test_plan_keeps_every_field_within_the_capture_bounds() -> None:
    long = Entry(
        line=1,
        url="https://example.org/long",
        title="t" * 900,
        tags=(*tuple(f"tag{i}" for i in range(80)), "x" * 300),
        note="word " * 3000,
    )
    (p,) = plan([long], Options(fmt="urls"))
    assert isinstance(p, Planned)
    assert len(p.params["title"]) <= 500
    assert len(p.params["tags"]) == 50 and all(len(t) <= 100 for t in p.params["tags"])
    assert len(p.params["intent"]) <= 2000
    assert len(p.params["origin"]["note"]) <= 10_000


def test_a_page_too_big_to_hand_in_is_fetched_instead() -> None:
    entry = Entry(line=1, url="https://example.org/big", html="<p>" + "word " * 1000 + "</p>")
    (small,) = plan([entry], Options(fmt="wallabag", intent="i", max_html_bytes=1000))
    (big,) = plan([entry], Options(fmt="wallabag", intent="i", max_html_bytes=10_000))
    assert isinstance(small, Planned) and "html" not in small.params
    assert isinstance(big, Planned) and "html" in big.params


def test_a_folder_description_is_not_the_note_of_the_link_before_it() -> None:
    text = (
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        '<DT><A HREF="https://example.org/a">A</A>\n'
        "<DT><H3>Folder</H3>\n<DD>what this folder holds\n<DL><p>\n"
        '<DT><A HREF="https://example.org/b">B</A>\n<DD>the note of B\n'
        "</DL><p>\n</DL>\n"
    )
    got = [e for e in READERS["netscape"](text) if isinstance(e, Entry)]
    got_notes = [(e.title, e.description) for e in got]
    assert got_notes == [("A", None), ("B", "the note of B")]
    # The folder the link is in is its folder path.
    assert [e.folder for e in got] == [(), ("Folder",)]


def test_progress_bar_and_summary_say_the_counts() -> None:
    import io

    from readdod.capture.importing import Bar, Tally, summary_lines

    out = io.StringIO()
    bar = Bar(out, interval_s=0)
    tally = Tally(fmt="pocket", total=40, intent_from="given")
    bar(tally)
    tally.new, tally.already = 10, 5
    tally.refused = [(n, f"bad line {n}") for n in range(2, 27)]
    bar(tally)
    bar.close()
    last = out.getvalue().rstrip("\n").split("\r")[-1]
    assert last == ("[" + "#" * 30 + "] 40/40  new 10 · already there 5 · refused 25")
    lines = summary_lines(tally, "export.csv")
    assert lines[0] == (
        "imported export.csv (pocket): 40 entries; new 10, already there 5, refused 25"
    )
    assert lines[1] == "  line 2: bad line 2" and len(lines) == 22
    assert lines[-1] == "  ... and 5 more (--json lists all)"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (1609459200, "2021-01-01T00:00:00Z"),
        ("1609459200", "2021-01-01T00:00:00Z"),
        (1609459200123, "2021-01-01T00:00:00Z"),  # milliseconds
        ("1609459200123456", "2021-01-01T00:00:00Z"),  # microseconds
        (0, None),
        ("soon", None),
        (None, None),
        (True, None),
        (1e30, None),
    ],
)
def test_saved_times_in_seconds_milliseconds_or_microseconds(raw: object, expected: str) -> None:
    from readdod.capture.formats.entry import from_epoch

    assert from_epoch(raw) == expected


def test_an_old_latin1_bookmark_file_is_read_by_its_declared_charset(tmp_path: Path) -> None:
    from readdod.capture.importing import entries

    html = (
        '<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<META HTTP-EQUIV="Content-Type"'
        ' CONTENT="text/html; charset=ISO-8859-1">\n<DL><p>\n'
        '<DT><A HREF="https://example.org/cafe">Café crème</A>\n</DL>\n'
    )
    path = tmp_path / "bookmarks.htm"
    path.write_bytes(html.encode("latin-1"))
    fmt, found = entries(path, "auto")
    assert fmt == "netscape"
    assert [e.title for e in found if isinstance(e, Entry)] == ["Café crème"]


def test_url_list_takes_a_tab_before_the_title() -> None:
    (entry,) = READERS["urls"]("https://example.org/t\tTabbed title\n")
    assert isinstance(entry, Entry)
    assert (entry.url, entry.title) == ("https://example.org/t", "Tabbed title")


def test_json_exports_take_a_saved_time_in_either_form() -> None:
    karakeep = '{"bookmarks": [{"createdAt": "2024-04-24T23:06:40.000Z", "title": "K",'
    karakeep += ' "tags": [], "content": {"type": "link", "url": "https://example.org/k"}}]}'
    omnivore = '[{"url": "https://example.org/o", "labels": [], "savedAt": 1714000000000}]'
    (k,) = READERS["karakeep"](karakeep)
    (o,) = READERS["omnivore"](omnivore)
    assert isinstance(k, Entry) and k.saved_at == "2024-04-24T23:06:40Z"
    assert isinstance(o, Entry) and o.saved_at == "2024-04-24T23:06:40Z"
