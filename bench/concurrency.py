"""Items/s and memory with many items in flight on slow steps.

    python -m bench.concurrency [--levels 100 1000 10000] [--waves 3] [--delay-ms 1000]

The ``fixed`` engine with ``ai.fixed_delay_ms``: each AI step (summary,
score, todos, card) sleeps that long; extraction of a plain text does not
wait. So an item takes at least 4 × delay, and with C items in flight the
ideal is C / (4 × delay) items/s. (The rule of thumb C / (5 × delay)
counts five steps that each wait; both ratios are printed.)

For each level C: a fresh daemon with ``daemon.concurrency = C``, ``waves`` × C
short texts captured while paused, then released. Items/s is measured in the
steady state: between the moments 0.5 C and (waves − 0.5) C items are READY
(the same phase of successive waves). Memory: VmRSS of the daemon sampled
while it runs; per in-flight item = (peak − the idle daemon's RSS after the
captures) / C. Long option: ``--waves 5`` for a longer steady state.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Daemon, capture_paused, report, short_text

AI_STEPS = 4


def _level(c: int, waves: int, delay_ms: int, batch_size: int | None) -> dict[str, Any]:
    n = c * waves
    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(
            Path(tmp),
            daemon={
                "concurrency": c,
                "batch_size": batch_size or min(c, 20),
                "skip_below": 0,
            },
            ai={"engine": "fixed", "fixed_delay_ms": delay_ms},
        )
        d.start()
        try:
            capture_s = capture_paused(d, [short_text(i) for i in range(n)])
            idle_kb = d.rss_kb()
            peak_kb = idle_kb
            marks = {"start": c // 2, "end": n - c // 2}
            at: dict[str, float] = {}
            max_in_flight = 0
            db = d.db()
            d.call("resume")
            started = time.perf_counter()
            while True:
                ready, processing = db.execute(
                    "SELECT count(*) FILTER (WHERE status = 'READY'),"
                    " count(*) FILTER (WHERE status = 'PROCESSING') FROM items"
                ).fetchone()
                now = time.perf_counter()
                peak_kb = max(peak_kb, d.rss_kb())
                max_in_flight = max(max_in_flight, processing)
                for name, count in marks.items():
                    if name not in at and ready >= count:
                        at[name] = now
                if ready >= n:
                    break
                if now - started > 3600:
                    raise TimeoutError(f"{ready}/{n} READY after an hour")
                time.sleep(0.1)
            total_s = time.perf_counter() - started
            db.close()
            hwm_kb = _hwm_kb(d)
            assert d.stop() == 0
        finally:
            d.close()
    steady = (marks["end"] - marks["start"]) / (at["end"] - at["start"])
    ideal = c / (AI_STEPS * delay_ms / 1000)
    return {
        "in_flight": c,
        "items": n,
        "capture_s": round(capture_s, 1),
        "max_processing_seen": max_in_flight,
        "steady_items_per_s": round(steady, 1),
        "ideal_items_per_s": round(ideal, 1),
        "ratio_to_ideal": round(steady / ideal, 3),
        "ratio_to_c_over_5": round(steady / (c / (5 * delay_ms / 1000)), 3),
        "overall_items_per_s": round(n / total_s, 1),
        "rss_idle_mb": round(idle_kb / 1024, 1),
        "rss_peak_mb": round(peak_kb / 1024, 1),
        "vm_hwm_mb": round(hwm_kb / 1024, 1),
        "rss_kb_per_in_flight": round((peak_kb - idle_kb) / c, 1),
    }


def _hwm_kb(d: Daemon) -> int:
    for line in Path(f"/proc/{d.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", type=int, nargs="+", default=[100, 1000, 10_000])
    ap.add_argument("--waves", type=int, default=3, help="items = waves × in flight")
    ap.add_argument("--delay-ms", type=int, default=1000, help="ai.fixed_delay_ms")
    ap.add_argument("--batch-size", type=int, default=None, help="default: min(C, 1000)")
    ap.add_argument(
        "--small", action="store_true", help="50 in flight, 2 waves, 50 ms steps: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.levels, args.waves, args.delay_ms = [50], 2, 50
    if args.waves < 2:
        ap.error("--waves must be 2 or more: the steady state is measured between two waves")
    if min(args.levels) < 2:
        ap.error("--levels must be 2 or more items in flight")
    runs = []
    for c in args.levels:
        run = _level(c, args.waves, args.delay_ms, args.batch_size)
        print(run, flush=True)
        runs.append(run)
    by_level = {r["in_flight"]: r for r in runs}

    def at_least(level: int, figure: str, bound: float) -> bool | None:
        return by_level[level][figure] >= bound if level in by_level else None

    # The requirement's ideal is C/5 (five 1-s steps); C/4 is the stricter
    # bound for this engine, whose extraction does not wait. Both are checked.
    checks = {
        "1000_within_10pct_of_c_over_5": at_least(1000, "ratio_to_c_over_5", 0.9),
        "1000_within_10pct_of_c_over_4": at_least(1000, "ratio_to_ideal", 0.9),
        "10000_at_least_80pct_of_c_over_5": at_least(10_000, "ratio_to_c_over_5", 0.8),
        "10000_at_least_80pct_of_c_over_4": at_least(10_000, "ratio_to_ideal", 0.8),
        "rss_under_100kb_per_item": all(r["rss_kb_per_in_flight"] < 100 for r in runs),
    }
    report(
        "concurrency_small" if args.small else "concurrency",
        {
            "engine": f"fixed, {args.delay_ms} ms per AI step ({AI_STEPS} steps wait)",
            "waves": args.waves,
            "runs": runs,
            "requirement": "ideal C/5: within 10% at 1,000, >= 80% at 10,000; < 100 KB RSS/item",
            "checks": checks,
        },
        sane={
            "items/s above zero": all(r["steady_items_per_s"] > 0 for r in runs),
            "items seen in flight": all(r["max_processing_seen"] > 0 for r in runs),
        },
    )


if __name__ == "__main__":
    main()
