"""kill -9 with hundreds of items in flight, then restart: nothing lost, nothing paid twice."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_proc import DaemonProc

N_ITEMS = 400


@pytest.fixture
def daemon(tmp_path: Path, store_sections: dict[str, dict[str, Any]]) -> Iterator[DaemonProc]:
    d = DaemonProc(
        tmp_path,
        daemon={"concurrency": 300, "batch_size": 20},
        # Steps slow enough that the kill lands with most items in flight, however far
        # the log lines the test waits for lag behind the daemon on a busy machine.
        ai={"engine": "fixed", "fixed_delay_ms": 1000},
        **store_sections,
    )
    yield d
    d.close()


def test_kill9_with_items_in_flight_loses_nothing(daemon: DaemonProc) -> None:
    daemon.start()
    with daemon.client() as c:
        c.call("pause")  # queue everything first, so that hundreds start at once
        acknowledged = [
            c.call("capture", {"text": f"Article {i}.\n\nBody of article {i}.", "intent": "x"})[
                "item"
            ]["id"]
            for i in range(N_ITEMS)
        ]
        c.call("resume")
    daemon.wait_status("PROCESSING", count=150)
    daemon.wait_status("READY", count=20)
    daemon.kill9()

    counts = dict(daemon.query("SELECT status, count(*) FROM items GROUP BY status"))
    in_flight, ready_before = counts.get("PROCESSING", 0), counts.get("READY", 0)
    runs_before = dict(daemon.query("SELECT item_id, run_id FROM runs"))
    assert in_flight >= 100, "the test must kill the daemon with many items in flight"
    assert ready_before < N_ITEMS

    daemon.start()
    recovered = daemon.wait_log(lambda e: e["event"] == "recovery.done")[0]
    # Every lease is its dead self's: on SQLite every lease in the file, on a shared
    # PostgreSQL database those whose owner id carries this daemon's instance name.
    assert recovered["requeued"] == in_flight and recovered["failed"] == 0
    daemon.wait_status("READY", count=N_ITEMS - ready_before, timeout=180)
    # Recovery happens before the first claim.
    events = [e["event"] for e in daemon.logs]
    first_claim = next(
        i
        for i, e in enumerate(daemon.logs)
        if e["event"] == "item.transition" and e.get("to") == "PROCESSING"
    )
    assert events.index("recovery.done") < first_claim
    assert daemon.stop() == 0

    rows = daemon.query("SELECT id, status, current_run_id, lease_owner FROM items")
    assert sorted(r[0] for r in rows) == sorted(acknowledged)
    assert {r[1] for r in rows} == {"READY"}
    assert all(r[3] is None for r in rows)
    # One run per item, the interrupted ones kept their run_id.
    runs = dict(daemon.query("SELECT item_id, run_id FROM runs"))
    assert len(runs) == N_ITEMS
    assert all(runs[i] == r for i, r in runs_before.items())
    for item_id, _, run_id, _ in rows:
        arts = daemon.query(
            "SELECT artifact_type, version, run_id, meta FROM artifacts WHERE item_id = ?",
            (item_id,),
        )
        assert sorted(a[0] for a in arts) == ["card", "extraction", "score", "summary", "todos"]
        # No finished step ran twice: every artifact is version 1 of the one run.
        assert all(a[1] == 1 and a[2] == run_id == json.loads(a[3])["run_id"] for a in arts), arts
    requeues = daemon.query("SELECT detail FROM events WHERE to_status = 'QUEUED'")
    reasons = Counter(json.loads(r[0]).get("reason") for r in requeues)
    assert reasons["orphan_recovery"] == in_flight


def test_a_page_that_kills_the_daemon_cannot_crash_loop_it(tmp_path: Path) -> None:
    """Each start resumes the item and dies in its summary step; the 4th start fails it."""
    d = DaemonProc(tmp_path, daemon={"max_orphanings": 3})
    crash = {"READDOD_CRASH_AT": "step:summary"}
    try:
        d.start(env=crash)
        item_id = d.call("capture", {"text": "A page.\n\nThat kills.", "intent": "x"})["item"]["id"]
        for start in range(1, 4):
            assert d.proc is not None
            assert d.proc.wait(timeout=60) == 86, f"start {start} should have crashed"
            d.close()
            d.start(env=crash)
        rec = d.wait_log(lambda e: e["event"] == "recovery.done")[0]
        assert (rec["requeued"], rec["failed"]) == (0, 1)
        got = d.call("get", {"id": item_id, "history": True})
        item = got["item"]
        assert item["status"] == "FAILED_AI"
        assert item["failure"]["error_code"] == "WORKER_LOST"
        assert item["failure"]["failed_step"] == "summarize"
        # A person may retry it; by itself it goes again only once this daemon has run
        # cleanly for [retry] worker_lost (600 s by default), or the crash would loop.
        assert item["failure"]["retryable"] is True
        assert item["failure"]["next_attempt_at"] >= rec["ts"][:19]
        assert d.query("SELECT next_attempt_at - updated_at FROM items")[0][0] >= 600_000
        assert "3 times" in item["failure"]["message"]
        # The extraction finished once and was never redone.
        assert got["artifacts"]["extraction"]["version"] == 1
        assert len(got["runs"]) == 1 and got["runs"][0]["attempts"] == 3
        # The daemon is alive and serves other work.
        assert d.proc is not None and d.call("ping")["pid"] == d.proc.pid
        assert d.stop() == 0
    finally:
        d.close()
