"""Chunks of long texts and pauses, through the real daemon and a fake model server.

A chunk is ``pending``, ``processing``, ``retrying`` (waiting inside an
attempt before the next one), ``done`` or ``error``. Whatever stops a run
(pause, ``archive --cancel``, a stop, recovery after a crash) puts its chunks
in flight back to ``pending`` in the transaction that moves the item; each
chunk records the model of its latest attempt; people see ``processing`` and
``retrying`` as one "active" figure. A pause stops spending at once: the
model requests in flight are cancelled, and the runs resume later where they
stopped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import RpcError
from readdod.engines import openai as oa
from tests import invariants
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config

CONTEXT_TOKENS = 1024
TERMINAL = ("READY", "FAILED_AI", "FAILED_EXTRACTION")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    # A hung request outlasts any test: only a cancel or a disconnect ends it.
    with FakeOpenAI(hang_s=120) as server:
        yield server


def long_text(marks: dict[int, str], paragraphs: int = 6) -> str:
    """``paragraphs`` paragraphs, paragraph n carrying ``marks[n]``; one chunk each."""
    out = []
    for n in range(paragraphs):
        body = " ".join(
            f"Paragraph {n} explains step {k} of tuning SQLite write-ahead logging in detail."
            for k in range(8)
        )
        out.append(f"{body} {marks[n]}" if n in marks else body)
    text = "\n\n".join(out)
    chunks = oa.split_paragraphs(text, max(CONTEXT_TOKENS - oa.RESERVED_TOKENS, 256))
    assert len(chunks) == paragraphs, "the test expects one chunk per paragraph"
    return text


def daemon(made: list[DaemonProc], root: Path, fake: FakeOpenAI, **ai: Any) -> DaemonProc:
    sections: dict[str, dict[str, Any]] = {
        "ai": ai_config(fake.base_url, context_tokens=CONTEXT_TOKENS, **ai),
        "daemon": {"skip_below": 0, "shutdown_grace_s": 0.2},
        **NO_AUTO_RETRY,
    }
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def capture(d: DaemonProc, intent: str, text: str) -> str:
    return str(d.call("capture", {"text": text, "intent": intent})["item"]["id"])


def wait_for(d: DaemonProc, item_id: str, statuses: tuple[str, ...], count: int = 1) -> None:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in statuses
        ),
        count=count,
    )


def chunk_list(d: DaemonProc, item_id: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = d.call("get", {"id": item_id, "include": ["chunks"]})["chunk_list"]
    return rows


def chunk_states(d: DaemonProc, item_id: str, idx: int) -> list[str]:
    return [
        e["state"]
        for e in d.logs
        if e["event"] == "chunk.progress" and e["item_id"] == item_id and e["chunk"] == idx
    ]


def chunk_requests(fake: FakeOpenAI, needle: str = "") -> int:
    return sum(
        r["body"]["response_format"]["json_schema"]["name"] == "summary_chunk"
        and needle in r["body"]["messages"][-1]["content"]
        for r in fake.steps()
    )


def in_flight_chunks(d: DaemonProc) -> list[tuple[str, int, str]]:
    with closing(sqlite3.connect(f"file:{d.db_path}?mode=ro", uri=True)) as db:
        return [
            (r[0], int(r[1]), r[2])
            for r in db.execute(
                "SELECT run_id, idx, status FROM chunks WHERE status IN ('processing', 'retrying')"
            )
        ]


def test_a_retried_chunk_is_processing_again_and_each_chunk_keeps_its_latest_model(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = daemon(daemons, tmp_path, fake).start()
    text = long_text({1: "fake:500x1@summary_chunk#one", 3: "fake:500x3@summary_chunk#three"})
    item = capture(d, "tune WAL mode", text)
    wait_for(d, item, TERMINAL)
    # Retrying is a wait inside the attempt: the next attempt is processing again.
    assert chunk_states(d, item, 1) == ["processing", "retrying", "processing", "done"]
    assert chunk_states(d, item, 3) == [
        "processing",
        "retrying",
        "processing",
        "retrying",
        "processing",
        "error",
    ]
    got = d.call("get", {"id": item, "include": ["chunks"]})
    assert got["item"]["status"] == "FAILED_AI"
    assert got["chunks"]["summary"] == {
        "done": 3,
        "total": 6,
        "active": 0,
        "retrying": 0,
        "error": 1,
        "retries": 3,
    }
    rows = got["chunk_list"]
    assert [(c["idx"], c["status"], c["retries"]) for c in rows] == [
        (0, "done", 0),
        (1, "done", 1),
        (2, "done", 0),
        (3, "error", 2),
        (4, "pending", 0),
        (5, "pending", 0),
    ]
    assert rows[1]["last_error_code"] == rows[3]["last_error_code"] == "AI_PROVIDER_ERROR"
    assert "HTTP 500" in rows[3]["last_error_message"]
    assert {c["model"] for c in rows} == {"fake-small"}
    assert d.stop() == 0

    # The same data with another model: the chunks asked again record it, done ones keep theirs.
    d = daemon(daemons, tmp_path, fake, model="fake-large").start()
    d.call("process", {"id": item})
    wait_for(d, item, TERMINAL)
    rows = chunk_list(d, item)
    assert [c["status"] for c in rows] == ["done"] * 6
    assert [c["model"] for c in rows] == ["fake-small"] * 3 + ["fake-large"] * 3
    assert rows[1]["retries"] == 1 and rows[1]["last_error_code"] == "AI_PROVIDER_ERROR"

    shown = run_cli(d, "show", item, "--chunks")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "Chunks (summary): 6/6 done, 3 retries" in out, out
    lines = [line.split() for line in out.splitlines()]
    assert ["step", "chunk", "status", "retries", "model", "last", "error"] in lines, out
    assert ["summary", "0", "done", "0", "fake-small"] in lines, out
    assert ["summary", "5", "done", "0", "fake-large"] in lines, out
    retried = next(line for line in lines if line[:2] == ["summary", "3"])
    assert retried[:6] == ["summary", "3", "done", "2", "fake-large", "AI_PROVIDER_ERROR:"], out
    assert d.stop() == 0
    assert invariants.check(d.db_path, acknowledged=[item]) == []


def test_get_refuses_an_unknown_include(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = daemon(daemons, tmp_path, fake).start()
    item = capture(d, "tune WAL mode", "A short text about WAL mode in SQLite databases.")
    with pytest.raises(RpcError) as refused:
        d.call("get", {"id": item, "include": ["chunks", "everything"]})
    assert refused.value.error_code == "VALIDATION_ERROR"
    assert "'everything'" in str(refused.value) and "chunks" in str(refused.value)
    wait_for(d, item, (*TERMINAL, "ARCHIVED"))
    assert chunk_list(d, item) == []  # short enough to be read in one piece
    assert d.stop() == 0


def test_pause_cancels_the_model_requests_in_flight_and_resume_finishes_the_runs(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = daemon(daemons, tmp_path, fake, timeout_s=60.0).start()
    fake.fault("holdthischunk", "hang", step="summary_chunk")
    fake.fault("holdthissummary", "hang", step="summary")
    long_item = capture(d, "tune WAL mode", long_text({2: "holdthischunk"}))
    short_item = capture(
        d, "learn WAL holdthissummary", "SQLite in WAL mode lets readers and a writer work."
    )
    # Both wait for an answer that does not come: chunk 2 of one, the summary of the other.
    fake.wait_until(lambda f: f.in_flight == 2 and chunk_requests(f) == 3)
    got = d.call("get", {"id": long_item})
    assert got["chunks"]["summary"]["done"] == 2 and got["chunks"]["summary"]["active"] == 1
    shown = run_cli(d, "show", long_item)
    assert "Chunks (summary): 2/6 done, 1 active" in shown.stdout, shown.stdout
    # `watch` gets the same figure with each chunk's progress.
    started = d.wait_log(
        lambda e: (
            e["event"] == "chunk.progress"
            and e["item_id"] == long_item
            and e["chunk"] == 2
            and e["state"] == "processing"
        )
    )[0]
    assert (started["done"], started["active"], started["total"]) == (2, 1, 6)

    sent = len(fake.steps())
    assert d.call("pause") == {"paused": True}
    # Answered once the items are back in QUEUED, their finished work kept.
    for item in (long_item, short_item):
        assert d.call("get", {"id": item})["item"]["status"] == "QUEUED"
    assert [c["status"] for c in chunk_list(d, long_item)] == ["done"] * 2 + ["pending"] * 4
    assert set(d.call("get", {"id": short_item})["artifacts"]) == {"extraction"}
    assert in_flight_chunks(d) == []
    # The requests in flight were cancelled (the server saw the client hang up), no more came.
    fake.wait_until(lambda f: f.disconnects == 2, timeout=10)
    assert len(fake.steps()) == sent
    moves = [
        e
        for e in d.logs
        if e["event"] == "item.transition" and e["from"] == "PROCESSING" and e["to"] == "QUEUED"
    ]
    assert sorted(e["item_id"] for e in moves) == sorted([long_item, short_item])
    assert {e["reason"] for e in moves} == {"pause"}

    fake.fault("holdthischunk", None)
    fake.fault("holdthissummary", None)
    chunks_before = chunk_requests(fake)
    assert d.call("resume") == {"paused": False}
    for item in (long_item, short_item):
        wait_for(d, item, TERMINAL)
        got = d.call("get", {"id": item})
        assert got["item"]["status"] == "READY", got["item"]["failure"]
        assert len(got["runs"]) == 1
    # Only the chunks not done were asked again; the extraction was not redone.
    assert chunk_requests(fake) - chunks_before == 4
    extractions = d.call("get", {"id": short_item, "versions": True})["versions"]
    assert [v["version"] for v in extractions if v["artifact_type"] == "extraction"] == [1]
    assert d.stop() == 0
    assert invariants.check(d.db_path, acknowledged=[long_item, short_item]) == []


def test_archive_cancel_a_stop_and_crash_recovery_leave_no_chunk_in_flight(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    fake.fault("holdthischunk", "hang", step="summary_chunk")
    d = daemon(daemons, tmp_path, fake, timeout_s=60.0).start()
    cancelled = capture(d, "tune WAL mode", long_text({1: "holdthischunk"}))
    fake.wait_until(lambda f: chunk_requests(f, "holdthischunk") == 1)
    d.call("archive", {"id": cancelled, "cancel": True})
    assert [c["status"] for c in chunk_list(d, cancelled)] == ["done"] + ["pending"] * 5
    assert in_flight_chunks(d) == []
    fake.wait_until(lambda f: f.disconnects == 1, timeout=10)

    # A stop: the drain's grace runs out, the run goes back to QUEUED, so do its chunks.
    stopped = capture(d, "tune WAL mode again", long_text({2: "holdthischunk"}))
    fake.wait_until(lambda f: chunk_requests(f, "holdthischunk") == 2)
    assert d.stop() == 0
    fake.wait_until(lambda f: f.disconnects == 2, timeout=10)
    assert in_flight_chunks(d) == []
    assert invariants.check(d.db_path, acknowledged=[cancelled, stopped]) == []

    # A crash: the chunk is left processing; recovery (here failing the item, its
    # crash-loop limit being 1) puts it back to pending as it moves the item.
    d = DaemonProc(
        tmp_path,
        ai=ai_config(fake.base_url, context_tokens=CONTEXT_TOKENS, timeout_s=60.0),
        daemon={"skip_below": 0, "max_orphanings": 1},
        **NO_AUTO_RETRY,
    )
    daemons.append(d)
    d.start()
    fake.wait_until(lambda f: chunk_requests(f, "holdthischunk") == 3)
    d.kill9()
    assert [(idx, status) for _, idx, status in in_flight_chunks(d)] == [(2, "processing")]
    assert invariants.check(d.db_path, crashed=True) == []
    d.start()
    wait_for(d, stopped, ("FAILED_AI",))
    assert d.call("get", {"id": stopped})["item"]["failure"]["error_code"] == "WORKER_LOST"
    assert [c["status"] for c in chunk_list(d, stopped)] == ["done"] * 2 + ["pending"] * 4
    assert d.stop() == 0
    assert in_flight_chunks(d) == []
    assert invariants.check(d.db_path, acknowledged=[cancelled, stopped]) == []
