"""Clock jumps against leases, on a real SQLite file with a clock moved by hand.

Forward past the lease's TTL: another worker requeues the item and takes it
over, and nothing the stalled worker still tries to write gets in. Backwards:
no lease expires early, and the worker finishes its run. With a running
supervisor, jumps either way never cost a live actor its lease: each
heartbeat renews before it looks for expired leases.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import msgspec
import pytest

from readdod.core import Core, Lease
from readdod.errors import AIError
from readdod.extraction.fetch import make_client
from readdod.items.models import CaptureRequest, Extraction
from readdod.runtime.clock import ManualClock
from readdod.store import SqliteStore
from tests.invariants import check
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS
from tests.rigs import GateEngine, run_supervisor, supervisor

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode
TTL_MS = 30_000
HOUR_MS = 3_600_000
EXTRACTION = Extraction(text="Some text.", source="provided_text", extractor="test")
STALE_SUMMARY = msgspec.structs.replace(SUMMARY, tl_dr="written by a worker that lost its lease")


async def _finish(orch: Core, lease: Lease, *, with_extraction: bool = False) -> None:
    steps = [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS), ("card", CARD)]
    if with_extraction:
        steps.insert(0, ("extraction", EXTRACTION))
    for step, payload in steps:
        assert await orch.book.put_artifact(lease, step, enc(payload), META) == 1, step
    done = await orch.book.complete(lease)
    assert done is not None and done.status == "READY"


async def _refused_everything(orch: Core, stale: Lease) -> None:
    """Every write a worker makes under its lease, refused."""
    assert await orch.book.put_artifact(stale, "summary", enc(STALE_SUMMARY), META) is None
    assert not await orch.book.note_step(stale, "summary", "waiting", {"reason": "late"})
    assert not await orch.book.note_retry(stale, "summary", 1, AIError("late", retryable=True), 0.1)
    assert await orch.book.chunks_begin(stale, "summary", 2, None) == {}
    assert not await orch.book.chunk_update(stale, "summary", 0, "done", output="late")
    assert await orch.book.fail(stale, "summary", AIError("late")) is None
    assert await orch.book.complete(stale) is None
    assert not await orch.book.release(stale, "pause")
    assert await orch.leases.renew(stale.owner, [stale.item_id], TTL_MS) == set()


async def test_a_jump_past_the_ttl_requeues_and_fences_the_stalled_worker(tmp_path: Path) -> None:
    db = tmp_path / "clock.db"
    clock = ManualClock()
    async with SqliteStore.open(db) as store:
        orch = Core(store, clock)
        item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="Some text."))
        [old] = await orch.leases.claim("worker-a", 1, TTL_MS)
        assert await orch.book.put_artifact(old.lease, "extraction", enc(EXTRACTION), META) == 1
        clock.advance(TTL_MS - 1)
        assert await orch.leases.requeue_expired() == 0  # not a millisecond early
        clock.advance(2)
        assert await orch.leases.requeue_expired() == 1
        [new] = await orch.leases.claim("worker-b", 1, TTL_MS)
        # The same run resumes where the stalled worker left it.
        assert new.lease.run_id == old.lease.run_id and set(new.done) == {"extraction"}

        await _refused_everything(orch, old.lease)
        await _finish(orch, new.lease)
        await _refused_everything(orch, old.lease)
        got = await orch.reads.get(item.id, history=True)
        assert got["item"].status == "READY"
        assert got["artifacts"]["summary"].payload["tl_dr"] == SUMMARY.tl_dr
    with sqlite3.connect(db) as conn:
        versions = conn.execute(
            "SELECT artifact_type, count(*) FROM artifacts GROUP BY 1 ORDER BY 1"
        ).fetchall()
        stale = conn.execute(
            "SELECT count(*) FROM artifacts WHERE payload LIKE '%lost its lease%'"
        ).fetchone()
    assert versions == [(t, 1) for t in ("card", "extraction", "score", "summary", "todos")]
    assert stale == (0,)
    assert check(db, acknowledged=[item.id]) == []


async def test_a_jump_backwards_expires_nothing_early(tmp_path: Path) -> None:
    db = tmp_path / "clock.db"
    clock = ManualClock()
    async with SqliteStore.open(db) as store:
        orch = Core(store, clock)
        item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="Some text."))
        [mine] = await orch.leases.claim("worker-a", 1, TTL_MS)
        clock.advance(-HOUR_MS)
        assert await orch.leases.requeue_expired() == 0
        assert await orch.leases.claim("worker-b", 1, TTL_MS) == []
        # The heartbeat's order: renew the leases it holds, then look for expired ones.
        assert await orch.leases.renew("worker-a", [item.id], TTL_MS) == {item.id}
        assert await orch.leases.requeue_expired() == 0
        assert await orch.book.put_artifact(mine.lease, "extraction", enc(EXTRACTION), META) == 1
        clock.advance(HOUR_MS)  # the clock is put right again
        assert await orch.leases.renew("worker-a", [item.id], TTL_MS) == {item.id}
        assert await orch.leases.requeue_expired() == 0
        await _finish(orch, mine.lease)
        got = await orch.reads.get(item.id, history=True)
        moves = [(e.from_status, e.to_status) for e in got["events"] if e.kind == "transition"]
        assert moves == [("CAPTURED", "QUEUED"), ("QUEUED", "PROCESSING"), ("PROCESSING", "READY")]
    assert check(db, acknowledged=[item.id]) == []


def _lease_expiry(db: Path) -> int | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT lease_expires_at FROM items").fetchone()
    return None if row is None else row[0]


async def _renewed_until(db: Path, until: int) -> None:
    """Poll the database (the heartbeat runs on its own timer) until the lease ends at ``until``."""
    with anyio.fail_after(10):
        while _lease_expiry(db) != until:
            await anyio.sleep(0.02)


async def test_a_running_supervisor_keeps_its_leases_through_jumps(tmp_path: Path) -> None:
    db = tmp_path / "sup.db"
    clock = ManualClock()
    engine = GateEngine()
    ttl_ms = 300
    async with SqliteStore.open(db) as store, make_client() as http:
        orch = Core(store, clock)
        sup = supervisor(orch, engine, http, concurrency=2, lease_ttl_s=ttl_ms / 1000)
        async with anyio.create_task_group() as tg:
            await tg.start(run_supervisor, orch, sup)
            item, _ = await orch.commands.capture(
                CaptureRequest(intent="x", text="Some text.\n\nMore.")
            )
            with anyio.fail_after(10):
                await engine.entered.wait()
            for jump in (HOUR_MS, -2 * HOUR_MS):
                clock.advance(jump)
                # The next heartbeat renews from the new time, and requeues nothing.
                await _renewed_until(db, clock.now_ms() + ttl_ms)
                assert (await orch.reads.get(item.id))["item"].status == "PROCESSING"
                assert sup.in_flight == 1
            engine.gate.set()
            with anyio.fail_after(10):
                await sup.wait_idle()
            sup.stop()
        got = await orch.reads.get(item.id, history=True)
        assert got["item"].status == "READY"
        moves = [(e.from_status, e.to_status) for e in got["events"] if e.kind == "transition"]
        assert moves == [("CAPTURED", "QUEUED"), ("QUEUED", "PROCESSING"), ("PROCESSING", "READY")]
    assert check(db, acknowledged=[item.id]) == []
