"""Restart after kill -9 with N items PROCESSING: time to all requeued, and to READY=1.

    python -m bench.recovery [--items 100000]

Honest orphans: a real daemon on the ``fixed`` engine with a 10-minute step
delay, concurrency and batch size as large as N, takes all N items (captured
while paused, then resumed) and is killed with SIGKILL once every one of them
is PROCESSING. Then the daemon starts again on the same database and its
log says how long recovery took (``recovery.done``: every orphan back in
QUEUED, or failed past the crash-loop limit, in one transaction) and when it
was ready (``daemon.ready``, the moment systemd gets READY=1), measured
from the moment the process was spawned. The restart runs with concurrency 1
so that claiming afterwards does not disturb the figures.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Daemon, capture_paused, parse_ts, report, short_text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--connections", type=int, default=4, help="capture sockets")
    ap.add_argument("--keep-db", type=Path, help="copy the killed daemon's database here")
    ap.add_argument("--small", action="store_true", help="1,000 orphans: that it runs (CI)")
    args = ap.parse_args()
    if args.small:
        args.items = 1000
    n = args.items

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        busy = {
            "concurrency": max(n, 1),
            "batch_size": min(n, 20),
            "lease_ttl_s": 3600,
            "shutdown_grace_s": 0,
            "skip_below": 0,
        }
        d = Daemon(root, daemon=busy, ai={"engine": "fixed", "fixed_delay_ms": 600_000})
        d.start()
        try:
            capture_s = capture_paused(d, [short_text(i) for i in range(n)])
            d.call("resume")
            t1 = time.perf_counter()
            d.wait_count("PROCESSING", n, timeout=3600, poll_s=0.2)
            claim_s = time.perf_counter() - t1
            rss_mb = d.rss_kb() / 1024
            d.kill9()
        finally:
            d.close()
        with d.db() as db:
            in_flight = db.execute(
                "SELECT count(*) FROM items WHERE status = 'PROCESSING'"
            ).fetchone()[0]
            wal_mb = (d.db_path.with_name("readdod.db-wal").stat().st_size) / 1e6
            if args.keep_db:
                with sqlite3.connect(args.keep_db) as copy:
                    db.backup(copy)

        # The restart: same database, little concurrency so the figures are recovery's own.
        d2 = Daemon(root, daemon={**busy, "concurrency": 1, "batch_size": 1})
        try:
            ready_s = d2.start(timeout=600)
            rec: dict[str, Any] = next(e for e in d2.lines() if e["event"] == "recovery.done")
            unlisted = [e for e in d2.lines() if e["event"] == "recovery.unlisted"]
            to_recovered_s = parse_ts(rec["ts"]) - d2.started_at
            assert d2.stop() == 0
        finally:
            d2.close()
        with d2.db() as db:
            orphan_events = db.execute(
                "SELECT count(*) FROM events WHERE json_extract(detail, '$.reason')"
                " = 'orphan_recovery'"
            ).fetchone()[0]

    assert rec["requeued"] + rec["failed"] == in_flight == n, (rec, in_flight)
    assert orphan_events == n, orphan_events
    report(
        "recovery_small" if args.small else "recovery",
        {
            "orphans": n,
            "setup_capture_s": round(capture_s, 1),
            "setup_claim_s": round(claim_s, 1),
            "rss_mb_with_all_in_flight": round(rss_mb, 1),
            "wal_mb_at_kill": round(wal_mb, 1),
            "requeued": rec["requeued"],
            "failed": rec["failed"],
            "recovery_ms": rec["duration_ms"],
            "spawn_to_recovered_s": round(to_recovered_s, 3),
            "spawn_to_ready_s": round(ready_s, 3),
            "per_item_log_lines_then_summary": bool(unlisted),
            "requirement": "recovery of 100,000 orphans <= 1 s",
            # Below 100,000 orphans the requirement says nothing: None, not False.
            "meets_requirement": rec["duration_ms"] <= 1000 if n >= 100_000 else None,
        },
        sane={
            "every orphan requeued or failed": rec["requeued"] + rec["failed"] == n,
            "recovery timed": rec["duration_ms"] >= 0 and to_recovered_s > 0,
        },
    )


if __name__ == "__main__":
    main()
