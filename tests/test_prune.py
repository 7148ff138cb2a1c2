"""Retention on a real SQLite file with a clock moved by hand, and `prune` end to end."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod.core import Core
from readdod.core.maintenance import DAY_MS
from readdod.errors import StepError
from readdod.items.models import CaptureRequest
from readdod.runtime.clock import ManualClock
from readdod.settings.config import RetentionConfig
from readdod.store import SqliteStore
from tests.daemon_proc import DaemonProc
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode
HOUR = 3600 * 1000


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock(), max_orphanings=3)


def _clock(o: Core) -> ManualClock:
    assert isinstance(o.clock, ManualClock)
    return o.clock


async def _finish_run(o: Core, extraction: bytes = b'{"text":"body"}') -> str:
    """Claim the (only) queued item and carry its run to READY."""
    [c] = await o.leases.claim("w", 1, 30_000)
    await o.book.put_artifact(c.lease, "extraction", extraction, META)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS), ("card", CARD)]:
        await o.book.put_artifact(c.lease, step, enc(payload), META)
    item = await o.book.complete(c.lease)
    assert item is not None and item.status == "READY"
    return c.lease.run_id


async def _ready_item(o: Core, runs: int, extraction: bytes = b'{"text":"body"}') -> str:
    """An item READY after ``runs`` runs (each a regenerate), an hour apart."""
    item, _ = await o.commands.capture(CaptureRequest(intent="x", text="body"))
    for n in range(runs):
        if n:
            await o.commands.process(item.id, regenerate=True, refetch=True)
        await _finish_run(o, extraction)
        _clock(o).advance(HOUR)
    return item.id


async def _counts(o: Core, item_id: str) -> tuple[int, int, int]:
    def read(tx: Any) -> tuple[int, int, int]:
        return (
            len(tx.runs_for(item_id)),
            len(tx.events_for(item_id)),
            len(tx.all_artifacts(item_id)),
        )

    return await o.store.read(read)


async def test_prune_touches_every_items_old_history_and_keeps_what_it_shows(
    orch: Core,
) -> None:
    policy = RetentionConfig(keep_versions=1)
    archived = await _ready_item(orch, runs=4)
    ready = await _ready_item(orch, runs=4)
    await orch.commands.archive(archived)
    items = (archived, ready)
    before = {i: await orch.reads.get(i) for i in items}
    shown = {
        i: {k: (a.version, a.run_id) for k, a in before[i]["artifacts"].items()} for i in items
    }
    start = {i: await _counts(orch, i) for i in items}
    assert start[archived] == (4, start[archived][1], 20)

    # Nothing is old enough yet.
    assert (await orch.maintenance.prune(policy)).removed.runs == 0

    _clock(orch).advance(31 * DAY_MS)
    dry = await orch.maintenance.prune(policy, dry_run=True)
    # Per item, archived or not: 3 old runs (an attempt each); the events of those runs
    # and the item's events of no run, but its capture (where it came from) and the
    # events of the run it shows; per type, 4 versions - current - 1 kept = 2.
    kept_events = {
        i: 1 + sum(e.run_id == before[i]["item"].ready_run_id for e in await _events(orch, i))
        for i in items
    }
    assert (dry.removed.runs, dry.removed.attempts, dry.removed.artifacts) == (6, 6, 20)
    assert dry.removed.events == sum(start[i][1] - kept_events[i] for i in items)
    assert {i: await _counts(orch, i) for i in items} == start

    done = await orch.maintenance.prune(policy)
    assert done.removed == dry.removed and not done.dry_run
    for i in items:
        assert await _counts(orch, i) == (1, kept_events[i], 10)
        after = await orch.reads.get(i)
        assert {k: (a.version, a.run_id) for k, a in after["artifacts"].items()} == shown[i]
        assert after["item"].status == before[i]["item"].status
    # The current run's complete set survives: unarchive goes straight back to READY.
    assert (await orch.commands.unarchive(archived)).status == "READY"
    assert (await orch.maintenance.prune(policy)).removed.runs == 0


async def _events(o: Core, item_id: str) -> list[Any]:
    return list(await o.store.read(lambda tx: tx.events_for(item_id)))


async def test_cancelled_failed_and_succeeded_runs_have_their_own_windows(
    orch: Core,
) -> None:
    clock = _clock(orch)
    # A cancelled run (archived while queued), then a regenerate that succeeds.
    cancelled_item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    await orch.commands.archive(cancelled_item.id)
    await orch.commands.unarchive(cancelled_item.id, regenerate=True)
    await _finish_run(orch)
    # A failed run, then a regenerate that succeeds.
    failed_item, _ = await orch.commands.capture(CaptureRequest(intent="y", text="body"))
    [c] = await orch.leases.claim("w", 1, 30_000)
    await orch.book.fail(c.lease, "summary", StepError("boom", retryable=False))
    await orch.commands.process(failed_item.id, regenerate=True)
    await _finish_run(orch)
    for item_id in (cancelled_item.id, failed_item.id):
        await orch.commands.archive(item_id)

    policy = RetentionConfig()
    clock.advance(8 * DAY_MS)
    assert (await orch.maintenance.prune(policy)).removed.runs == 1  # the cancelled one
    clock.advance(7 * DAY_MS)
    assert (await orch.maintenance.prune(policy)).removed.runs == 1  # the failed one
    clock.advance(16 * DAY_MS)
    # The succeeded runs are the current ones: never removed.
    assert (await orch.maintenance.prune(policy)).removed.runs == 0
    for item_id in (cancelled_item.id, failed_item.id):
        runs = (await orch.reads.get(item_id))["runs"]
        assert [r.status for r in runs] == ["succeeded"]


async def test_a_users_edit_is_never_pruned(orch: Core) -> None:
    item_id = await _ready_item(orch, runs=3)

    def edit(tx: Any) -> int:
        return int(
            tx.insert_artifact(
                item_id, "summary", "user", None, enc(SUMMARY).decode(), enc(META).decode(), 1
            )
        )

    user_version = await orch.store.write(edit)
    await orch.commands.process(item_id, regenerate=True)
    await _finish_run(orch)
    await orch.commands.archive(item_id)
    _clock(orch).advance(31 * DAY_MS)
    await orch.maintenance.prune(RetentionConfig(keep_versions=0))
    arts = (await orch.reads.get(item_id))["artifacts"]
    assert arts["summary"].created_by == "user" and arts["summary"].version == user_version
    versions = await orch.store.read(lambda tx: tx.all_artifacts(item_id))
    summaries = sorted(a.version for a in versions if a.artifact_type == "summary")
    # The user's edit (shown) and the current run's version stay; the rest go.
    assert summaries == [user_version, user_version + 1]


async def test_the_file_shrinks_after_a_big_prune(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    big = enc({"text": "lorem ipsum dolor sit amet " * 4000})
    async with SqliteStore.open(db) as store:
        o = Core(store, ManualClock())
        ids = [await _ready_item(o, runs=4, extraction=big) for _ in range(12)]
        for item_id in ids:
            await o.commands.archive(item_id)
        await store.reclaim()
        full = db.stat().st_size
        _clock(o).advance(31 * DAY_MS)
        report = await o.maintenance.prune(RetentionConfig(keep_versions=0))
        assert report.removed.artifacts == 12 * 3 * 5
        for item_id in ids:
            assert (await o.reads.get(item_id))["artifacts"]["extraction"].version == 4
    shrunk = db.stat().st_size
    assert shrunk < full * 0.6, (full, shrunk)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(
        tmp_path,
        ai={"engine": "fixed"},
        daemon={"skip_below": 0},
        retention={"interval_h": 0.0002},  # every 0.72 s, so a second round is seen
    )
    try:
        yield d
    finally:
        d.close()


def test_prune_through_the_daemon_and_the_cli(tmp_path: Path, daemon: DaemonProc) -> None:
    daemon.start()
    # The daemon prunes once at start, then again after each interval.
    daemon.wait_log(lambda e: e["event"] == "retention.pruned" and not e["dry_run"], count=2)
    item_id = daemon.call("capture", {"text": "some text to read", "intent": "x"})["item"]["id"]
    daemon.wait_status("READY", count=1)
    daemon.call("process", {"id": item_id, "regenerate": True})
    daemon.wait_status("READY", count=2)
    daemon.call("archive", {"id": item_id})
    res = daemon.call("prune", {"dry_run": True})
    # Nothing is old enough; keep_versions (2) covers the one superseded version.
    assert res["dry_run"] is True and res["removed"] == {
        "runs": 0,
        "attempts": 0,
        "events": 0,
        "artifacts": 0,
        "chunks": 0,
    }
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "prune", "--dry-run", "--config", str(daemon.config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "would remove 0 runs" in out.stdout
    assert daemon.stop() == 0


async def test_an_older_database_is_switched_to_incremental_vacuum_at_open(
    tmp_path: Path,
) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE leftover (x)")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    async with SqliteStore.open(db):
        pass
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
