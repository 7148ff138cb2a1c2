"""Pickup latency (capture acknowledged → first step started) and capture round trips.

    python -m bench.latency [--probes 200] [--load 5000] [--concurrency 64]

A real daemon with the ``fixed`` engine (no delay). Pickup latency is the
wall time from the moment the client has read a capture's answer to the
``ts`` of that item's ``step.started`` log line (microseconds, the same
machine's clock); capture round trip is send → answer on one connection.
A negative pickup means the first step started before the answer reached
the client (a capture that finds a free worker takes its lease in its own
transaction); send → first step started is printed too.

- idle: one probe at a time on an otherwise idle daemon, each finished
  (READY) before the next is captured.
- under load: ``--load`` items are captured while paused and released; while
  they are processing, probes are captured one at a time with priority P0
  (so they go to the head of the queue: what is measured is how soon a
  worker takes new work, not how long a FIFO backlog takes to drain).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import (
    Daemon,
    LogTail,
    article,
    capture_all,
    parse_ts,
    percentiles,
    report,
)
from readdod.control.client import Client


def _probe(
    c: Client, tail: LogTail, i: int, priority: str | None
) -> tuple[float, float, float, str]:
    """(pickup ms, send → first step ms, capture round trip ms, item id)."""
    params: dict[str, Any] = {"text": article(i, paragraphs=2), "intent": f"probe {i}"}
    if priority:
        params["priority"] = priority
    sent = time.time()
    t0 = time.perf_counter()
    item = c.call("capture", params)["item"]
    rtt_ms = (time.perf_counter() - t0) * 1000
    acked = sent + rtt_ms / 1000
    started = tail.wait('"step.started"', item["id"], timeout=120)
    at = parse_ts(started["ts"])
    return (at - acked) * 1000, (at - sent) * 1000, rtt_ms, item["id"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--load", type=int, default=5000, help="items processing under load")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument(
        "--small", action="store_true", help="20 probes, 1,000 items of load: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.probes, args.load = 20, 1000

    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(
            Path(tmp),
            daemon={"concurrency": args.concurrency, "batch_size": 20, "skip_below": 0},
            ai={"engine": "fixed"},
        )
        d.start()
        try:
            tail = d.tail()
            idle_pickup: list[float] = []
            idle_send: list[float] = []
            idle_rtt: list[float] = []
            with d.client() as c:
                for i in range(args.probes):
                    pickup, from_send, rtt, item_id = _probe(c, tail, i, None)
                    idle_pickup.append(pickup)
                    idle_send.append(from_send)
                    idle_rtt.append(rtt)
                    tail.wait('"item.transition"', item_id, '"to":"READY"', timeout=120)

            d.call("pause")
            capture_all(d, [article(i) for i in range(args.load)])
            tail.close()
            tail = d.tail()
            d.call("resume")
            load_pickup: list[float] = []
            load_send: list[float] = []
            load_rtt: list[float] = []
            with d.client() as c:
                for i in range(args.probes):
                    if d.count("QUEUED") < args.concurrency:
                        break  # the load has (nearly) drained: what follows is not "under load"
                    pickup, from_send, rtt, _ = _probe(c, tail, 100_000 + i, "P0")
                    load_pickup.append(pickup)
                    load_send.append(from_send)
                    load_rtt.append(rtt)
            tail.close()
            assert d.stop() == 0
        finally:
            d.close()

    idle = percentiles(idle_pickup)
    report(
        "latency_small" if args.small else "latency",
        {
            "probes": args.probes,
            "engine": "fixed (no delay)",
            "concurrency": args.concurrency,
            "pickup_idle_ms": idle,
            "send_to_first_step_idle_ms": percentiles(idle_send),
            "capture_rtt_idle_ms": percentiles(idle_rtt),
            "load_items": args.load,
            "load_probes": len(load_pickup),
            "pickup_under_load_p0_ms": percentiles(load_pickup),
            "send_to_first_step_under_load_p0_ms": percentiles(load_send),
            "capture_rtt_under_load_ms": percentiles(load_rtt),
            "requirement": "pickup p50 <= 2 ms on an idle daemon",
            "meets_requirement": bool(idle) and idle["p50"] <= 2.0,
        },
        sane={
            "every idle probe timed": len(idle_pickup) == args.probes,
            "probes under load": len(load_pickup) > 0,
            "round trips above zero": min(idle_rtt + load_rtt, default=0) > 0,
        },
    )


if __name__ == "__main__":
    main()
