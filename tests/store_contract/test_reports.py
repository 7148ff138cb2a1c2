"""Counts and reports: what `health`, `stats` and the metrics read."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_empty_store_reports_nothing(store: Store) -> None:
    def read(tx: UnitOfWork) -> object:
        return (
            tx.count_by_status(),
            tx.runs_by_status(),
            tx.attempts_by_status(),
            tx.backlog(),
            tx.failures_since(0),
            tx.run_outcomes_since(0),
            tx.step_durations(10),
            tx.token_totals(),
        )

    assert await store.read(read) == ({}, {}, {}, (0, None), 0, [], [], (0, 0))


async def test_counts_by_status_of_items_runs_and_attempts(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", status="READY"),
        rows.item("b", status="READY"),
        rows.item("c", status="QUEUED"),
        rows.item("d", status="FAILED_AI"),
        rows.run("ra", "a", status="succeeded"),
        rows.run("rb", "b", status="succeeded"),
        rows.run("rc", "c"),
        rows.run("rd", "d", status="failed"),
        rows.attempt("ta", "ra", "a", status="succeeded"),
        rows.attempt("td1", "rd", "d", status="failed"),
        rows.attempt("td2", "rd", "d", status="failed"),
        rows.attempt("tc", "rc", "c"),
    )
    found = await store.read(
        lambda tx: (tx.count_by_status(), tx.runs_by_status(), tx.attempts_by_status())
    )
    assert found == (
        {"READY": 2, "QUEUED": 1, "FAILED_AI": 1},
        {"succeeded": 2, "queued": 1, "failed": 1},
        {"succeeded": 1, "failed": 2, "queued": 1},
    )


async def test_backlog_counts_queued_items_and_when_the_oldest_became_due(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", created_at=10),
        rows.item("b", created_at=5, next_attempt_at=50),  # due at 50
        rows.item("c", created_at=20),
        rows.item("d", created_at=1, status="READY"),
    )
    assert await store.read(lambda tx: tx.backlog()) == (3, 10)


async def test_failures_outcomes_durations_and_tokens_since_a_time(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a"),
        rows.run("r1", "a", status="succeeded", started_at=100, finished_at=400),
        rows.run("r2", "a", status="succeeded", created_at=200, finished_at=300),
        rows.run("r3", "a", status="failed", started_at=500, finished_at=600),
        rows.run("r0", "a", status="succeeded", started_at=0, finished_at=50),
        rows.run("r4", "a", status="running", started_at=500),
    )

    def unit(tx: UnitOfWork) -> None:
        tx.insert_event(90, "a", None, "transition", "PROCESSING", "FAILED_AI", "system")
        tx.insert_event(100, "a", None, "transition", "PROCESSING", "FAILED_EXTRACTION", "system")
        tx.insert_event(110, "a", None, "transition", "READY", "FAILED_EXPORT", "system")
        tx.insert_event(120, "a", None, "transition", "PROCESSING", "READY", "system")
        tx.insert_event(130, "a", None, "step", None, "FAILED_AI", "system")
        tx.insert_event(1, "a", None, "step", None, None, "system", '{"step":"a","duration_ms":5}')
        tx.insert_event(2, "a", None, "step", None, None, "system", '{"step":"b"}')
        tx.insert_event(3, "a", None, "step", None, None, "system", '{"step":"c","duration_ms":7}')
        tx.insert_event(4, "a", None, "edit", None, None, "user", '{"step":"d","duration_ms":9}')
        tx.insert_event(
            5, "a", None, "step", None, None, "system", '{"step":"e","duration_ms":1.5}'
        )
        tx.insert_artifact("a", "summary", "system", "r1", "{}", '{"prompt_tokens":10}', 1)
        tx.insert_artifact(
            "a", "card", "system", "r1", "{}", '{"prompt_tokens":5,"completion_tokens":7}', 1
        )
        tx.insert_artifact("a", "score", "system", "r1", "{}", "{}", 1)

    await store.write(unit)

    def read(tx: UnitOfWork) -> object:
        return (
            tx.failures_since(100),
            sorted(tx.run_outcomes_since(300)),
            tx.step_durations(2),
            tx.step_durations(10),
            tx.token_totals(),
        )

    assert await store.read(read) == (
        2,
        [("failed", 1, 100.0), ("succeeded", 2, 200.0)],
        [("e", 1.5), ("c", 7.0)],
        [("e", 1.5), ("c", 7.0), ("a", 5.0)],
        (0, 0),  # tokens are counted when spent, not summed from artifacts' meta
    )
