"""Items/s through the whole pipeline, every step durable, beside a raw-sqlite3 floor.

    python -m bench.throughput [--items 10000] [--concurrency 256] [--batch-size 20]
                               [--connections 4] [--floor-items 3000] [--runs 3]
    python -m bench.throughput --backend postgresql --daemons 1 2 3  (see bench/fleet.py)

A real daemon (subprocess, Unix socket, SQLite WAL with synchronous=FULL) and
the ``fixed`` engine with no delay, so what is measured is readdod itself.

1. Capture: N text items over ``--connections`` sockets with the daemon
   paused (each answer comes once its capture is durable): captures/s.
2. Process: resume, and time until every item is READY (extraction →
   summary → score → todos → card → gate, each step's artifact committed
   before the next step starts): processing items/s, the headline. The
   daemon's own store counters (``stats``) give SQL statements and
   transactions per item. Steps 1-2 run ``--runs`` times, each on a fresh
   daemon and database; the figures are those of the median run, and every
   run's items/s is listed.
3. Floor: plain sqlite3 (WAL, synchronous=FULL, the daemon's own schema and
   triggers) writing the same rows a processed item gets in the daemon's
   database of the median run (the claim, per step the item, the artifact
   and run updates and the step event, then READY), read back from that
   database: once with one
   transaction per item (the baseline: ratio = ours / this) and once with
   one transaction per step (what "every step durable" costs done naively).
   The floors replay the first ``--floor-items`` items: they measure a rate.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from bench._common import (
    Daemon,
    article,
    capture_paused,
    item_writes,
    report,
    store_counters,
)


def _schema(conn: sqlite3.Connection) -> None:
    folder = resources.files("readdod.store.sqlite") / "migrations"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            conn.executescript(entry.read_text("utf-8"))


class _Replay:
    """What the daemon wrote for each item, read back from its database."""

    def __init__(self, db: sqlite3.Connection) -> None:
        db.row_factory = sqlite3.Row
        self.items = [dict(r) for r in db.execute("SELECT * FROM items ORDER BY id")]
        # By name: the table gains columns (the PDF document) as the schema moves on.
        self.sources = {r["item_id"]: dict(r) for r in db.execute("SELECT * FROM item_sources")}
        self.runs = {r["item_id"]: dict(r) for r in db.execute("SELECT * FROM runs")}
        self.artifacts: dict[str, dict[str, dict[str, Any]]] = {}
        for r in db.execute("SELECT * FROM artifacts"):
            self.artifacts.setdefault(r["item_id"], {})[r["artifact_type"]] = dict(r)
        self.events: dict[str, list[dict[str, Any]]] = {}
        for r in db.execute("SELECT * FROM events WHERE item_id IS NOT NULL ORDER BY seq"):
            self.events.setdefault(r["item_id"], []).append(dict(r))


def _seed(conn: sqlite3.Connection, rp: _Replay) -> None:
    """The captured state (not timed): QUEUED items, their sources and queued runs."""
    conn.execute("BEGIN")
    for it in rp.items:
        row = {
            **it,
            "status": "QUEUED",
            "title": None,
            "priority": "P2",
            "match_score": None,
            "lease_owner": None,
            "lease_expires_at": None,
        }
        cols = ", ".join(row)
        conn.execute(
            f"INSERT INTO items ({cols}) VALUES ({', '.join('?' * len(row))})", list(row.values())
        )
        source = rp.sources[it["id"]]
        marks = ", ".join("?" * len(source))
        conn.execute(
            f"INSERT INTO item_sources ({', '.join(source)}) VALUES ({marks})",
            list(source.values()),
        )
        run = {
            **rp.runs[it["id"]],
            "status": "queued",
            "current_step": "extraction",
            "attempts": 0,
            "worker_id": None,
            "started_at": None,
            "finished_at": None,
        }
        conn.execute(
            f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join('?' * len(run))})",
            list(run.values()),
        )
    conn.execute("COMMIT")


def floor(rp: _Replay, path: Path, *, per_step: bool) -> tuple[float, int]:
    """Items/s of plain sqlite3 writing the daemon's rows; and statements per item."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    _schema(conn)
    _seed(conn, rp)
    work = [item_writes(rp, it) for it in rp.items]
    start = time.perf_counter()
    for groups in work:
        if not per_step:
            conn.execute("BEGIN IMMEDIATE")
        for group in groups:
            if per_step:
                conn.execute("BEGIN IMMEDIATE")
            for sql, args in group:
                conn.execute(sql, args)
            if per_step:
                conn.execute("COMMIT")
        if not per_step:
            conn.execute("COMMIT")
    took = time.perf_counter() - start
    ready = conn.execute("SELECT count(*) FROM items WHERE status = 'READY'").fetchone()[0]
    assert ready == len(rp.items), (ready, len(rp.items))
    conn.close()
    return len(rp.items) / took, sum(len(g) for g in work[0])


def _daemon_run(
    args: argparse.Namespace, root: Path
) -> tuple[float, float, dict[str, int] | None, dict[str, int], _Replay]:
    """One fresh daemon: capture paused, then process; (capture s, process s, store delta,
    statuses, what it wrote)."""
    n = args.items
    d = Daemon(
        root,
        daemon={
            "concurrency": args.concurrency,
            "batch_size": args.batch_size,
            "synchronous": "FULL",
            "skip_below": 0,
        },
        ai={"engine": "fixed"},
    )
    d.start()
    try:
        texts = [article(i) for i in range(n)]
        capture_s = capture_paused(d, texts, connections=args.connections)
        before = store_counters(d)
        t1 = time.perf_counter()
        d.call("resume")
        done = d.wait_count("READY", n)
        after = store_counters(d)
        assert d.stop() == 0
    finally:
        d.close()
    with d.db() as db:
        statuses = dict(db.execute("SELECT status, count(*) FROM items GROUP BY status"))
        rp = _Replay(db)
    delta = None
    if before is not None and after is not None:
        delta = {k: after[k] - before[k] for k in after if isinstance(after[k], int)}
    return capture_s, done - t1, delta, statuses, rp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=256, help="daemon.concurrency")
    ap.add_argument("--batch-size", type=int, default=20, help="daemon.batch_size (20 at most)")
    ap.add_argument("--connections", type=int, default=4, help="capture sockets")
    ap.add_argument(
        "--floor-items",
        type=int,
        default=3000,
        help="items the floors replay (a rate: a sample does)",
    )
    ap.add_argument(
        "--runs",
        type=int,
        default=3,
        help="fresh daemons to time; the figures are the median run's (a shared VM's"
        " speed wanders by a tenth from run to run)",
    )
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument(
        "--daemons", type=int, nargs="+", default=[1], help="postgresql: daemons per fleet"
    )
    ap.add_argument("--dsn", help="postgresql: a server of your own (default: a throwaway one)")
    ap.add_argument(
        "--small",
        action="store_true",
        help="SQLite, 300 items, one run, a floor of 100: that it runs (CI)",
    )
    args = ap.parse_args()
    if args.small:
        args.items, args.floor_items, args.runs, args.concurrency = 300, 100, 1, 64
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.backend == "postgresql":
        from bench import fleet

        fleet.throughput(args)
        return
    n = args.items

    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for i in range(args.runs):
            root = Path(tmp) / f"run{i}"
            root.mkdir()
            runs.append(_daemon_run(args, root))
        by_rate = sorted(runs, key=lambda r: r[1])
        capture_s, process_s, delta, statuses, rp = by_rate[len(by_rate) // 2]
        rp.items = rp.items[: args.floor_items]
        floor_item, floor_statements = floor(rp, Path(tmp) / "floor-item.db", per_step=False)
        floor_step, _ = floor(rp, Path(tmp) / "floor-step.db", per_step=True)

    items_per_s = n / process_s
    figures: dict[str, Any] = {
        "items": n,
        "engine": "fixed (no delay)",
        "synchronous": "FULL",
        "concurrency": args.concurrency,
        "batch_size": args.batch_size,
        "capture_connections": args.connections,
        "runs": args.runs,
        "items_per_s": round(items_per_s, 1),
        "items_per_s_each_run": [round(n / r[1], 1) for r in runs],
        "captures_per_s": round(n / capture_s, 1),
        "end_to_end_items_per_s": round(n / (capture_s + process_s), 1),
        "process_s": round(process_s, 3),
    }
    if delta is not None:
        figures["statements_per_item"] = round(delta.get("statements", 0) / n, 2)
        figures["transactions_per_item"] = round(delta.get("transactions", 0) / n, 3)
        figures["units_per_item"] = round(delta.get("units", 0) / n, 2)
        figures["store_delta"] = delta
    else:
        figures["statements_per_item"] = None
        figures["transactions_per_item"] = None
    figures |= {
        "floor_tx_per_item_items_per_s": round(floor_item, 1),
        "floor_tx_per_step_items_per_s": round(floor_step, 1),
        "floor_statements_per_item": floor_statements,
        "floor_items": len(rp.items),
        "ratio_to_floor": round(items_per_s / floor_item, 3),
        "ratio_to_per_step_floor": round(items_per_s / floor_step, 3),
        "requirement": ">= 1500 items/s and >= 0.25 of the floor (goal 5000 items/s)",
        "meets_requirement": items_per_s >= 1500 and items_per_s / floor_item >= 0.25,
        "statuses": statuses,
    }
    report(
        "throughput_small" if args.small else "throughput",
        figures,
        sane={
            "every item READY": statuses == {"READY": n},
            "items/s above zero": items_per_s > 0,
            "the floors above zero": floor_item > 0 and floor_step > 0,
            "statements per item above zero": (figures["statements_per_item"] or 1) > 0,
        },
    )


if __name__ == "__main__":
    main()
