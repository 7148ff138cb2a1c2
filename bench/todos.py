"""Ticking todos and handing them to task managers, with many READY cards.

    python -m bench.todos [--items 2000]

Captures N articles into a real daemon (fixed engine) and waits until all
are READY, then times over its socket:

- a tick (`todo` done, then undone) against a `get` of the same item, the
  baseline: both read what the item shows; a tick also writes and commits;
- `stats` with a tick on every item against `stats` before any tick: stats
  counts the ticks still shown, reading each ticked item's card;
- `todos export` in each format (paging `list`, one `get` per item, the
  renderer) against the same paging and gets without a renderer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._common import WORDS, article, report
from readdod.cli.todo_verbs import collect
from readdod.control.client import Client
from readdod.tasks import RENDERERS
from tests.daemon_proc import DaemonProc

REPEAT = 200


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def _pages(c: Client) -> int:
    """Page `list` and `get` every READY item: the export's socket work alone."""
    cursor: str | None = None
    n = 0
    while True:
        params: dict[str, Any] = {"status": ["READY", "SHIPPED"], "limit": 200}
        if cursor:
            params["cursor"] = cursor
        page = c.call("list", params)
        for item in page["items"]:
            c.call("get", {"id": item["id"]})
            n += 1
        cursor = page.get("next_cursor")
        if not cursor:
            return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--small", action="store_true", help="100 items: that it runs (CI)")
    args = ap.parse_args()
    n = 100 if args.small else args.items
    figures: dict[str, Any] = {"items": n}
    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProc(Path(tmp), daemon={"concurrency": 64}, ai={"engine": "fixed"})
        d.start()
        try:
            with d.client() as c:
                ids = [
                    c.call(
                        "capture",
                        {"text": article(i, paragraphs=3), "intent": f"learn {WORDS[i % 9]}"},
                    )["item"]["id"]
                    for i in range(n)
                ]
                d.wait_status("READY", count=n, timeout=1800)
                probe = ids[0]
                gets, ticks = [], []
                for k in range(REPEAT):
                    t0 = time.perf_counter()
                    c.call("get", {"id": probe})
                    gets.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    c.call("todo", {"id": probe, "index": 1, "done": k % 2 == 0})
                    ticks.append(time.perf_counter() - t0)
                figures["get_ms_baseline"] = _median_ms(gets)
                figures["todo_tick_ms"] = _median_ms(ticks)
                figures["tick_to_get_ratio"] = round(
                    figures["todo_tick_ms"] / figures["get_ms_baseline"], 2
                )

                def stats_ms() -> float:
                    times = []
                    for _ in range(5):
                        t0 = time.perf_counter()
                        c.call("stats")
                        times.append(time.perf_counter() - t0)
                    return _median_ms(times)

                c.call("todo", {"id": probe, "index": 1, "done": False})
                figures["stats_ms_no_ticks_baseline"] = stats_ms()
                for item_id in ids:
                    c.call("todo", {"id": item_id, "index": 1, "done": True})
                figures["stats_ms_every_item_ticked"] = stats_ms()
                figures["stats_ratio"] = round(
                    figures["stats_ms_every_item_ticked"] / figures["stats_ms_no_ticks_baseline"], 2
                )
                assert c.call("stats")["todos"] == {"done": n, "items": n}

                t0 = time.perf_counter()
                assert _pages(c) == n
                fetch_s = time.perf_counter() - t0
                figures["list_and_get_all_s_baseline"] = round(fetch_s, 3)
                for fmt, render in RENDERERS.items():
                    t0 = time.perf_counter()
                    todos = collect(c, ["READY", "SHIPPED"])
                    data = render(todos, datetime.now(UTC))
                    took = time.perf_counter() - t0
                    figures[f"export_{fmt}_s"] = round(took, 3)
                    figures[f"export_{fmt}_ratio"] = round(took / fetch_s, 2)
                    figures[f"export_{fmt}_bytes"] = len(data)
                figures["todos_exported"] = len(todos)
        finally:
            d.stop()
    report(
        "todos_small" if args.small else "todos",
        figures,
        sane={
            "todos exported": figures["todos_exported"] > 0,
            "every export has bytes": all(
                v > 0 for k, v in figures.items() if k.endswith("_bytes")
            ),
            "times above zero": figures["get_ms_baseline"] > 0 and figures["todo_tick_ms"] > 0,
        },
    )


if __name__ == "__main__":
    main()
