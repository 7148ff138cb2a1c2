"""How fast the inbox answers a key with 10,000 items in the database and 50 processing.

    python -m bench.tui [--settled 8000] [--fed 2000] [--delay-ms 250]

The TUI runs in this process under Textual's pilot (headless, 80x24) against
the real daemon; each figure is the time from a key press to the screen that
answers it (the cursor moved, the next page or filter shown, the card read).
The baseline is the same keys on the same database with nothing processing
(the daemon paused); the load is 50 items processing (``daemon.concurrency =
50``, the fixed engine waiting ``--delay-ms`` per step), their events streaming
into the inbox all the while.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Daemon, article, percentiles, report
from readdod.tui.app import ReaddodTui
from readdod.tui.card import CardScreen
from readdod.tui.inbox import InboxScreen

SIZE = (80, 24)


def _fill(d: Daemon, count: int, first: int) -> None:
    with d.client() as c:
        for start in range(first, first + count, 100):  # batches well under the line cap
            batch = [
                {"jsonrpc": "2.0", "id": i, "method": "capture",
                 "params": {"text": article(i, paragraphs=2), "intent": f"learn {i % 7}"}}
                for i in range(start, min(first + count, start + 100))
            ]  # fmt: skip
            c.send_raw(json.dumps(batch).encode() + b"\n")
            answers = json.loads(c.read_raw())
            assert all("result" in a for a in answers), answers[:1]


async def _until(pilot: Any, check: Any, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the screen did not answer")
        await pilot.pause(0.0005)


async def _measure(sock: Path, rounds: int) -> dict[str, Any]:
    app = ReaddodTui(sock)
    out: dict[str, list[float]] = {"noop": [], "cursor": [], "page": [], "filter": [], "card": []}
    async with app.run_test(size=SIZE) as pilot:
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        await _until(pilot, lambda: inbox.loaded and app.connection == "live")
        seen0, t_start = app.events_seen, time.perf_counter()
        for _ in range(rounds * 2):
            # A key nothing is bound to: what the pilot itself costs, a floor for the rest.
            t0 = time.perf_counter()
            await pilot.press("x")
            out["noop"].append((time.perf_counter() - t0) * 1000)
        for n in range(rounds * 4):
            key = "down" if (n // 20) % 2 == 0 else "up"
            before = inbox.query_one("DataTable").cursor_row  # type: ignore[attr-defined]
            t0 = time.perf_counter()
            await pilot.press(key)
            assert inbox.query_one("DataTable").cursor_row != before  # type: ignore[attr-defined]
            out["cursor"].append((time.perf_counter() - t0) * 1000)
        for n in range(rounds):
            key = "right_square_bracket" if n < rounds // 2 else "left_square_bracket"
            t0 = time.perf_counter()
            await pilot.press(key)
            await _until(pilot, lambda: inbox.shown_generation == inbox.generation)
            out["page"].append((time.perf_counter() - t0) * 1000)
        for _ in range(rounds):
            t0 = time.perf_counter()
            await pilot.press("f")
            await _until(pilot, lambda: inbox.shown_generation == inbox.generation)
            out["filter"].append((time.perf_counter() - t0) * 1000)
        while inbox.filter.group != "all" or not inbox.items:
            await pilot.press("f")
            await _until(pilot, lambda: inbox.shown_generation == inbox.generation)
        for _ in range(rounds):
            t0 = time.perf_counter()
            await pilot.press("enter")
            await _until(pilot, lambda: isinstance(app.screen, CardScreen) and app.screen.got)
            out["card"].append((time.perf_counter() - t0) * 1000)
            await pilot.press("escape")
            await _until(pilot, lambda: app.screen is inbox)
        elapsed = time.perf_counter() - t_start
        events = app.events_seen - seen0
        rows = inbox.query_one("DataTable").row_count  # type: ignore[attr-defined]
    figures: dict[str, Any] = {k: percentiles(v, (50, 95)) for k, v in out.items()}
    figures["events_per_s"] = round(events / elapsed, 1)
    figures["rows_in_table"] = rows
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settled", type=int, default=8000, help="READY items, made first")
    parser.add_argument("--fed", type=int, default=2000, help="items processed during the load")
    parser.add_argument("--delay-ms", type=int, default=250, help="the fixed engine's step delay")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sections: dict[str, dict[str, Any]] = {
            "daemon": {"skip_below": 0, "concurrency": 50, "batch_size": 50},
            "ai": {"engine": "fixed"},
        }
        d = Daemon(root, **sections)
        d.start()
        _fill(d, args.settled, 0)
        d.wait_count("READY", args.settled, timeout=1800)
        d.stop()
        d = Daemon(root, **{**sections, "ai": {"engine": "fixed", "fixed_delay_ms": args.delay_ms}})
        d.start()
        try:
            d.call("pause")
            _fill(d, args.fed, args.settled)
            with d.db() as db:
                total = db.execute("SELECT count(*) FROM items").fetchone()[0]
            idle = asyncio.run(_measure(d.sock, args.rounds))
            d.call("resume")
            d.wait_count("PROCESSING", 50, timeout=120)
            in_flight_before = d.call("ping")["in_flight"]
            load = asyncio.run(_measure(d.sock, args.rounds))
            in_flight_after = d.call("ping")["in_flight"]
        finally:
            d.stop()
    figures: dict[str, Any] = {
        "items_in_database": total,
        "in_flight_at_start_and_end_of_load": [in_flight_before, in_flight_after],
        "page_size": 50,
        "baseline_idle_ms": idle,
        "load_50_processing_ms": load,
        "ratio_p95_load_to_idle": {
            k: round(load[k]["p95"] / idle[k]["p95"], 2)
            for k in ("noop", "cursor", "page", "filter", "card")
        },
    }
    report("tui", figures)


if __name__ == "__main__":
    main()
