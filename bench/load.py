"""Captures under load, and a long protocol fuzz run, against a real daemon.

    python -m bench.load [--items 100000] [--clients 8] [--concurrency 8]
    python -m bench.load --fuzz 2000

Load: several clients, each on its own connection, capture text items one
request at a time (each with its own ``capture_id``) while the daemon
processes them with the ``fixed`` engine. Every acknowledged capture is then
looked for in the database after a ``kill -9``: acknowledged means durable.
Reports captures/s, capture latency (p50/p99/max) and how far processing got
meanwhile. ``tests/test_load.py`` runs the same driver on a few thousand items.

Fuzz: runs ``tests/test_protocol_fuzz.py`` with N examples per hypothesis test
and prints the case counts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgspec

from bench._common import report
from readdod.control.client import Client
from readdod.errors import ReaddodError
from tests.daemon_proc import DaemonProc


class ClientRun(msgspec.Struct):
    """What one client saw: the item id acknowledged for each capture_id, and latencies."""

    acked: dict[str, str] = {}
    latencies_s: list[float] = []
    errors: list[str] = []


class LoadResult(msgspec.Struct):
    items: int
    clients: int
    acked: dict[str, str]
    errors: list[str]
    capture_s: float
    latencies_s: list[float]
    #: Items past QUEUED (being processed or done) when the last capture was acknowledged.
    processed_during_capture: int
    ready_during_capture: int

    def figures(self) -> dict[str, float | int]:
        lat = sorted(self.latencies_s)

        def pct(q: float) -> float:
            return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 2) if lat else 0.0

        return {
            "items": self.items,
            "clients": self.clients,
            "acknowledged": len(self.acked),
            "errors": len(self.errors),
            "capture_s": round(self.capture_s, 3),
            "captures_per_s": round(len(self.acked) / self.capture_s, 1),
            "latency_p50_ms": pct(0.50),
            "latency_p99_ms": pct(0.99),
            "latency_max_ms": round(lat[-1] * 1000, 2) if lat else 0.0,
            "processed_during_capture": self.processed_during_capture,
            "ready_during_capture": self.ready_during_capture,
        }


def text_for(i: int) -> str:
    """A small, distinct plain-text page (the pipeline needs some sentences)."""
    return (
        f"Note {i} on queues. Durable writes survive a crash when they are acknowledged."
        f" Group commits keep capture {i} fast. Readers want a summary and todos."
    )


def _client(sock: Path, name: str, n: int, out: ClientRun) -> None:
    with Client(sock) as c:
        for i in range(n):
            capture_id = f"{name}-{i}"
            started = time.perf_counter()
            try:
                got = c.call(
                    "capture",
                    {"text": text_for(i), "intent": f"learn {name}", "capture_id": capture_id},
                )
            except ReaddodError as exc:
                out.errors.append(f"{capture_id}: {exc}")
                continue
            out.latencies_s.append(time.perf_counter() - started)
            out.acked[capture_id] = got["item"]["id"]


def run_load(d: DaemonProc, items: int, clients: int) -> LoadResult:
    """Capture ``items`` through ``clients`` concurrent connections of the running daemon."""
    runs = [ClientRun() for _ in range(clients)]
    shares = [items // clients + (1 if k < items % clients else 0) for k in range(clients)]
    threads = [
        threading.Thread(target=_client, args=(d.sock, f"c{k}", shares[k], runs[k]))
        for k in range(clients)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - started
    by_status = d.call("stats")["items_by_status"]
    acked: dict[str, str] = {}
    for run in runs:
        acked.update(run.acked)
    return LoadResult(
        items=items,
        clients=clients,
        acked=acked,
        errors=[e for run in runs for e in run.errors],
        capture_s=took,
        latencies_s=[x for run in runs for x in run.latencies_s],
        processed_during_capture=sum(
            n for status, n in by_status.items() if status not in ("CAPTURED", "QUEUED")
        ),
        ready_during_capture=by_status.get("READY", 0),
    )


def stored_captures(d: DaemonProc) -> dict[str, str]:
    """capture_id → item id, as the database holds them."""
    with d.db() as db:
        return dict(db.execute("SELECT capture_id, id FROM items WHERE capture_id IS NOT NULL"))


def _wait_serving(d: DaemonProc, timeout: float = 60) -> None:
    """The daemon answers a ping (the quiet bench daemon logs no daemon.ready)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            d.call("ping")
            return
        except ReaddodError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def load(items: int, clients: int, concurrency: int, name: str = "load") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # Warnings only: a million info lines would cost this process more than the daemon.
        d = DaemonProc(
            Path(tmp),
            ai={"engine": "fixed"},
            daemon={"concurrency": concurrency, "skip_below": 0},
            log={"level": "warning"},
        )
        d.start(wait=False)
        try:
            _wait_serving(d)
            result = run_load(d, items, clients)
            d.kill9()  # acknowledged means durable: nothing may depend on a clean stop
            stored = stored_captures(d)
        finally:
            d.close()
    lost = {k: v for k, v in result.acked.items() if stored.get(k) != v}
    figures = result.figures()
    figures["lost_after_kill9"] = len(lost)
    figures["stored"] = len(stored)
    if lost or result.errors:
        print(f"LOST {len(lost)}: {list(lost)[:5]}; errors: {result.errors[:5]}")
    report(
        name,
        figures,
        sane={
            "every capture acknowledged": len(result.acked) == items,
            "nothing lost after kill -9": not lost,
            "no errors": not result.errors,
            "captures/s above zero": figures["captures_per_s"] > 0,
        },
    )


def fuzz(examples: int) -> None:
    root = Path(__file__).parent.parent
    env = {**os.environ, "READDOD_FUZZ_EXAMPLES": str(examples)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-s", "tests/test_protocol_fuzz.py"]
    sys.exit(subprocess.run(cmd, cwd=root, env=env).returncode)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--fuzz", type=int, metavar="N", help="run the protocol fuzz, N examples")
    ap.add_argument(
        "--small", action="store_true", help="2,000 captures from 4 clients: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.fuzz:
        fuzz(args.fuzz)
    elif args.small:
        load(2000, 4, args.concurrency, "load_small")
    else:
        load(args.items, args.clients, args.concurrency)


if __name__ == "__main__":
    main()
