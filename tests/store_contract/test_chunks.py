"""Chunks of a long text: each keeps its own state across failures and resumes."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


def _states(tx: UnitOfWork, step: str | None = None) -> list[tuple[str, int, str, str | None]]:
    return [(c.step, c.idx, c.status, c.model) for c in tx.chunks("r1", step)]


async def test_chunks_reset_update_reopen_and_settle(store: Store) -> None:
    await rows.insert(store, rows.item("a"), rows.run("r1", "a"))

    def start(tx: UnitOfWork) -> None:
        tx.reset_chunks("r1", "summary", 3, "m1", 10)
        tx.reset_chunks("r1", "card", 1, "m1", 10)
        tx.update_chunk("r1", "summary", 0, status="done", output="zero", updated_at=11)
        tx.update_chunk("r1", "summary", 1, status="processing", updated_at=11)
        tx.update_chunk(
            "r1",
            "summary",
            2,
            status="error",
            retries=2,
            last_error_code="AI_TIMEOUT",
            last_error_message="slow",
            updated_at=12,
        )

    await store.write(start)
    started = await store.read(lambda tx: (_states(tx), _states(tx, "summary")))
    assert started == (
        [
            ("card", 0, "pending", "m1"),
            ("summary", 0, "done", "m1"),
            ("summary", 1, "processing", "m1"),
            ("summary", 2, "error", "m1"),
        ],
        [
            ("summary", 0, "done", "m1"),
            ("summary", 1, "processing", "m1"),
            ("summary", 2, "error", "m1"),
        ],
    )
    failed = (await store.read(lambda tx: tx.chunks("r1", "summary")))[2]
    assert (failed.retries, failed.last_error_code, failed.last_error_message) == (
        2,
        "AI_TIMEOUT",
        "slow",
    )

    await store.write(lambda tx: tx.settle_chunks("r1", 20))
    settled = await store.read(lambda tx: _states(tx, "summary"))
    assert settled == [
        ("summary", 0, "done", "m1"),
        ("summary", 1, "pending", "m1"),
        ("summary", 2, "error", "m1"),
    ]
    await store.write(lambda tx: tx.reopen_chunks("r1", "summary", "m2", 30))
    reopened = await store.read(lambda tx: tx.chunks("r1", "summary"))
    assert [(c.status, c.model, c.output, c.updated_at) for c in reopened] == [
        ("done", "m1", "zero", 11),
        ("pending", "m2", None, 30),
        ("pending", "m2", None, 30),
    ]
    await store.write(lambda tx: tx.reset_chunks("r1", "summary", 2, None, 40))
    again = await store.read(lambda tx: _states(tx))
    assert again == [
        ("card", 0, "pending", "m1"),
        ("summary", 0, "pending", None),
        ("summary", 1, "pending", None),
    ]


async def test_retry_chunks_puts_failed_chunks_back_to_pending_and_keeps_their_history(
    store: Store,
) -> None:
    await rows.insert(store, rows.item("a"), rows.run("r1", "a"), rows.run("r2", "a"))

    def start(tx: UnitOfWork) -> None:
        for run_id in ("r1", "r2"):
            tx.reset_chunks(run_id, "summary", 3, "m1", 10)
            tx.update_chunk(run_id, "summary", 0, status="done", output="zero", updated_at=11)
            tx.update_chunk(
                run_id,
                "summary",
                1,
                status="error",
                retries=2,
                last_error_code="AI_TIMEOUT",
                last_error_message="slow",
                updated_at=12,
            )

    await store.write(start)
    await store.write(lambda tx: tx.retry_chunks("r1", 20))
    retried = await store.read(lambda tx: tx.chunks("r1", "summary"))
    assert [(c.status, c.output, c.updated_at) for c in retried] == [
        ("done", "zero", 11),
        ("pending", None, 20),
        ("pending", None, 10),
    ]
    # What went wrong stays to be read; another run's failed chunk is untouched.
    assert (retried[1].retries, retried[1].last_error_code) == (2, "AI_TIMEOUT")
    other = await store.read(lambda tx: [c.status for c in tx.chunks("r2", "summary")])
    assert other == ["done", "error", "pending"]
