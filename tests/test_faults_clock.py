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

from readdod.clock import ManualClock
from readdod.config import FetchConfig
from readdod.errors import AIError
from readdod.extraction.fetch import make_client
from readdod.models import Extraction
from readdod.orchestrator import CaptureRequest, Lease, Orchestrator
from readdod.pipeline import Pipeline
from readdod.store import Store
from readdod.supervisor import Supervisor
from tests.invariants import check
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS
from tests.rigs import GateEngine

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode
TTL_MS = 30_000
HOUR_MS = 3_600_000
EXTRACTION = Extraction(text="Some text.", source="provided_text", extractor="test")
STALE_SUMMARY = msgspec.structs.replace(SUMMARY, tl_dr="written by a worker that lost its lease")


async def _finish(orch: Orchestrator, lease: Lease, *, with_extraction: bool = False) -> None:
    steps = [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS), ("card", CARD)]
    if with_extraction:
        steps.insert(0, ("extraction", EXTRACTION))
    for step, payload in steps:
        assert await orch.put_artifact(lease, step, enc(payload), META) == 1, step
    done = await orch.complete(lease)
    assert done is not None and done.status == "READY"


async def _refused_everything(orch: Orchestrator, stale: Lease) -> None:
    """Every write a worker makes under its lease, refused."""
    assert await orch.put_artifact(stale, "summary", enc(STALE_SUMMARY), META) is None
    assert not await orch.note_step(stale, "summary", "waiting", {"reason": "late"})
    assert not await orch.note_retry(stale, "summary", 1, AIError("late", retryable=True), 0.1)
    assert await orch.chunks_begin(stale, "summary", 2, None) == {}
    assert not await orch.chunk_update(stale, "summary", 0, "done", output="late")
    assert await orch.fail(stale, "summary", AIError("late")) is None
    assert await orch.complete(stale) is None
    assert not await orch.release(stale, "pause")
    assert await orch.renew(stale.owner, [stale.item_id], TTL_MS) == set()


async def test_a_jump_past_the_ttl_requeues_and_fences_the_stalled_worker(tmp_path: Path) -> None:
    db = tmp_path / "clock.db"
    clock = ManualClock()
    async with Store.open(db) as store:
        orch = Orchestrator(store, clock)
        item, _ = await orch.capture(CaptureRequest(intent="x", text="Some text."))
        [old] = await orch.claim("worker-a", 1, TTL_MS)
        assert await orch.put_artifact(old.lease, "extraction", enc(EXTRACTION), META) == 1
        clock.advance(TTL_MS - 1)
        assert await orch.requeue_expired() == 0  # not a millisecond early
        clock.advance(2)
        assert await orch.requeue_expired() == 1
        [new] = await orch.claim("worker-b", 1, TTL_MS)
        # The same run resumes where the stalled worker left it.
        assert new.lease.run_id == old.lease.run_id and set(new.done) == {"extraction"}

        await _refused_everything(orch, old.lease)
        await _finish(orch, new.lease)
        await _refused_everything(orch, old.lease)
        got = await orch.get(item.id, history=True)
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
    async with Store.open(db) as store:
        orch = Orchestrator(store, clock)
        item, _ = await orch.capture(CaptureRequest(intent="x", text="Some text."))
        [mine] = await orch.claim("worker-a", 1, TTL_MS)
        clock.advance(-HOUR_MS)
        assert await orch.requeue_expired() == 0
        assert await orch.claim("worker-b", 1, TTL_MS) == []
        # The heartbeat's order: renew the leases it holds, then look for expired ones.
        assert await orch.renew("worker-a", [item.id], TTL_MS) == {item.id}
        assert await orch.requeue_expired() == 0
        assert await orch.put_artifact(mine.lease, "extraction", enc(EXTRACTION), META) == 1
        clock.advance(HOUR_MS)  # the clock is put right again
        assert await orch.renew("worker-a", [item.id], TTL_MS) == {item.id}
        assert await orch.requeue_expired() == 0
        await _finish(orch, mine.lease)
        got = await orch.get(item.id, history=True)
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
    async with Store.open(db) as store, make_client() as http:
        orch = Orchestrator(store, clock)
        sup = Supervisor(
            orch,
            Pipeline(engine, http, FetchConfig()),
            owner="me",
            concurrency=2,
            batch_size=2,
            lease_ttl_s=ttl_ms / 1000,
            claim_interval_s=30,
            shutdown_grace_s=0,
        )
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            item, _ = await orch.capture(CaptureRequest(intent="x", text="Some text.\n\nMore."))
            with anyio.fail_after(10):
                await engine.entered.wait()
            for jump in (HOUR_MS, -2 * HOUR_MS):
                clock.advance(jump)
                # The next heartbeat renews from the new time, and requeues nothing.
                await _renewed_until(db, clock.now_ms() + ttl_ms)
                assert (await orch.get(item.id))["item"].status == "PROCESSING"
                assert sup.in_flight == 1
            engine.gate.set()
            with anyio.fail_after(10):
                await sup.wait_idle()
            sup.stop()
        got = await orch.get(item.id, history=True)
        assert got["item"].status == "READY"
        moves = [(e.from_status, e.to_status) for e in got["events"] if e.kind == "transition"]
        assert moves == [("CAPTURED", "QUEUED"), ("QUEUED", "PROCESSING"), ("PROCESSING", "READY")]
    assert check(db, acknowledged=[item.id]) == []
