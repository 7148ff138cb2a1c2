"""Set-based recovery: every orphan handled in a few statements, as one move per item would.

Real SQLite files, the real core; rows are back-dated by hand where a
test needs an item orphaned before or carrying automatic retries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from readdod.core import Core
from readdod.core.leases import ORPHAN_LINES, WORKER_LOST_MESSAGE
from readdod.items import urls
from readdod.items.models import CaptureRequest, Failure
from readdod.runtime.clock import ManualClock, iso
from readdod.steps import wire_step
from readdod.store import SqliteStore
from tests.payloads import META

pytestmark = pytest.mark.anyio

MAX = 3
EXTRACTION = msgspec.json.encode({"text": "body", "source": "provided_text", "extractor": "t"})


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock(), max_orphanings=MAX)


async def _sql(o: Core, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
    assert isinstance(o.store, SqliteStore)
    return await o.store.write(lambda tx: tx.conn.execute(sql, args).fetchall())


async def _in_flight(o: Core, n: int, *, lease_ms: int = 30_000) -> list[str]:
    """``n`` items claimed (PROCESSING); every third has finished its extraction."""
    ids = []
    for i in range(n):
        item, _ = await o.commands.capture(CaptureRequest(intent=f"intent {i}", text=f"Body {i}."))
        ids.append(item.id)
    claimed = await o.leases.claim("w", n, lease_ms)
    assert len(claimed) == n
    for c in claimed[::3]:
        assert await o.book.put_artifact(c.lease, "extraction", EXTRACTION, META) == 1
    return ids


async def _before(o: Core) -> dict[str, dict[str, Any]]:
    rows = await _sql(
        o,
        "SELECT i.id, i.current_run_id, i.orphan_count, i.auto_retries, r.current_step,"
        " r.attempts, i.failure, i.next_attempt_at FROM items i JOIN runs r"
        " ON r.run_id = i.current_run_id WHERE i.status = 'PROCESSING'",
    )
    keys = ("run", "orphans", "auto", "step", "attempts", "failure", "next")
    return {r[0]: dict(zip(keys, r[1:], strict=True)) for r in rows}


def _expected(item_id: str, b: dict[str, Any], now: int, reason: str) -> dict[str, Any]:
    """What one move per item (requeue, or WORKER_LOST past the limit) leaves behind."""
    count = b["orphans"] + 1
    step = b["step"] or "extraction"
    if count < MAX:
        return {
            "status": "QUEUED",
            "failure": b["failure"],
            "next": b["next"],
            "run": ("queued", None, None, None),
            "event": {"reason": reason, "orphan_count": count},
        }
    message = (
        f"the worker processing this item was lost {count} times in a row during"
        f" step {wire_step(step)}; it may crash readdod. Retry with `readdod process {item_id}`."
    )
    assert urls.redact_credentials(message) == message
    # [retry] worker_lost: once, 600 s on, unless the item was retried automatically before.
    due = now + 600_000 if b["auto"] < 1 else 0
    failure = Failure(
        failed_step=wire_step(step),
        error_code="WORKER_LOST",
        message=message,
        retryable=True,
        attempts=b["attempts"],
        last_attempt_at=iso(now),
        next_attempt_at=iso(due) if due else None,
        auto_retries=b["auto"],
    )
    return {
        "status": "FAILED_EXTRACTION" if step == "extraction" else "FAILED_AI",
        "failure": msgspec.json.encode(failure).decode(),
        "next": due,
        "run": ("failed", "WORKER_LOST", message, now),
        "event": {
            "step": step,
            "error_code": "WORKER_LOST",
            "message": message,
            "next_attempt_at": iso(due) if due else None,
        },
    }


async def _check(
    o: Core, before: dict[str, dict[str, Any]], now: int, reason: str
) -> tuple[int, int]:
    """Every orphan's item, run and event row against what a single move writes."""
    requeued = failed = 0
    for item_id, b in before.items():
        want = _expected(item_id, b, now, reason)
        [item] = await _sql(
            o,
            "SELECT status, orphan_count, lease_owner, lease_expires_at, updated_at, failure,"
            " next_attempt_at, current_run_id FROM items WHERE id = ?",
            (item_id,),
        )
        assert item == (
            want["status"],
            b["orphans"] + 1,
            None,
            None,
            now,
            want["failure"],
            want["next"],
            b["run"],
        ), item_id
        [run] = await _sql(
            o,
            "SELECT status, error_code, error_message, finished_at FROM runs WHERE run_id = ?",
            (b["run"],),
        )
        assert run == want["run"]
        events = await _sql(
            o,
            "SELECT at, run_id, kind, from_status, to_status, trigger, detail FROM events"
            " WHERE item_id = ? AND from_status = 'PROCESSING'",
            (item_id,),
        )
        assert len(events) == 1
        at, run_id, kind, src, dst, trigger, detail = events[0]
        assert (at, run_id, kind, src, dst, trigger) == (
            now,
            b["run"],
            "transition",
            "PROCESSING",
            want["status"],
            "system",
        )
        # Byte for byte what the core's own encoder writes for that detail.
        assert detail == msgspec.json.encode(want["event"]).decode()
        if want["status"] == "QUEUED":
            requeued += 1
        else:
            failed += 1
    return requeued, failed


async def test_bulk_recovery_is_one_move_per_item_with_mixed_counts(orch: Core) -> None:
    n = ORPHAN_LINES + 50
    ids = await _in_flight(orch, n)
    # Orphaned before: 0, 1 or 2 times (2 reaches the limit of 3 now); some with auto retries.
    for i, item_id in enumerate(ids):
        await _sql(
            orch,
            "UPDATE items SET orphan_count = ?, auto_retries = ? WHERE id = ?",
            (i % 3, i % 4 // 3, item_id),
        )
    # A second claim for some runs, so that attempts differ.
    some = ids[::5]
    await _sql(
        orch, f"UPDATE runs SET attempts = 2 WHERE item_id IN ({', '.join('?' * len(some))})", some
    )
    before = await _before(orch)
    assert len(before) == n
    clock = orch.clock
    assert isinstance(clock, ManualClock)
    clock.advance(1234)
    now = clock.now_ms()

    with capture_logs() as logs:
        requeued, failed = await orch.leases.recover()
    assert (requeued, failed) == await _check(orch, before, now, "orphan_recovery")
    assert requeued > 0 and failed > 0
    assert {f["step"] for f in before.values()} == {"extraction", "summary"}

    # Per-item lines for the first ORPHAN_LINES orphans (by id), then one line for the rest.
    first = sorted(ids)[:ORPHAN_LINES]
    moved = [e for e in logs if e["event"] == "item.transition"]
    assert [e["item_id"] for e in moved] == first
    for e in moved:
        want = _expected(e["item_id"], before[e["item_id"]], now, "orphan_recovery")
        assert e["to"] == want["status"] and e["from"] == "PROCESSING"
        assert {k: e[k] for k in want["event"]} == want["event"]
    requeued_lines = [e["item_id"] for e in logs if e["event"] == "recovery.requeued"]
    assert requeued_lines == [e["item_id"] for e in moved if e["to"] == "QUEUED"]
    [rest] = [e for e in logs if e["event"] == "recovery.unlisted"]
    assert rest["count"] == n - ORPHAN_LINES
    assert (rest["requeued"], rest["failed"], rest["reason"]) == (
        requeued,
        failed,
        "orphan_recovery",
    )

    # Nothing is left in flight; search still finds the items (the FTS rows are intact).
    assert await _sql(orch, "SELECT count(*) FROM items WHERE status = 'PROCESSING'") == [(0,)]
    found, _ = await orch.reads.list_items(query=f"intent {n - 1}")
    assert [i.id for i in found] == [ids[-1]]
    # The requeued resume their run, the failed wait for a person.
    claimed = await orch.leases.claim("new", n, 30_000)
    assert {c.lease.item_id for c in claimed} == {
        i for i, b in before.items() if b["orphans"] + 1 < MAX
    }
    assert all(c.lease.run_id == before[c.lease.item_id]["run"] for c in claimed)


async def test_a_worker_lost_message_names_the_step_and_the_item(orch: Core) -> None:
    [item_id] = await _in_flight(orch, 1)
    await _sql(orch, "UPDATE items SET orphan_count = ? WHERE id = ?", (MAX - 1, item_id))
    with capture_logs() as logs:
        assert await orch.leases.recover() == (0, 1)
    failure = (await orch.reads.get(item_id))["item"].failure
    assert failure.message == WORKER_LOST_MESSAGE % (MAX, "summarize", item_id)
    assert "lost 3 times" in failure.message and f"readdod process {item_id}" in failure.message
    # Retryable by a person, and by itself once the daemon has run cleanly for a while.
    assert failure.failed_step == "summarize" and failure.retryable
    assert failure.next_attempt_at is not None
    assert [e["event"] for e in logs] == ["item.transition", "retry.scheduled"]


async def test_expired_leases_take_the_same_path_and_only_they(orch: Core) -> None:
    clock = orch.clock
    assert isinstance(clock, ManualClock)
    short = await _in_flight(orch, 6, lease_ms=1_000)
    long = await _in_flight(orch, 4, lease_ms=60_000)
    await _sql(orch, "UPDATE items SET orphan_count = ? WHERE id = ?", (MAX - 1, short[0]))
    clock.advance(1_500)
    before = await _before(orch)
    expired = {i: b for i, b in before.items() if i in short}
    with capture_logs() as logs:
        assert await orch.leases.requeue_expired() == len(short)
    assert await _check(orch, expired, clock.now_ms(), "lease_expired") == (len(short) - 1, 1)
    still = await _sql(
        orch,
        f"SELECT count(*) FROM items WHERE status = 'PROCESSING'"
        f" AND lease_owner = 'w' AND id IN ({', '.join('?' * len(long))})",
        long,
    )
    assert still == [(len(long),)]
    assert not any(e["event"] == "recovery.unlisted" for e in logs)
    assert {e["reason"] for e in logs if e["event"] == "recovery.requeued"} == {"lease_expired"}
    assert await orch.leases.requeue_expired() == 0


async def test_nothing_in_flight_is_a_no_op(orch: Core) -> None:
    await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    with capture_logs() as logs:
        assert await orch.leases.recover() == (0, 0)
    assert logs == []
    assert await _sql(orch, "SELECT count(*) FROM events WHERE from_status = 'PROCESSING'") == [
        (0,)
    ]


async def test_recovery_costs_one_transaction_and_the_same_statements_for_any_count(
    tmp_path: Path,
) -> None:
    """Set-based: the statements recovery runs do not grow with the number of orphans."""
    costs = []
    for n in (3, ORPHAN_LINES + 20):
        async with SqliteStore.open(tmp_path / f"{n}.db") as store:
            o = Core(store, ManualClock(), max_orphanings=MAX)
            await _in_flight(o, n)
            before = store.counters()
            assert await o.leases.recover() == (n, 0)
            after = store.counters()
        costs.append(
            (after.transactions - before.transactions, after.statements - before.statements)
        )
    assert costs[0] == costs[1]
    assert costs[0][0] == 1
