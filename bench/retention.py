"""A simulated year of steady load on one SQLite database, pruned daily: does it stop growing?

``python -m bench.retention`` (~1-2 min; ``--small``: a few seconds, what CI runs).

The core runs on a real SQLite file with a clock moved by hand (an injected
:class:`readdod.runtime.clock.ManualClock`), one simulated day at a time. An inbox of
``--items`` items is captured over the first ten days (a tenth each day) and
processed to READY; every day brings the same work besides: a tenth of the
items regenerated with a fresh fetch (a new run, new versions of every
artifact), a fifth of those failing first (FAILED_AI, retried the next day), a
twentieth exported again (SHIPPED, an export run each time), a few archived and
brought back, and the daemon paused and resumed once. Retention runs once a day
(``readdod prune`` with the default ``[retention]``). The file's size (its
write-ahead log apart) is printed at the end of every simulated month; once the inbox is full it
holds the same items, and once the 30 days of ``retention.finished_days`` have
passed, with retention the size stops growing: the ratio of the last month's size
to the second month's is near 1.
``--no-prune`` runs the same year without retention, for comparison.

Items and what they show are never pruned: a database holding more items is
bigger. What the bench shows is that an item's history does not pile up.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import msgspec

from bench._common import article, report
from readdod.core import Core
from readdod.core.maintenance import DAY_MS
from readdod.errors import StepError
from readdod.export.writer import Exporter
from readdod.items.models import CaptureRequest
from readdod.runtime import logging as rlog
from readdod.runtime.clock import ManualClock
from readdod.settings.config import RetentionConfig
from readdod.store import SqliteStore
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS

HOUR_MS = 3_600_000
#: The days the inbox fills in, a share of its items captured each day.
FILL_DAYS = 10
_enc = msgspec.json.encode
#: The steps a run writes after its extraction, with their payloads.
_STEPS = (("summary", SUMMARY), ("score", SCORE), ("todos", TODOS), ("card", CARD))


def _size(db: Path) -> tuple[int, int]:
    """(bytes of the database file, bytes of its write-ahead log), once the log is
    folded into the file as far as it can be: between two days the store is idle, so
    a checkpoint from beside it goes through. The log is bounded by SQLite's
    automatic checkpoints; the file is what grows."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    wal = db.with_name(db.name + "-wal")
    return db.stat().st_size, wal.stat().st_size if wal.exists() else 0


def _rows(db: Path) -> dict[str, int]:
    """How many rows of each kind of history the file holds (read beside the store)."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return {
            table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("items", "runs", "attempts", "events", "artifacts")
        }


class Year:
    """The simulated year: the core on one database, its clock and the inbox."""

    def __init__(self, core: Core, clock: ManualClock, items: int) -> None:
        self.core = core
        self.clock = clock
        self.items = items
        self.ids: list[str] = []
        self.failing: list[str] = []
        self.shipped: set[str] = set()

    async def work_queued(self, fail: frozenset[str] = frozenset()) -> None:
        """Carry every queued item through its run: READY, or FAILED_AI for ``fail``."""
        while claimed := await self.core.leases.claim("bench", 64, 30_000):
            for c in claimed:
                lease = c.lease
                text = _enc({"text": article(len(self.ids) + self.clock.now_ms() % 997)})
                await self.core.book.put_artifact(lease, "extraction", text, META)
                if c.item.id in fail:
                    error = StepError("the model server answered 500", retryable=False)
                    await self.core.book.fail(lease, "summary", error)
                    continue
                for step, payload in _STEPS:
                    await self.core.book.put_artifact(lease, step, _enc(payload), META)
                await self.core.book.complete(lease)

    async def day(self, n: int) -> None:
        """One day's work, spread over its hours."""
        core = self.core
        if n < FILL_DAYS:  # the inbox fills
            for _ in range(self.items // FILL_DAYS + (n < self.items % FILL_DAYS)):
                text = f"{article(len(self.ids))} Item {len(self.ids)}."
                item, _ = await core.commands.capture(CaptureRequest(intent="tune WAL", text=text))
                self.ids.append(item.id)
            await self.work_queued()
            self.clock.advance(HOUR_MS)
        if not self.ids:
            return
        # Yesterday's failures are retried (a new attempt of the same run).
        for item_id in self.failing:
            await core.commands.process(item_id)
        self.failing = []
        await self.work_queued()
        self.clock.advance(HOUR_MS)
        tenth = max(len(self.ids) // 10, 1)
        start = (n * tenth) % len(self.ids)
        again = [self.ids[(start + k) % len(self.ids)] for k in range(tenth)]
        for item_id in again:
            if item_id in self.shipped:  # a shipped card is archived before it is redone
                self.shipped.discard(item_id)
                await core.commands.archive(item_id)
                await core.commands.unarchive(item_id, regenerate=True)
            else:
                await core.commands.process(item_id, regenerate=True, refetch=True)
        self.failing = again[: max(tenth // 5, 1)]
        await self.work_queued(frozenset(self.failing))
        self.clock.advance(HOUR_MS)
        ready = [i for i in again if i not in self.failing]
        for item_id in ready[: max(len(self.ids) // 20, 1)]:
            await core.exports.export(item_id)
            self.shipped.add(item_id)
        for item_id in [i for i in ready if i not in self.shipped][-2:]:
            await core.commands.archive(item_id)
            self.clock.advance(60_000)
            await core.commands.unarchive(item_id)
        await core.commands.pause()
        self.clock.advance(60_000)
        await core.commands.resume()


async def run(items: int, days: int, prune: bool, folder: Path) -> dict[str, Any]:
    db = folder / "readdod.db"
    clock = ManualClock()
    months: list[dict[str, Any]] = []
    async with SqliteStore.open(db) as store:
        core = Core(
            store,
            clock,
            exporter=Exporter(folder / "cards"),
            retention=RetentionConfig(),
        )
        year = Year(core, clock, items)
        started = time.perf_counter()
        for n in range(days):
            await year.day(n)
            clock.advance(DAY_MS - (clock.now_ms() % DAY_MS))
            if prune:
                await core.maintenance.prune()
            if (n + 1) % 30 == 0:
                await store.reclaim()

                size, wal = _size(db)
                months.append({"month": (n + 1) // 30, "bytes": size, "wal_bytes": wal})
                months[-1].update(_rows(db))
                m = months[-1]
                print(
                    f"month {m['month']:2d}: {m['bytes'] / 2**20:7.2f} MiB"
                    f" (WAL {m['wal_bytes'] / 2**20:4.2f} MiB), {m['runs']:6d} runs,"
                    f" {m['attempts']:6d} attempts, {m['events']:7d} events,"
                    f" {m['artifacts']:6d} artifact versions",
                    flush=True,
                )
    seconds = time.perf_counter() - started
    ratio = months[-1]["bytes"] / months[1]["bytes"]
    return {
        "items": items,
        "days": days,
        "prune": prune,
        "months": months,
        "last_to_month_2": round(ratio, 3),
        "seconds": round(seconds, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=300, help="the inbox's size (default 300)")
    ap.add_argument("--days", type=int, default=360, help="days simulated (default 360)")
    ap.add_argument("--small", action="store_true", help="30 items for 120 days: a quick look")
    ap.add_argument("--no-prune", action="store_true", help="the same year without retention")
    args = ap.parse_args()
    items, days = (30, 120) if args.small else (args.items, args.days)
    rlog.configure("warning")
    if days < 60:
        ap.error("--days must be at least 60 (two months)")
    with tempfile.TemporaryDirectory() as tmp:
        figures = anyio.run(run, items, days, not args.no_prune, Path(tmp))
    print(
        f"{figures['items']} items, {figures['days']} days"
        f" ({'pruned daily' if figures['prune'] else 'never pruned'}):"
        f" last month / month 2 = {figures['last_to_month_2']:.3f}"
        f" in {figures['seconds']} s"
    )
    name = "retention" + ("_small" if args.small else "") + ("_unpruned" if args.no_prune else "")
    report(name, figures, sane={"two months or more measured": len(figures["months"]) >= 2})
    # Pruned daily, the database may not grow by more than a tenth after the inbox filled.
    return 0 if args.no_prune or figures["last_to_month_2"] < 1.1 else 1


if __name__ == "__main__":
    sys.exit(main())
