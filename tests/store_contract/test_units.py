"""Units of work: each atomic, the failing one alone undone, every commit durable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows
from tests.store_contract.conftest import Opener

pytestmark = pytest.mark.anyio


class _Refused(Exception):
    pass


def _capture(item_id: str, *, fail: bool = False) -> Callable[[UnitOfWork], str]:
    """A unit that writes to every kind of table, then fails if told to.

    The appends of the hot path come last: a store may hold them back until
    the unit ends, and a failing unit must lose those too.
    """

    def unit(tx: UnitOfWork) -> str:
        tx.insert_item(rows.item(item_id, current_run_id=f"r-{item_id}"))
        tx.insert_run(rows.run(f"r-{item_id}", item_id))
        tx.insert_source(item_id, None, "text")
        tx.set_setting(f"seen-{item_id}", "1")
        tx.insert_attempt(rows.attempt(f"t-{item_id}", f"r-{item_id}", item_id))
        tx.add_artifact(item_id, "extraction", 1, f"r-{item_id}", '{"text":"t"}', "{}", 1)
        tx.insert_event(1, item_id, f"r-{item_id}", "transition", None, "QUEUED", "user")
        if fail:
            raise _Refused(item_id)
        return item_id

    return unit


def _footprint(tx: UnitOfWork, item_id: str) -> tuple[object, ...]:
    return (
        tx.item(item_id) is not None,
        len(tx.runs_for(item_id)),
        len(tx.attempts_for(item_id)),
        tx.source(item_id),
        len(tx.all_artifacts(item_id)),
        len(tx.events_for(item_id)),
        tx.setting(f"seen-{item_id}"),
    )


WRITTEN = (True, 1, 1, (None, "text"), 1, 1, "1")
NOTHING = (False, 0, 0, (None, None), 0, 0, None)


async def test_a_unit_that_raises_loses_only_its_own_writes(store: Store) -> None:
    results: dict[str, object] = {}

    async def write(item_id: str, fail: bool) -> None:
        try:
            results[item_id] = await store.write(_capture(item_id, fail=fail))
        except _Refused as exc:
            results[item_id] = exc

    async with anyio.create_task_group() as tg:
        for item_id, fail in (("a", False), ("b", True), ("c", False), ("d", True)):
            tg.start_soon(write, item_id, fail)
    found = await store.read(lambda tx: [_footprint(tx, i) for i in "abcd"])
    assert results["a"] == "a" and results["c"] == "c"
    assert isinstance(results["b"], _Refused) and isinstance(results["d"], _Refused)
    assert found == [WRITTEN, NOTHING, WRITTEN, NOTHING]


async def test_a_unit_run_alone_commits_or_rolls_back_like_any_other(store: Store) -> None:
    done = await store.write(_capture("a"), alone=True)
    with pytest.raises(_Refused):
        await store.write(_capture("b", fail=True), alone=True)
    found = await store.read(lambda tx: [_footprint(tx, i) for i in "ab"])
    assert done == "a"
    assert found == [WRITTEN, NOTHING]


async def test_what_a_unit_wrote_it_reads_back_and_later_reads_see_it(store: Store) -> None:
    def unit(tx: UnitOfWork) -> tuple[object, ...]:
        _capture("a")(tx)
        return _footprint(tx, "a")

    inside = await store.write(unit)
    after = await store.read(lambda tx: _footprint(tx, "a"))
    assert inside == after == WRITTEN


async def test_committed_writes_survive_closing_and_reopening(open_store: Opener) -> None:
    async with open_store() as store:
        for item_id in ("a", "b"):
            await store.write(_capture(item_id))
        await store.write(lambda tx: tx.set_status("b", "QUEUED", "READY", title="kept"))
    async with open_store() as store:
        found = await store.read(lambda tx: [_footprint(tx, i) for i in "ab"])
        b = await store.read(lambda tx: tx.item("b"))
    assert found == [WRITTEN, WRITTEN]
    assert b is not None and (b.status, b.title) == ("READY", "kept")


async def test_counters_count_the_units_and_reads_done(store: Store) -> None:
    before = store.counters()
    async with anyio.create_task_group() as tg:
        for item_id in ("a", "b", "c"):
            tg.start_soon(store.write, _capture(item_id))
    await store.read(lambda tx: tx.item("a"))
    await store.read(lambda tx: tx.item("b"))
    after = store.counters()
    assert after.units - before.units == 3
    assert 1 <= after.transactions - before.transactions <= 3
    assert after.statements > before.statements
    assert after.reads - before.reads == 2
    assert after.read_statements > before.read_statements


async def test_reclaiming_space_after_a_prune_keeps_every_row(store: Store) -> None:
    await store.write(_capture("a"))
    await store.write(
        lambda tx: tx.prune_history(
            finished_before=10**12,
            cancelled_before=10**12,
            failed_before=10**12,
            keep_versions=0,
            dry_run=False,
        ),
        alone=True,
    )
    await store.reclaim()
    assert await store.read(lambda tx: _footprint(tx, "a")) == WRITTEN


async def test_a_backup_is_a_complete_copy_made_while_the_store_is_open(
    store: Store, tmp_path: Path
) -> None:
    if not hasattr(store, "backup"):
        pytest.skip("this store has no backup() yet")
    await store.write(_capture("a"))
    result = await store.backup(tmp_path / "copy.db")
    assert Path(result.path) == tmp_path / "copy.db"
    assert result.bytes > 0 and Path(result.path).stat().st_size == result.bytes
    assert await store.read(lambda tx: _footprint(tx, "a")) == WRITTEN
