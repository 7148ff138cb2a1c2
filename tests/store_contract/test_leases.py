"""Leases: the claim's order and limits, renewals, expiry, and who holds what."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_a_claim_takes_due_queued_items_p0_first_then_oldest_up_to_its_limit(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("a", priority="P2", created_at=1),
        rows.item("b", priority="P0", created_at=5),
        rows.item("c", priority="P1", created_at=2),
        rows.item("d", priority="P0", created_at=3),
        rows.item("e", priority="P0", created_at=0, next_attempt_at=500),  # not yet due
        rows.item("f", priority="P0", created_at=0, status="READY"),
        rows.item("g", priority="P3", created_at=0),
    )
    first = await store.write(lambda tx: tx.claim("w1", 3, 1100, 100))
    second = await store.write(lambda tx: tx.claim("w2", 10, 1200, 100))
    third = await store.write(lambda tx: tx.claim("w2", 10, 1200, 100))
    later = await store.write(lambda tx: tx.claim("w3", 10, 1700, 600))
    assert [r.id for r in first] == ["d", "b", "c"]
    assert [r.id for r in second] == ["a", "g"]
    assert third == []
    assert [r.id for r in later] == ["e"]
    assert all(
        (r.status, r.lease_owner, r.lease_expires_at, r.updated_at)
        == ("PROCESSING", "w1", 1100, 100)
        for r in first
    )
    stored = await store.read(lambda tx: tx.item("d"))
    assert stored == first[0]


async def test_queue_due_says_whether_a_claim_would_find_work(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", next_attempt_at=500),
        rows.item("b", status="READY"),
    )
    due = await store.read(lambda tx: (tx.queue_due(499), tx.queue_due(500)))
    assert due == (False, True)


async def test_leases_expire_renew_only_for_their_owner_and_say_who_holds_them(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("a", current_run_id="ra"),
        rows.item("b", current_run_id="rb"),
        rows.item("c", current_run_id="rc"),
    )
    await store.write(lambda tx: tx.claim("w1", 2, 1000, 10))
    await store.write(lambda tx: tx.claim("w2", 1, 2000, 10))

    def leases(tx: UnitOfWork) -> object:
        return (
            sorted(r.id for r in tx.held_by("w1")),
            sorted(r.id for r in tx.held_by("w2")),
            sorted(r.id for r in tx.lost_leases(1000)),
            sorted(r.id for r in tx.lost_leases(1001)),
            sorted(r.id for r in tx.lost_leases(2001)),
            [tx.holds_lease("a", "w1", "ra"), tx.holds_lease("a", "w2", "ra")],
            tx.holds_lease("a", "w1", "rb"),
        )

    assert await store.read(leases) == (
        ["a", "b"],
        ["c"],
        [],
        ["a", "b"],
        ["a", "b", "c"],
        [True, False],
        False,
    )
    renewed = await store.write(lambda tx: tx.renew_leases("w1", ["a", "c", "zz"], 3000))
    assert renewed == {"a"}
    expired = await store.read(lambda tx: sorted(r.id for r in tx.lost_leases(2500)))
    assert expired == ["b", "c"]
    # A lease ends with its item's PROCESSING: it is neither held nor renewed after.
    await store.write(lambda tx: tx.set_status("a", "PROCESSING", "READY"))
    after = await store.write(lambda tx: tx.renew_leases("w1", ["a", "b"], 4000))
    held = await store.read(lambda tx: [r.id for r in tx.held_by("w1")])
    assert after == {"b"}
    assert held == ["b"]


async def test_a_claimed_runs_start_with_one_more_attempt_each(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", current_run_id="ra"),
        rows.run("ra", "a"),
        rows.attempt("at-a", "ra", "a"),
        rows.item("b", current_run_id="rb"),
        rows.run("rb", "b", status="failed", attempts=1, started_at=3, current_step="summary"),
    )

    def start(tx: UnitOfWork) -> object:
        runs = tx.start_runs(["ra", "rb"], "w1", 50)
        tx.start_attempts(["ra", "rb"], "w1", 50, lambda now: f"new-{now}")
        return runs

    runs = await store.write(start)
    attempts = await store.read(lambda tx: tx.attempts_for("a") + tx.attempts_for("b"))
    assert isinstance(runs, dict)
    assert {k: (r.status, r.attempts, r.worker_id, r.started_at) for k, r in runs.items()} == {
        "ra": ("running", 1, "w1", 50),
        "rb": ("running", 2, "w1", 3),
    }
    assert [
        (a.attempt_id, a.run_id, a.mode, a.status, a.worker_id, a.started_at, a.first_step)
        for a in attempts
    ] == [
        ("at-a", "ra", "PROCESS", "running", "w1", 50, "extraction"),
        ("new-50", "rb", "RESUME", "running", "w1", 50, "summary"),
    ]


async def test_ready_from_runs_names_items_a_run_made_ready(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", status="READY"),
        rows.item("b", status="READY"),
        rows.item("c", status="READY"),
        rows.item("d", status="QUEUED"),
    )

    def unit(tx: UnitOfWork) -> None:
        tx.insert_event(1, "a", None, "transition", "PROCESSING", "READY", "system")
        tx.insert_event(1, "b", None, "transition", "PROCESSING", "READY", "system")
        tx.insert_event(2, "b", None, "transition", "READY", "SHIPPED", "system")
        tx.insert_event(3, "b", None, "transition", "SHIPPED", "READY", "user")
        tx.insert_event(1, "c", None, "transition", "QUEUED", "PROCESSING", "system")
        tx.insert_event(2, "c", None, "transition", "PROCESSING", "READY", "system")
        tx.insert_event(3, "c", None, "step", None, None, "system")
        tx.insert_event(1, "d", None, "transition", "PROCESSING", "QUEUED", "system")

    await store.write(unit)
    assert await store.read(lambda tx: tx.ready_from_runs()) == ["a", "c"]


async def test_lost_leases_are_the_expired_ones_or_every_one_and_count_their_losses(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("a", current_run_id="ra"),
        rows.item("b", current_run_id="rb", orphan_count=2),
        rows.item("c", current_run_id="rc", orphan_count=1),
    )
    await store.write(lambda tx: tx.claim("w1", 2, 1000, 10))
    await store.write(lambda tx: tx.claim("w2", 1, 5000, 10))

    def lost(tx: UnitOfWork) -> object:
        return (
            [r.id for r in tx.lost_leases(1001)],
            [r.id for r in tx.lost_leases(None)],
            [r.id for r in tx.lost_leases(None, at_least=1)],
            [r.id for r in tx.lost_leases(None, at_least=2)],
        )

    assert await store.read(lost) == (["a", "b"], ["a", "b", "c"], ["b", "c"], ["b"])


async def test_a_lost_lease_is_requeued_with_its_run_resumed_by_a_new_attempt(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("a", current_run_id="ra"),
        rows.item("b", current_run_id="rb", orphan_count=2),
        rows.item("c", current_run_id="rc"),
        rows.run("ra", "a"),
        rows.run("rb", "b"),
        rows.run("rc", "c"),
    )
    await store.write(lambda tx: tx.claim("w", 3, 1000, 10))
    await store.write(lambda tx: tx.start_runs(["ra", "rb", "rc"], "w", 10))
    await store.write(lambda tx: tx.start_attempts(["ra"], "w", 10, lambda _: "01RUNNING"))
    await store.write(lambda tx: tx.renew_leases("w", ["c"], 9000))

    def requeue(tx: UnitOfWork) -> object:
        return tx.requeue_lost(
            1001,
            below=3,
            now=50,
            reason="lease_expired",
            error_code="WORKER_LOST",
            attempt_stamp="01STAMP",
            sample=5,
        )

    # b reached the limit of 3 losses: the core fails it; c's lease is alive.
    assert await store.write(requeue) == (1, [("a", "ra", 1)])

    def after(tx: UnitOfWork) -> tuple[Any, ...]:
        a, b, c = (tx.item(i) for i in "abc")
        assert a is not None and b is not None and c is not None
        run = tx.run("ra")
        assert run is not None
        return (
            (a.status, a.orphan_count, a.lease_owner, a.lease_expires_at, a.updated_at),
            (b.status, c.status),
            run.status,
            [(e.kind, e.from_status, e.to_status, e.detail) for e in tx.events_for("a")],
            [(t.mode, t.status, t.attempt_id[:7]) for t in tx.attempts_for("a")][-1],
            [(t.status, t.error_code, t.finished_at) for t in tx.attempts_for("a")][:-1],
        )

    state = await store.read(after)
    assert state[:3] == (
        ("QUEUED", 1, None, None, 50),
        ("PROCESSING", "PROCESSING"),
        "queued",
    )
    assert [(*e[:3], msgspec.json.decode(e[3])) for e in state[3]] == [
        ("transition", "PROCESSING", "QUEUED", {"reason": "lease_expired", "orphan_count": 1})
    ]
    assert state[4] == ("RESUME", "queued", "01STAMP")
    # The lost worker's attempt was killed with it: cancelled, as seed 002 has it.
    assert state[5] == [("cancelled", "WORKER_LOST", 50)]
    assert await store.write(requeue) == (0, [])


async def test_every_claim_issues_a_greater_token_and_a_stale_one_fences_nothing(
    store: Store,
) -> None:
    """The same owner, the same run, claimed again after its lease ran out: only the
    token tells the new claim's writes from a late write of the earlier one."""
    await rows.insert(store, rows.item("a", current_run_id="ra"), rows.run("ra", "a"))
    first = await store.write(lambda tx: tx.claim("w1", 1, 100, 10))

    def expire(tx: UnitOfWork) -> int:
        return tx.requeue_lost(
            200,
            below=10,
            now=150,
            reason="lease_expired",
            error_code="WORKER_LOST",
            attempt_stamp="01STAMP",
            sample=1,
        )[0]

    assert await store.write(expire) == 1
    second = await store.write(lambda tx: tx.claim("w1", 1, 1000, 160))
    old, new = first[0].lease_token, second[0].lease_token
    assert new > old >= 1

    def fenced(tx: UnitOfWork, token: int, title: str) -> tuple[object, ...]:
        return (
            tx.holds_lease("a", "w1", "ra", token=token),
            tx.step_slot("a", "summary", "w1", "ra", token=token)[0],
            tx.update_fenced("a", "w1", "ra", token=token, title=title),
        )

    assert await store.write(lambda tx: fenced(tx, old, "late")) == (False, None, False)
    assert await store.write(lambda tx: fenced(tx, new, "fresh")) == (True, 1, True)
    row = await store.read(lambda tx: tx.item("a"))
    assert row is not None and (row.title, row.lease_token) == ("fresh", new)
    # Without a token the fence is owner and run, as before.
    assert await store.read(lambda tx: tx.holds_lease("a", "w1", "ra"))


async def test_a_restarted_daemon_takes_back_its_dead_selfs_leases_and_no_one_elses(
    store: Store,
) -> None:
    await rows.insert(
        store,
        *(rows.item(i, current_run_id=f"r{i}", created_at=n) for n, i in enumerate("abc")),
        *(rows.run(f"r{i}", i) for i in "abc"),
    )
    await store.write(lambda tx: tx.claim("host/d1:100:aa", 1, 5000, 10))  # a: its dead self
    await store.write(lambda tx: tx.claim("host/d10:200:bb", 1, 5000, 10))  # b: a live daemon
    await store.write(lambda tx: tx.claim("host/d2:300:cc", 1, 50, 10))  # c: expired

    def lost(tx: UnitOfWork) -> object:
        return [r.id for r in tx.lost_leases(100, owned_by="host/d1:")]

    assert await store.read(lost) == ["a", "c"]

    def requeue(tx: UnitOfWork) -> object:
        return tx.requeue_lost(
            100,
            below=10,
            now=100,
            reason="orphan_recovery",
            error_code="WORKER_LOST",
            attempt_stamp="01STAMP",
            sample=5,
            owned_by="host/d1:",
        )

    assert await store.write(requeue) == (2, [("a", "ra", 1), ("c", "rc", 1)])
    b = await store.read(lambda tx: tx.item("b"))
    assert b is not None and (b.status, b.lease_owner) == ("PROCESSING", "host/d10:200:bb")
