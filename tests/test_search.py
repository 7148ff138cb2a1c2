"""Finding things through the real daemon: filters, full-text search kept in
step with titles and extractions, cursors that survive changes, and `ls`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client, RpcError
from tests.daemon_proc import DaemonProc, run_cli


def _page(title: str, body: str) -> str:
    paras = "".join(f"<p>{body} Paragraph {n} says more about it.</p>" for n in range(3))
    return (
        f"<html><head><title>{title}</title></head><body><article>{paras}</article></body></html>"
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 0})
    yield d
    d.close()


def _ids(c: Client, **params: Any) -> list[str]:
    return [i["id"] for i in c.call("list", params)["items"]]


def test_filters_full_text_search_and_ls(daemon: DaemonProc) -> None:
    d = daemon.start()
    with d.client() as c:

        def capture(**params: Any) -> str:
            return str(c.call("capture", params)["item"]["id"])

        wal = capture(
            url="https://db.example.org/wal-notes",
            html=_page("Write-ahead logging notes", "Checkpoints copy pages back to the file."),
            intent="decide on durability settings",
            tags=["db", "sqlite"],
            priority="P0",
        )
        garden = capture(
            html=_page("Balcony garden", "Tomatoes need six hours of sunlight."),
            intent="plan the balcony",
            tags=["home"],
        )
        memory = capture(
            text="Spaced repetition beats cramming. Review at growing intervals.",
            title="Spacing effect",
            intent="study smarter for exams",
            tags=["learning", "db"],
            priority="P3",
        )
        d.wait_status("READY", count=3)

        # Each field is searched: extracted text, title (set by extraction), url, intent.
        assert _ids(c, query="checkpoints") == [wal]
        assert _ids(c, query="checkp") == [wal]  # words match as prefixes
        assert _ids(c, query="Balcony garden") == [garden]
        assert _ids(c, query="db.example.org") == [wal]
        assert _ids(c, query="exams") == [memory]
        assert _ids(c, query="sunlight tomatoes") == [garden]
        assert _ids(c, query="sunlight checkpoints") == []  # every word must match
        assert _ids(c, query="Tomátoes") == [garden]  # diacritics folded

        # An edited extraction is what gets searched from then on.
        ext = c.call("get", {"id": garden})["artifacts"]["extraction"]["payload"]
        c.call(
            "edit",
            {
                "id": garden,
                "type": "extraction",
                "payload": {**ext, "text": "Peppers like heat and little water."},
            },
        )
        assert _ids(c, query="peppers") == [garden]
        assert _ids(c, query="sunlight") == []

        # Filters, alone and together.
        assert _ids(c, tags=["db"]) == [memory, wal]
        assert _ids(c, tags=["db", "sqlite"]) == [wal]
        assert _ids(c, tags=["nope"]) == []
        # Scoring sets the priority (P1 from the fixed engine); a person's score wins.
        assert _ids(c, priority="P0") == []
        score = c.call("get", {"id": wal})["artifacts"]["score"]["payload"]
        c.call(
            "edit",
            {"id": wal, "type": "score", "payload": {**score, "priority": "P0", "match_score": 95}},
        )
        assert _ids(c, priority="P0") == [wal]
        assert _ids(c, status=["READY"], tags=["db"], query="spaced") == [memory]
        c.call("ship", {"id": memory})
        assert _ids(c, status=["READY"], tags=["db"]) == [wal]
        assert _ids(c, status=["SHIPPED", "READY"], priority="P1") == [memory, garden]

        bads: list[dict[str, Any]] = [
            {"query": "  ?! "},
            {"status": ["DONE"]},
            {"limit": 0},
            {"priority": "P7"},
        ]
        for bad in bads:
            with pytest.raises(RpcError) as exc:
                c.call("list", bad)
            assert exc.value.error_code == "VALIDATION_ERROR", bad

    table = run_cli(d, "ls", "--tag", "db")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "PRI", "SCORE", "AGE", "TITLE", "INTENT"]
    assert [r.split()[:4] for r in rows] == [
        [memory, "SHIPPED", "P1", "70"],
        [wal, "READY", "P0", "95"],
    ]
    assert "Write-ahead logging notes" in rows[1]
    found = run_cli(d, "ls", "--query", "peppers", "--json")
    assert [i["id"] for i in json.loads(found.stdout)["items"]] == [garden]
    assert run_cli(d, "ls", "--status", "shipped", "--json").returncode == 0
    assert d.stop() == 0


def test_cursor_pages_stay_stable_while_items_change(daemon: DaemonProc) -> None:
    d = daemon.start()
    with d.client() as c:
        c.call("pause")
        made = [
            c.call("capture", {"text": f"Note {n} on things.", "intent": f"intent {n}"})["item"][
                "id"
            ]
            for n in range(7)
        ]
        newest_first = list(reversed(made))
        page = c.call("list", {"limit": 3})
        assert [i["id"] for i in page["items"]] == newest_first[:3]
        cursor = page["next_cursor"]
        # Meanwhile: a new capture, an archived item on the next page, a changed priority.
        c.call("capture", {"text": "A late note.", "intent": "late"})
        c.call("archive", {"id": newest_first[3]})
        page = c.call("list", {"limit": 3, "cursor": cursor})
        assert [i["id"] for i in page["items"]] == newest_first[3:6]
        assert page["items"][0]["status"] == "ARCHIVED"
        last = c.call("list", {"limit": 3, "cursor": page["next_cursor"]})
        assert [i["id"] for i in last["items"]] == newest_first[6:]
        assert last["next_cursor"] is None
        # The CLI prints where to continue.
        more = run_cli(d, "ls", "--limit", "2")
        assert "--cursor" in more.stdout.splitlines()[-1]
    assert d.stop() == 0
