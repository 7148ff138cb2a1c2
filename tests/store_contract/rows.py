"""Rows for the contract tests, with what a test does not care about filled in."""

from __future__ import annotations

from typing import Any

from readdod.store.api import Store, UnitOfWork
from readdod.store.rows import AttemptRow, FeedRow, ItemRow, RunRow


def item(item_id: str, *, status: str = "QUEUED", created_at: int = 1, **fields: Any) -> ItemRow:
    values: dict[str, Any] = {
        "id": item_id,
        "capture_id": None,
        "capture_hash": None,
        "source_type": "text",
        "url": None,
        "final_url": None,
        "domain": None,
        "title": None,
        "intent_text": "learn",
        "status": status,
        "priority": "P2",
        "match_score": None,
        "tags": "[]",
        "failure": None,
        "archive_reason": None,
        "lease_owner": None,
        "lease_expires_at": None,
        "current_run_id": None,
        "orphan_count": 0,
        "next_attempt_at": 0,
        "created_at": created_at,
        "updated_at": created_at,
    }
    values.update(fields)
    return ItemRow(**values)


def run(run_id: str, item_id: str, *, status: str = "queued", **fields: Any) -> RunRow:
    values: dict[str, Any] = {
        "run_id": run_id,
        "item_id": item_id,
        "mode": "PROCESS",
        "status": status,
        "refetch": 0,
        "current_step": "extraction",
        "attempts": 0,
        "worker_id": None,
        "error_code": None,
        "created_at": 1,
        "started_at": None,
        "finished_at": None,
    }
    values.update(fields)
    return RunRow(**values)


def attempt(
    attempt_id: str, run_id: str, item_id: str, *, status: str = "queued", created_at: int = 1
) -> AttemptRow:
    return AttemptRow(
        attempt_id=attempt_id,
        run_id=run_id,
        item_id=item_id,
        mode="PROCESS",
        status=status,
        first_step=None,
        last_step=None,
        worker_id=None,
        error_code=None,
        error_message=None,
        created_at=created_at,
        started_at=None,
        finished_at=None,
    )


async def insert(store: Store, *found: ItemRow | RunRow | AttemptRow) -> None:
    """Write ``found`` in one unit, in order (an item before its runs, a run before its
    attempts)."""

    def unit(tx: UnitOfWork) -> None:
        for row in found:
            if isinstance(row, ItemRow):
                tx.insert_item(row)
            elif isinstance(row, RunRow):
                tx.insert_run(row)
            else:
                tx.insert_attempt(row)

    await store.write(unit)


def feed(feed_id: str, *, url: str | None = None, next_poll_at: int = 0, **fields: Any) -> FeedRow:
    values: dict[str, Any] = {
        "id": feed_id,
        "url": url or f"https://example.org/{feed_id}.xml",
        "intent": "keep up",
        "tags": "[]",
        "title": None,
        "etag": None,
        "last_modified": None,
        "created_at": 1,
        "next_poll_at": next_poll_at,
        "last_polled_at": None,
        "last_ok_at": None,
        "failures": 0,
        "last_error_code": None,
        "last_error": None,
        "entries_captured": 0,
    }
    values.update(fields)
    return FeedRow(**values)
