"""The classic failure of leases across machines, with two real daemons on one
PostgreSQL database: daemon A is frozen (SIGSTOP) past its lease TTL while holding
items; daemon B takes them over and finishes them; A is thawed (SIGCONT). Not one of
A's late writes lands, and every item ends READY once."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

from tests import pg
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc

N_ITEMS = 8


def _fleet_daemon(root: Path, dsn: str) -> DaemonProc:
    root.mkdir()
    return DaemonProc(
        root,
        daemon={"concurrency": 20, "batch_size": 10, "lease_ttl_s": 1.5},
        # Slow steps: a frozen daemon is caught mid-run, with steps still to write.
        ai={"engine": "fixed", "fixed_delay_ms": 700},
        store={"backend": "postgresql", "dsn": dsn},
        **NO_AUTO_RETRY,
    )


def _snapshot(d: DaemonProc) -> list[tuple[Any, ...]]:
    items = d.query("SELECT id, status, updated_at, lease_token FROM items ORDER BY id")
    arts = d.query(
        "SELECT item_id, artifact_type, version, run_id FROM artifacts"
        " ORDER BY item_id, artifact_type, version"
    )
    events = d.query("SELECT count(*) FROM events")
    return [*items, *arts, *events]


def test_a_frozen_daemon_thawed_after_its_items_were_taken_over_writes_nothing(
    tmp_path: Path, daemons: list[DaemonProc], pg_cluster: pg.Cluster
) -> None:
    dsn = pg_cluster.new_database()
    a = _fleet_daemon(tmp_path / "a", dsn)
    b = _fleet_daemon(tmp_path / "b", dsn)
    daemons.extend([a, b])
    a.start()
    ids = [
        a.call("capture", {"text": f"Article {i}.\n\nBody of article {i}.", "intent": "x"})["item"][
            "id"
        ]
        for i in range(N_ITEMS)
    ]
    a.wait_status("PROCESSING", count=N_ITEMS)
    a.wait_log(lambda e: e["event"] == "step.finished", timeout=30)
    assert a.proc is not None
    a.proc.send_signal(signal.SIGSTOP)
    try:
        b.start()
        # B's heartbeat requeues A's expired leases, B claims them and finishes them all.
        b.wait_status("READY", count=N_ITEMS, timeout=120)
        before = _snapshot(b)
    finally:
        a.proc.send_signal(signal.SIGCONT)
    # A wakes up believing it holds its items: each of its actors learns otherwise.
    lost = a.wait_log(lambda e: e["event"] == "lease.lost", count=N_ITEMS, timeout=60)
    assert {e["item_id"] for e in lost} == set(ids)
    assert a.stop() == 0 and b.stop() == 0
    after = _snapshot(b)

    assert after == before, "a write of the frozen daemon landed after the takeover"
    statuses = dict(b.query("SELECT status, count(*) FROM items GROUP BY status"))
    assert statuses == {"READY": N_ITEMS}
    ready = Counter(
        r[0]
        for r in b.query(
            "SELECT item_id FROM events WHERE from_status = 'PROCESSING' AND to_status = 'READY'"
        )
    )
    assert ready == dict.fromkeys(ids, 1)  # READY once each
    arts = b.query("SELECT item_id, artifact_type, version, meta FROM artifacts")
    per_type = Counter((r[0], r[1]) for r in arts)
    assert set(per_type.values()) == {1}, "an artifact version was duplicated"
    runs = dict(b.query("SELECT item_id, run_id FROM runs"))
    assert all(json.loads(r[3])["run_id"] == runs[r[0]] for r in arts)
    tokens = dict(b.query("SELECT id, lease_token FROM items"))
    assert all(token >= 2 for token in tokens.values())  # claimed by A, then by B
