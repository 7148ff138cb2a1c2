"""How fast the inbox answers a key with 10,000 items in the database and 50 processing.

    python -m bench.tui [--settled 8000] [--fed 2000] [--delay-ms 250] [--rounds 20] [--gap-ms 100]

The TUI runs in this process (Textual's headless test driver, 80x24) against
the real daemon; each figure is the time from a key to the frame that shows
its answer (the highlight moved, the next page or filter shown, the card read
and shown, the inbox back), timed by :class:`KeyClock` to about a millisecond.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.message import Message

from bench._common import Daemon, article, percentiles, report
from readdod.tui.app import ReaddodTui
from readdod.tui.card import CardScreen
from readdod.tui.inbox import InboxScreen
from readdod.tui.table import ItemTable

SIZE = (80, 24)
KEYS = ("noop", "cursor", "page", "filter", "card", "back")


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


class KeyClock:
    """Presses keys as a terminal would and times each to the frame that shows its answer.

    The key goes in as the driver sends one read from the terminal (a ``Key``
    event posted to the app, as ``App.simulate_key`` does); it has been through
    the bindings when the app has handled it twice (it forwards the key to the
    focused widget, and runs the bindings when the key bubbles back up). Then
    the answer is waited for (``answered``, checked every half millisecond),
    then the screen's next refresh (``Screen.wait_for_refresh``: its callback
    runs once the screen has repainted what changed). No idle detection is in
    the way, so the figures are the app's own time, to about a millisecond.
    """

    def __init__(self, app: ReaddodTui, gap_s: float) -> None:
        self.app = app
        self.gap_s = gap_s
        self._key: events.Key | None = None
        self._passes = 0
        self._back = asyncio.Event()
        app.message_signal.subscribe(app, self._seen, immediate=True)

    def _seen(self, message: Message) -> None:
        """The app handles a key twice: it forwards it, then runs the bindings when it is back."""
        if message is self._key:
            self._passes += 1
            if self._passes == 2:
                self._back.set()

    async def press(self, key: str, answered: Callable[[], bool] = lambda: True) -> float:
        """Milliseconds from ``key`` to the frame drawn after ``answered()`` holds.

        The key comes :attr:`gap_s` after the last answer, as a person's next
        key would (a key pressed right on the heels of a frame waits for the
        next one: Textual draws at most 60 frames a second).
        """
        await asyncio.sleep(self.gap_s)
        self._key, self._passes, self._back = events.Key(key, None), 0, asyncio.Event()
        t0 = time.perf_counter()
        self.app.post_message(self._key)
        await asyncio.wait_for(self._back.wait(), 30)
        await _until(answered)
        await self.app.screen.wait_for_refresh()
        return (time.perf_counter() - t0) * 1000


async def _until(check: Callable[[], bool], limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the screen did not answer")
        await asyncio.sleep(0.0005)


def _moved_from(table: ItemTable, row: int) -> Callable[[], bool]:
    return lambda: table.cursor_row != row


async def _measure(sock: Path, rounds: int, gap_s: float) -> dict[str, Any]:
    app = ReaddodTui(sock)
    out: dict[str, list[float]] = {k: [] for k in (*KEYS, "cursor_held")}
    async with app.run_test(size=SIZE):
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        await _until(lambda: inbox.loaded and app.connection == "live")
        table = inbox.query_one(ItemTable)
        keys = KeyClock(app, gap_s)

        def page_shown() -> bool:
            return inbox.shown_generation == inbox.generation

        def card_read() -> bool:
            return isinstance(app.screen, CardScreen) and app.screen.got is not None

        seen0, t_start, cpu0 = app.events_seen, time.perf_counter(), time.thread_time()
        for _ in range(rounds * 2):
            # A key nothing is bound to: the route of a key and a frame, the floor for the rest.
            out["noop"].append(await keys.press("x"))
        for n in range(rounds * 4):
            key = "down" if (n // 20) % 2 == 0 else "up"
            out["cursor"].append(await keys.press(key, _moved_from(table, table.cursor_row)))
        for n in range(rounds):
            key = "right_square_bracket" if n < rounds // 2 else "left_square_bracket"
            out["page"].append(await keys.press(key, page_shown))
        for _ in range(rounds):
            out["filter"].append(await keys.press("f", page_shown))
        while inbox.filter.group != "all" or not inbox.items:
            await keys.press("f", page_shown)
        # A held key: the key repeat's presses come as fast as frames are drawn.
        held = KeyClock(app, 0.0)
        for n in range(rounds * 2):
            key = "down" if (n // 20) % 2 == 0 else "up"
            out["cursor_held"].append(await held.press(key, _moved_from(table, table.cursor_row)))
        for _ in range(rounds):
            out["card"].append(await keys.press("enter", card_read))
            out["back"].append(await keys.press("escape", lambda: app.screen is inbox))
        elapsed = time.perf_counter() - t_start
        cpu = time.thread_time() - cpu0
        events_in = app.events_seen - seen0
        rows = table.row_count
    figures: dict[str, Any] = {k: percentiles(v, (50, 95)) for k, v in out.items()}
    figures["events_per_s"] = round(events_in / elapsed, 1)
    # The app's own thread (it draws and routes; the bench's waiting is a sliver of it).
    figures["app_thread_cpu_pct"] = round(100 * cpu / elapsed, 1)
    figures["rows_in_table"] = rows
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settled", type=int, default=8000, help="READY items, made first")
    parser.add_argument("--fed", type=int, default=2000, help="items processed during the load")
    parser.add_argument("--delay-ms", type=int, default=250, help="the fixed engine's step delay")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--gap-ms", type=int, default=100, help="from an answer to the next key")
    parser.add_argument(
        "--small", action="store_true", help="200 + 60 items, 3 rounds: that it runs (CI)"
    )
    args = parser.parse_args()
    if args.small:
        args.settled, args.fed, args.rounds = 200, 60, 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sections: dict[str, dict[str, Any]] = {
            "daemon": {"skip_below": 0, "concurrency": 50, "batch_size": 20},
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
            idle = asyncio.run(_measure(d.sock, args.rounds, args.gap_ms / 1000))
            d.call("resume")
            d.wait_count("PROCESSING", 50, timeout=120)
            in_flight_before = d.call("ping")["in_flight"]
            load = asyncio.run(_measure(d.sock, args.rounds, args.gap_ms / 1000))
            in_flight_after = d.call("ping")["in_flight"]
        finally:
            d.stop()
    figures: dict[str, Any] = {
        "items_in_database": total,
        "in_flight_at_start_and_end_of_load": [in_flight_before, in_flight_after],
        "page_size": 50,
        "gap_between_keys_ms": args.gap_ms,
        "baseline_idle_ms": idle,
        "load_50_processing_ms": load,
        "ratio_p95_load_to_idle": {
            k: round(load[k]["p95"] / idle[k]["p95"], 2) for k in (*KEYS, "cursor_held")
        },
    }
    report(
        "tui_small" if args.small else "tui",
        figures,
        sane={
            "every item in the database": total == args.settled + args.fed,
            "every key answered": all(
                "p50" in run[k] for run in (idle, load) for k in (*KEYS, "cursor_held")
            ),
            "rows shown": idle["rows_in_table"] > 0 and load["rows_in_table"] > 0,
        },
    )


if __name__ == "__main__":
    main()
