"""What a backlog brings home, through ``readdod import`` and the real daemon: read state
(archived items stay archived and are not fetched), stars to filter on, folders as tags,
repeated links merged and counted, an intent set again on items not yet processed, and a
service's placeholder taken for no content."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.cli.exits import EXIT_OK
from tests.daemon_proc import DaemonProc, run_cli
from tests.pageserver import ARTICLE, PageServer, fast_fetch, serve

FILES = Path(__file__).parent / "imports"


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with serve() as srv:
        yield srv


def _daemon(made: list[DaemonProc], root: Path, *, auto: bool) -> DaemonProc:
    d = DaemonProc(root, daemon={"auto_process": auto}, fetch=fast_fetch())
    made.append(d)
    return d.start()


def _import(d: DaemonProc, path: Path, *args: str) -> dict[str, Any]:
    out = run_cli(d, "import", str(path), "--json", "--config", str(d.config), *args)
    assert out.returncode in (0, 1), out.stderr
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def _items(d: DaemonProc) -> dict[str, dict[str, Any]]:
    return {i["url"]: i for i in d.call("list", {"limit": 1000})["items"]}


def _pocket(path: Path, srv: PageServer, rows: list[tuple[str, str]]) -> Path:
    lines = ["title,url,time_added,tags,status"]
    for name, status in rows:
        srv.page(f"/{name}", ARTICLE)
        lines.append(f"{name},{srv.url('/' + name)},1600000000,,{status}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_archived_entries_come_in_archived_and_are_not_fetched(
    tmp_path: Path, daemons: list[DaemonProc], pages: PageServer
) -> None:
    d = _daemon(daemons, tmp_path, auto=True)
    export = _pocket(tmp_path / "pocket.csv", pages, [("fresh", "unread"), ("done", "archive")])
    tally = _import(d, export, "--intent", "learn the write path")
    assert (tally["new"], tally["archived"]) == (2, 1)
    d.wait_status("READY", 1)
    items = _items(d)
    done = items[pages.url("/done")]
    assert done["status"] == "ARCHIVED" and done["archive_reason"] == "USER_ARCHIVE"
    assert pages.hits("/done") == 0 and pages.hits("/fresh") >= 1
    history = d.call("get", {"id": done["id"], "history": True})["events"]
    moves = [(e.get("from_status"), e.get("to_status")) for e in history if e["kind"] != "capture"]
    assert ("CAPTURED", "ARCHIVED") in moves
    capture = next(e for e in history if e["kind"] == "capture")
    assert capture["detail"]["origin"]["saved_at"] == "2020-09-13T12:26:40Z"
    # The summary a person reads says how many came in archived.
    again = run_cli(
        d, "import", str(export), "-i", "learn the write path", "--config", str(d.config)
    )
    assert again.returncode == EXIT_OK, again.stderr


def test_process_archived_fetches_them_too(
    tmp_path: Path, daemons: list[DaemonProc], pages: PageServer
) -> None:
    d = _daemon(daemons, tmp_path, auto=True)
    export = _pocket(tmp_path / "pocket.csv", pages, [("old", "archive")])
    tally = _import(d, export, "--intent", "revisit", "--process-archived")
    assert (tally["new"], tally["archived"]) == (1, 0)
    d.wait_status("READY", 1)
    assert pages.hits("/old") >= 1


def test_starred_entries_are_found_by_ls_and_counted(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, auto=False)
    out = run_cli(d, "import", str(FILES / "wallabag.json"), "--config", str(d.config))
    assert "1 starred (ls --tag starred)" in out.stdout, out.stdout
    listed = run_cli(d, "ls", "--tag", "starred", "--json", "--config", str(d.config))
    (item,) = json.loads(listed.stdout)["items"]
    assert item["title"] == "Async Rust in depth"


def test_folders_become_tags_and_repeats_are_merged_and_counted(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, auto=False)
    tally = _import(d, FILES / "firefox-bookmarks.html", "-i", "cook and code")
    # Six anchors: every one is in a count (four new, two repeats merged into their first).
    assert tally["total"] == 6
    assert (tally["new"], tally["duplicates"], tally["refused"]) == (4, 2, [])
    items = _items(d)
    assert items["https://example.org/sourdough"]["tags"] == ["Cooking/Bread", "baking", "bread"]
    assert items["https://example.org/knife-skills"]["tags"] == ["Cooking"]
    text = run_cli(d, "import", str(FILES / "firefox-bookmarks.html"), "-i", "cook and code")
    assert "6 entries" in text.stdout and "2 repeats of a link" in text.stdout, text.stdout


def test_a_later_intent_is_set_on_items_not_yet_processed(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, auto=False)
    first = _import(d, FILES / "pocket.csv", "--intent", "skim later")
    assert first["new"] == 3
    # The archived one (not processed either) takes it too.
    second = _import(d, FILES / "pocket.csv", "--intent", "learn to read papers")
    assert (second["new"], second["already"], second["intent_set"]) == (0, 3, 3)
    assert {i["intent"] for i in _items(d).values()} == {"learn to read papers"}
    text = run_cli(d, "import", str(FILES / "pocket.csv"), "-i", "third reason")
    assert "intent set on 3 items not yet processed" in text.stdout, text.stdout


def test_a_placeholder_page_is_no_content_and_the_link_is_fetched(
    tmp_path: Path, daemons: list[DaemonProc], pages: PageServer
) -> None:
    d = _daemon(daemons, tmp_path, auto=True)
    pages.page("/lost", ARTICLE)
    export = tmp_path / "wallabag.json"
    export.write_text(
        json.dumps(
            [
                {
                    "is_archived": 0,
                    "is_starred": 0,
                    "title": "No title found",
                    "url": pages.url("/lost"),
                    "content": "<p>Oh, what a shame, no content.</p>",
                    "created_at": "2021-06-01T09:00:00+0200",
                    "tags": [],
                }
            ]
        )
    )
    assert _import(d, export, "-i", "learn")["new"] == 1
    d.wait_status("READY", 1)
    (item,) = _items(d).values()
    assert item["source_type"] == "url" and pages.hits("/lost") >= 1
    assert item["title"] != "No title found"
