"""The core on a real SQLite file, with a clock moved by hand."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from readdod.core import Core
from readdod.errors import IdempotencyConflict, InvalidTransition, StepError
from readdod.items.models import CaptureRequest, Todo
from readdod.runtime.clock import ManualClock
from readdod.store import SqliteStore
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock(), max_orphanings=3)


def _sqlite(o: Core) -> SqliteStore:
    """The SQLite store under ``o`` (its file and its commit counters)."""
    assert isinstance(o.store, SqliteStore)
    return o.store


async def _capture(o: Core, intent: str = "x", priority: str | None = None) -> str:
    item, _ = await o.commands.capture(
        CaptureRequest(intent=intent, text="body", priority=priority)
    )
    return item.id


async def _status(o: Core, item_id: str) -> str:
    return str((await o.reads.get(item_id))["item"].status)


async def test_claim_takes_p0_first_then_oldest_in_batches(orch: Core) -> None:
    clock = orch.clock
    assert isinstance(clock, ManualClock)
    ids = []
    for prio in ["P2", "P3", "P0", "P2", "P0"]:
        ids.append(await _capture(orch, priority=prio))
        clock.advance(10)
    first = await orch.leases.claim("w", 3, 30_000)
    assert [c.lease.item_id for c in first] == [ids[2], ids[4], ids[0]]
    second = await orch.leases.claim("w", 3, 30_000)
    assert [c.lease.item_id for c in second] == [ids[3], ids[1]]
    assert await orch.leases.claim("w", 3, 30_000) == []


async def test_a_lost_lease_can_never_write(orch: Core) -> None:
    item_id = await _capture(orch)
    [claimed] = await orch.leases.claim("old", 1, 30_000)
    stale = claimed.lease
    assert await orch.book.put_artifact(stale, "summary", enc(SUMMARY), META) == 1
    # The worker is declared dead; someone else takes the item.
    assert await orch.leases.recover() == (1, 0)
    [again] = await orch.leases.claim("new", 1, 30_000)
    assert again.lease.run_id == stale.run_id and "summary" in again.done
    assert await orch.book.put_artifact(stale, "score", enc(SCORE), META) is None
    assert await orch.book.fail(stale, "score", StepError("boom")) is None
    assert await orch.book.complete(stale) is None
    assert not await orch.book.release(stale, "pause")
    got = await orch.reads.get(item_id)
    assert got["item"].status == "PROCESSING" and got["item"].failure is None
    assert "score" not in got["artifacts"]


async def test_one_artifact_per_run_and_step(orch: Core) -> None:
    await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 30_000)
    assert await orch.book.put_artifact(c.lease, "summary", enc(SUMMARY), META) == 1
    assert await orch.book.put_artifact(c.lease, "summary", enc(SUMMARY), META) == 1
    rows = await orch.store.read(lambda tx: tx.all_artifacts(c.lease.item_id))
    assert [(a.artifact_type, a.version) for a in rows] == [("summary", 1)]


async def test_gate_needs_all_four_of_the_same_run(orch: Core) -> None:
    item_id = await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 30_000)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS)]:
        await orch.book.put_artifact(c.lease, step, enc(payload), META)
    item = await orch.book.complete(c.lease)
    assert item is not None and item.status == "FAILED_AI"
    assert item.failure is not None and item.failure.error_code == "RUN_INCONSISTENT"
    assert "card is missing" in item.failure.message
    assert item.failure.failed_step == "card"

    # A retry resumes the same run; with the card, the gate passes.
    _, run_id = await orch.commands.process(item_id)
    assert run_id == c.lease.run_id
    [c2] = await orch.leases.claim("w", 1, 30_000)
    assert set(c2.done) == {"summary", "score", "todos"}
    await orch.book.put_artifact(c2.lease, "card", enc(CARD), META)
    item = await orch.book.complete(c2.lease)
    assert item is not None and item.status == "READY" and item.failure is None


async def test_the_last_step_and_the_gate_commit_in_one_unit(orch: Core) -> None:
    item_id = await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 30_000)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS)]:
        await orch.book.put_artifact(c.lease, step, enc(payload), META)
    assert await _status(orch, item_id) == "PROCESSING"
    before = orch.store.counters()
    assert await orch.book.put_artifact(c.lease, "card", enc(CARD), META, finish=True) == 1
    assert orch.store.counters().units - before.units == 1
    got = await orch.reads.get(item_id, history=True)
    assert got["item"].status == "READY" and got["runs"][0].status == "succeeded"
    with sqlite3.connect(_sqlite(orch).path) as db:
        assert db.execute("SELECT lease_owner FROM items").fetchone() == (None,)


async def test_gate_rejects_an_invalid_payload(orch: Core) -> None:
    await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 30_000)
    bad = msgspec.structs.replace(TODOS, items=[Todo(title="r", kind="read", estimate_min=1)] * 3)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", bad), ("card", CARD)]:
        await orch.book.put_artifact(c.lease, step, enc(payload), META)
    item = await orch.book.complete(c.lease)
    assert item is not None and item.failure is not None
    assert (item.status, item.failure.error_code) == ("FAILED_AI", "AI_SCHEMA_INVALID")
    # The gate is no step of the contract: its failure is the step that made the bad artifact.
    assert item.failure.failed_step == "todos" and item.failure.retryable


async def test_orphaned_too_often_in_a_row_fails_with_worker_lost(orch: Core) -> None:
    item_id = await _capture(orch)
    for expected in (1, 2):
        await orch.leases.claim("w", 1, 30_000)
        assert await orch.leases.recover() == (1, 0)
        assert (await orch.reads.get(item_id))["item"].status == "QUEUED"
        count = await orch.store.read(lambda tx: tx.item(item_id).orphan_count)  # type: ignore[union-attr]
        assert count == expected
    await orch.leases.claim("w", 1, 30_000)
    assert await orch.leases.recover() == (0, 1)
    item = (await orch.reads.get(item_id))["item"]
    assert item.status == "FAILED_EXTRACTION"
    assert item.failure.error_code == "WORKER_LOST" and item.failure.failed_step == "extract"


async def test_finishing_a_step_resets_the_orphan_count(orch: Core) -> None:
    item_id = await _capture(orch)
    steps = {"summary": SUMMARY, "score": SCORE, "todos": TODOS, "card": CARD}
    for step, payload in steps.items():
        [c] = await orch.leases.claim("w", 1, 30_000)
        await orch.book.put_artifact(c.lease, step, enc(payload), META)
        assert await orch.leases.recover() == (1, 0)
        count = await orch.store.read(lambda tx: tx.item(item_id).orphan_count)  # type: ignore[union-attr]
        assert count == 1
    assert await _status(orch, item_id) == "QUEUED"


async def test_worker_lost_in_an_ai_step_is_failed_ai(orch: Core) -> None:
    item_id = await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 30_000)
    await orch.book.put_artifact(
        c.lease,
        "extraction",
        enc({"text": "body", "source": "provided_text", "extractor": "t"}),
        META,
    )
    for _ in range(3):
        await orch.leases.recover()
        await orch.leases.claim("w", 1, 30_000)
    await orch.leases.recover()
    item = (await orch.reads.get(item_id))["item"]
    assert (item.status, item.failure.error_code, item.failure.failed_step) == (
        "FAILED_AI",
        "WORKER_LOST",
        "summarize",
    )


async def test_expired_lease_is_requeued(orch: Core) -> None:
    clock = orch.clock
    assert isinstance(clock, ManualClock)
    item_id = await _capture(orch)
    [c] = await orch.leases.claim("w", 1, 1_000)
    assert await orch.leases.requeue_expired() == 0
    assert await orch.leases.renew("w", [item_id], 1_000) == {item_id}
    clock.advance(1_500)
    assert await orch.leases.requeue_expired() == 1
    assert await _status(orch, item_id) == "QUEUED"
    assert await orch.leases.renew("w", [item_id], 1_000) == set()
    assert await orch.book.put_artifact(c.lease, "summary", enc(SUMMARY), META) is None


async def test_one_heartbeat_renews_many_leases_in_one_transaction(orch: Core) -> None:
    """Heartbeats are batched: every lease a worker holds, one unit, one statement (the ids
    are one parameter, so no bound-parameter limit splits them)."""
    async with anyio.create_task_group() as tg:
        for i in range(700):
            tg.start_soon(_capture, orch, f"intent {i}")
    claimed = await orch.leases.claim("w", 700, 1_000)
    assert len(claimed) == 700
    ids = [c.lease.item_id for c in claimed]
    with sqlite3.connect(_sqlite(orch).path) as db:  # another worker took one over
        db.execute("UPDATE items SET lease_owner = 'thief' WHERE id = ?", (ids[3],))
    before = orch.store.counters()
    renewed = await orch.leases.renew("w", [*ids, "no-such-item"], 1_000)
    after = orch.store.counters()
    assert renewed == set(ids) - {ids[3]}
    assert after.units - before.units == 1
    assert after.transactions - before.transactions == 1
    # One UPDATE for the 700 ids, plus BEGIN and COMMIT.
    assert after.statements - before.statements == 3


async def test_refused_moves_leave_no_trace(orch: Core) -> None:
    item_id = await _capture(orch)
    before = await orch.reads.get(item_id, history=True)
    with pytest.raises(InvalidTransition) as exc:
        await orch.commands.unarchive(item_id)
    assert exc.value.error_code == "INVALID_TRANSITION"
    after = await orch.reads.get(item_id, history=True)
    assert len(after["events"]) == len(before["events"])


async def test_concurrent_writes_share_commits(orch: Core) -> None:
    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(_capture, orch, f"intent {i}")
    assert _sqlite(orch).units >= 200
    assert _sqlite(orch).commits < _sqlite(orch).units / 5
    items, cursor = await orch.reads.list_items(limit=1000)
    assert len(items) == 200 and cursor is None


async def test_captures_are_durable_once_acknowledged(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "d.db") as store:
        o = Core(store, ManualClock())
        item_id = await _capture(o)
        # Another connection, with the store still open: the answer came after the commit.
        db = sqlite3.connect(tmp_path / "d.db")
        row = db.execute("SELECT status FROM items WHERE id=?", (item_id,)).fetchone()
        assert row == ("QUEUED",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        db.close()


async def test_process_request_id_queues_once(orch: Core) -> None:
    item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    orch.commands.auto_process = False
    c2, _ = await orch.commands.capture(CaptureRequest(intent="y", text="body"))
    first = await orch.commands.process(c2.id, request_id="req-1")
    again = await orch.commands.process(c2.id, request_id="req-1")
    assert first[1] == again[1]
    runs = await orch.store.read(lambda tx: tx.runs_for(c2.id))
    assert len(runs) == 1
    with pytest.raises(IdempotencyConflict):
        await orch.commands.process(item.id, request_id="req-1")
    # Without the key the same call is refused: the item is already QUEUED.
    with pytest.raises(InvalidTransition):
        await orch.commands.process(c2.id)


async def test_a_failing_unit_does_not_sink_the_others_in_its_batch(orch: Core) -> None:
    """Units share transactions; one that raises loses only its own writes."""
    target = await _capture(orch)
    refused: list[BaseException] = []

    async def unarchive() -> None:
        try:
            await orch.commands.unarchive(target)  # QUEUED cannot be unarchived
        except InvalidTransition as exc:
            refused.append(exc)

    commits, units = _sqlite(orch).commits, _sqlite(orch).units
    async with anyio.create_task_group() as tg:
        for i in range(100):
            tg.start_soon(_capture, orch, f"intent {i}")
            if i % 25 == 0:
                tg.start_soon(unarchive)
    assert len(refused) == 4
    items, _ = await orch.reads.list_items(limit=1000)
    assert len(items) == 101
    assert _sqlite(orch).units - units == 104
    # Shared commits: far fewer transactions than units, failures included.
    assert _sqlite(orch).commits - commits < 104 / 4
    assert await _status(orch, target) == "QUEUED"
