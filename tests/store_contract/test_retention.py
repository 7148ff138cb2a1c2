"""Retention: old runs (with their attempts, chunks and events), events of no run and
superseded versions of every item go, each by its own age and outcome, whatever the
item's state; nothing an item shows (the run shown, the current run, the versions
shown, the capture event)."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio

#: An item's runs, attempts, artifact versions, event times and chunks of its first run.
Kept = tuple[list[str], list[str], list[tuple[str, int]], list[int], int]
#: Items in every settled state: retention is the same for each.
STATES = {"a": "ARCHIVED", "b": "READY", "c": "FAILED_AI", "d": "SHIPPED"}


async def _history(store: Store, item_id: str, status: str) -> None:
    """Five runs: old succeeded, old cancelled, the run shown, the current run (its last
    outcome, a failure), a newer failed run; attempts and events of each."""
    await rows.insert(
        store,
        rows.item(item_id, status=status, current_run_id=f"{item_id}4", ready_run_id=f"{item_id}3"),
        rows.run(f"{item_id}1", item_id, status="succeeded", finished_at=10),
        rows.run(f"{item_id}2", item_id, status="cancelled", finished_at=10),
        rows.run(f"{item_id}3", item_id, status="succeeded", finished_at=20),
        rows.run(f"{item_id}4", item_id, status="failed", finished_at=30),
        rows.run(f"{item_id}5", item_id, status="failed", finished_at=900),
        rows.attempt(f"{item_id}1a", f"{item_id}1", item_id, status="succeeded", created_at=5),
        rows.attempt(f"{item_id}3a", f"{item_id}3", item_id, status="failed", created_at=15),
        rows.attempt(f"{item_id}4a", f"{item_id}4", item_id, status="failed", created_at=25),
        rows.attempt(f"{item_id}5a", f"{item_id}5", item_id, status="failed", created_at=850),
    )

    def unit(tx: UnitOfWork) -> None:
        for n in range(1, 5):
            tx.insert_artifact(item_id, "summary", "system", f"{item_id}{n}", "{}", "{}", n)
        tx.insert_artifact(item_id, "card", "user", None, "{}", "{}", 5)
        tx.insert_artifact(item_id, "card", "user", None, "{}", "{}", 6)
        tx.reset_chunks(f"{item_id}1", "summary", 2, None, 1)
        tx.insert_event(3, item_id, None, "capture", None, "CAPTURED", "user")
        tx.insert_event(5, item_id, None, "transition", "READY", "ARCHIVED", "user")
        tx.insert_event(8, item_id, f"{item_id}1", "step", None, None, "system")
        tx.insert_event(9, item_id, "gone", "step", None, None, "system")
        tx.insert_event(12, item_id, f"{item_id}3", "step", None, None, "system")
        tx.insert_event(
            28, item_id, f"{item_id}4", "transition", "PROCESSING", "FAILED_AI", "system"
        )
        tx.insert_event(
            880, item_id, f"{item_id}5", "transition", "PROCESSING", "FAILED_AI", "system"
        )
        tx.insert_event(950, item_id, None, "edit", None, None, "user")

    await store.write(unit)


async def test_prune_counts_then_removes_every_items_old_history_but_what_it_shows(
    store: Store,
) -> None:
    for item_id, status in STATES.items():
        await _history(store, item_id, status)
    await store.write(lambda tx: tx.insert_event(7, None, None, "daemon", None, None, "system"))

    async def prune(dry_run: bool) -> dict[str, int]:
        return await store.write(
            lambda tx: tx.prune_history(
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
                [a.attempt_id for a in tx.attempts_for(item_id)],
                [(a.artifact_type, a.version) for a in tx.all_artifacts(item_id)],
                [e.at for e in tx.events_for(item_id)],
                len(tx.chunks(f"{item_id}1")),
            )
            for item_id in STATES
        }

    everything = await store.read(kept)
    counted = await prune(True)
    unchanged = await store.read(kept)
    removed = await prune(False)
    after = await store.read(kept)
    # Per item: runs 1, 2 and 5 (each past its outcome's cut-off) with their attempts,
    # chunks and events; the event of no run and the one of a run gone; three versions.
    assert (
        counted
        == removed
        == {
            "runs": 3 * 4,
            "attempts": 2 * 4,
            "events": 4 * 4 + 1,
            "artifacts": 3 * 4,
            "chunks": 2 * 4,
        }
    )
    assert unchanged == everything
    assert after == {
        # The run shown (3) and the current run (4, the last failure) stay, with their
        # attempts, events and versions; the newest of a person's versions and the
        # newest system version stay too; so do the capture event and a newer edit.
        item_id: (
            [f"{item_id}3", f"{item_id}4"],
            [f"{item_id}3a", f"{item_id}4a"],
            [("card", 2), ("summary", 3), ("summary", 4)],
            [3, 12, 28, 950],
            0,
        )
        for item_id in STATES
    }
    assert await prune(False) == dict.fromkeys(counted, 0)


async def test_prune_leaves_history_younger_than_its_cut_off(store: Store) -> None:
    """Each part waits for its own cut-off: a succeeded run for the finished one, a
    failed run for the failed one, a cancelled run for the cancelled one."""
    await _history(store, "b", "READY")

    async def count(finished: int, cancelled: int, failed: int) -> dict[str, int]:
        return await store.write(
            lambda tx: tx.prune_history(
                finished_before=finished,
                cancelled_before=cancelled,
                failed_before=failed,
                keep_versions=0,
                dry_run=True,
            )
        )

    assert (await count(1, 1, 1))["runs"] == 0
    assert (await count(11, 1, 1))["runs"] == 1  # the old succeeded run
    assert (await count(1, 11, 1))["runs"] == 1  # the old cancelled run
    assert (await count(1, 1, 901))["runs"] == 1  # the newer failed run (4 is current)
    assert (await count(10**6, 10**6, 10**6))["runs"] == 3


async def test_prune_keeps_the_capture_event_where_an_item_came_from(store: Store) -> None:
    """An item imported archived keeps its origin (when it was saved and archived
    elsewhere, its highlights) however old: the capture event is never pruned."""
    await rows.insert(store, rows.item("c", status="ARCHIVED"))

    def unit(tx: UnitOfWork) -> None:
        tx.insert_event(3, "c", None, "capture", None, "CAPTURED", "user", '{"origin": {}}')
        tx.insert_event(4, "c", None, "transition", "CAPTURED", "ARCHIVED", "user")

    await store.write(unit)
    removed = await store.write(
        lambda tx: tx.prune_history(
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


async def test_an_items_latest_export_stays_however_old(store: Store) -> None:
    """When an item shipped (or how its export failed) is what it shows: its latest
    export run stays; older exports are history."""
    await rows.insert(
        store,
        rows.item("s", status="SHIPPED", current_run_id="s1", ready_run_id="s1"),
        rows.run("s1", "s", status="succeeded", finished_at=5),
        rows.run("s2", "s", status="failed", mode="EXPORT", finished_at=6),
        rows.run("s3", "s", status="succeeded", mode="EXPORT", finished_at=7),
    )
    removed = await store.write(
        lambda tx: tx.prune_history(
            finished_before=100,
            cancelled_before=100,
            failed_before=100,
            keep_versions=0,
            dry_run=False,
        ),
        alone=True,
    )
    assert removed["runs"] == 1
    assert [r.run_id for r in await store.read(lambda tx: tx.runs_for("s"))] == ["s1", "s3"]
