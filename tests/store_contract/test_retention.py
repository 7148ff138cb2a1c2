"""Retention: old runs, events and superseded versions of ARCHIVED items go; nothing
an item shows, and nothing of an item that is not archived."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio

#: An item's runs, artifact versions, event times and chunks of its first run.
Kept = tuple[list[str], list[tuple[str, int]], list[int], int]


async def _history(store: Store, item_id: str, status: str) -> None:
    """Four runs: old succeeded, old cancelled, the run shown, the current run."""
    await rows.insert(
        store,
        rows.item(item_id, status=status, current_run_id=f"{item_id}4", ready_run_id=f"{item_id}3"),
        rows.run(f"{item_id}1", item_id, status="succeeded", finished_at=10),
        rows.run(f"{item_id}2", item_id, status="cancelled", finished_at=10),
        rows.run(f"{item_id}3", item_id, status="succeeded", finished_at=20),
        rows.run(f"{item_id}4", item_id, status="failed", finished_at=30),
        rows.run(f"{item_id}5", item_id, status="failed", finished_at=900),
    )

    def unit(tx: UnitOfWork) -> None:
        for n in range(1, 5):
            tx.insert_artifact(item_id, "summary", "system", f"{item_id}{n}", "{}", "{}", n)
        tx.insert_artifact(item_id, "card", "user", None, "{}", "{}", 5)
        tx.insert_artifact(item_id, "card", "user", None, "{}", "{}", 6)
        tx.reset_chunks(f"{item_id}1", "summary", 2, None, 1)
        tx.insert_event(5, item_id, None, "transition", "READY", "ARCHIVED", "user")
        tx.insert_event(950, item_id, None, "edit", None, None, "user")

    await store.write(unit)


async def test_prune_counts_then_removes_only_what_retention_allows(store: Store) -> None:
    await _history(store, "a", "ARCHIVED")
    await _history(store, "b", "READY")
    await store.write(lambda tx: tx.insert_event(7, None, None, "daemon", None, None, "system"))

    async def prune(dry_run: bool) -> dict[str, int]:
        return await store.write(
            lambda tx: tx.prune_archived(
                finished_before=100,
                cancelled_before=100,
                failed_before=1000,
                keep_versions=0,
                dry_run=dry_run,
            ),
            alone=True,
        )

    def kept(tx: UnitOfWork) -> dict[str, Kept]:
        return {
            item_id: (
                [r.run_id for r in tx.runs_for(item_id)],
                [(a.artifact_type, a.version) for a in tx.all_artifacts(item_id)],
                [e.at for e in tx.events_for(item_id)],
                len(tx.chunks(f"{item_id}1")),
            )
            for item_id in ("a", "b")
        }

    everything = await store.read(kept)
    counted = await prune(True)
    unchanged = await store.read(kept)
    removed = await prune(False)
    after = await store.read(kept)
    assert counted == removed == {"runs": 3, "events": 2, "artifacts": 3}
    assert unchanged == everything
    assert after == {
        # The run shown (a3) and the current run (a4) stay, with their versions; the
        # newest of a person's versions and the newest system version stay too.
        "a": (["a3", "a4"], [("card", 2), ("summary", 3), ("summary", 4)], [950], 0),
        "b": everything["b"],
    }


async def test_prune_keeps_the_capture_event_where_an_item_came_from(store: Store) -> None:
    """An item imported archived keeps its origin (when it was saved and archived
    elsewhere, its highlights) however old: the capture event is never pruned."""
    await rows.insert(store, rows.item("c", status="ARCHIVED"))

    def unit(tx: UnitOfWork) -> None:
        tx.insert_event(3, "c", None, "capture", None, "CAPTURED", "user", '{"origin": {}}')
        tx.insert_event(4, "c", None, "transition", "CAPTURED", "ARCHIVED", "user")

    await store.write(unit)
    removed = await store.write(
        lambda tx: tx.prune_archived(
            finished_before=100,
            cancelled_before=100,
            failed_before=100,
            keep_versions=0,
            dry_run=False,
        ),
        alone=True,
    )
    assert removed["events"] == 1
    kinds = await store.read(lambda tx: [e.kind for e in tx.events_for("c")])
    assert kinds == ["capture"]
