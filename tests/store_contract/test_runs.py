"""Runs and their attempts: steps, updates, and an attempt that ends once."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from readdod.store.rows import RunRow
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_runs_read_back_oldest_first_with_their_updates_and_step(store: Store) -> None:
    late = rows.run("r2", "a", mode="REGENERATE", created_at=9)
    early = rows.run("r1", "a", created_at=4)
    await rows.insert(store, rows.item("a"), rows.item("b"), late, early)

    def unit(tx: UnitOfWork) -> RunRow | None:
        tx.update_run("r1", status="failed", error_code="AI_TIMEOUT", finished_at=8)
        tx.set_current_step("r2", "summary")
        return tx.run("r2")

    seen = await store.write(unit)
    found = await store.read(lambda tx: (tx.runs_for("a"), tx.runs_for("b"), tx.run("zz")))
    assert seen is not None and seen.current_step == "summary"
    runs, none, missing = found
    assert [r.run_id for r in runs] == ["r1", "r2"]
    assert runs[0] == rows.run(
        "r1", "a", created_at=4, status="failed", error_code="AI_TIMEOUT", finished_at=8
    )
    assert runs[1] == rows.run("r2", "a", mode="REGENERATE", created_at=9, current_step="summary")
    assert (none, missing) == ([], None)


async def test_an_attempt_ends_once_with_the_step_its_run_reached(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a"),
        rows.run("r1", "a"),
        rows.attempt("t1", "r1", "a", status="running"),
    )

    def end(tx: UnitOfWork) -> bool:
        tx.set_current_step("r1", "card")
        return tx.end_attempt("r1", "failed", 70, error_code="AI_TIMEOUT", error_message="slow")

    first = await store.write(end)
    again = await store.write(lambda tx: tx.end_attempt("r1", "succeeded", 90))
    none_open = await store.write(lambda tx: tx.end_attempt("zz", "cancelled", 90))
    last = await store.read(lambda tx: tx.last_attempt("r1"))
    assert (first, again, none_open) == (True, False, False)
    assert last is not None
    assert (last.status, last.finished_at, last.error_code, last.error_message, last.last_step) == (
        "failed",
        70,
        "AI_TIMEOUT",
        "slow",
        "card",
    )


async def test_attempts_come_oldest_first_across_an_items_runs(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a"),
        rows.item("b"),
        rows.run("r1", "a"),
        rows.run("r2", "a", created_at=2),
        rows.run("rb", "b"),
        rows.attempt("t3", "r1", "a", status="failed", created_at=5),
        rows.attempt("t1", "r2", "a", status="failed", created_at=2),
        rows.attempt("t2", "r1", "a", status="cancelled", created_at=3),
        rows.attempt("tb", "rb", "b", created_at=1),
    )

    def unit(tx: UnitOfWork) -> object:
        tx.insert_attempt(rows.attempt("t4", "r1", "a", created_at=7))
        return tx.last_attempt("r1")

    seen = await store.write(unit)
    found = await store.read(lambda tx: ([a.attempt_id for a in tx.attempts_for("a")]))
    last = await store.read(lambda tx: tx.last_attempt("r1"))
    assert found == ["t1", "t2", "t3", "t4"]
    assert seen == last == rows.attempt("t4", "r1", "a", created_at=7)


async def test_tokens_spent_go_to_the_open_attempt_and_counters_outlive_the_run(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("a", status="ARCHIVED"),
        rows.run("r1", "a", status="running"),
        rows.attempt("t1", "r1", "a", status="failed", created_at=1),
        rows.attempt("t2", "r1", "a", status="running", created_at=2),
    )

    def spend(tx: UnitOfWork) -> None:
        tx.spend("r1", 100, 20, 60)
        tx.spend("r1", 5, 1, 0)
        tx.spend("r1", 0, 0, 0)

    await store.write(spend)
    tried = await store.read(lambda tx: tx.attempts_for("a"))
    got = [(a.attempt_id, a.prompt_tokens, a.completion_tokens, a.cached_tokens) for a in tried]
    # A terminal attempt never changes: the running one spent them.
    assert got == [("t1", 0, 0, 0), ("t2", 105, 21, 60)]
    assert await store.read(lambda tx: tx.token_totals()) == (105, 21)

    def prune(tx: UnitOfWork) -> None:
        tx.update_run("r1", status="succeeded", finished_at=10)
        tx.end_attempt("r1", "succeeded", 10)
        tx.prune_history(
            finished_before=1000,
            cancelled_before=1000,
            failed_before=1000,
            keep_versions=0,
            dry_run=False,
        )

    await store.write(prune)
    assert await store.read(lambda tx: tx.attempts_for("a")) == []
    # Retention removed the run and its attempts; the totals stay.
    assert await store.read(lambda tx: tx.token_totals()) == (105, 21)
