"""Todo ticks: kept per item and key, the first tick's time kept, undone once."""

from __future__ import annotations

import pytest

from readdod.errors import ReaddodError
from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows
from tests.store_contract.conftest import Opener

pytestmark = pytest.mark.anyio


async def test_a_tick_is_kept_once_with_its_first_time(store: Store) -> None:
    await rows.insert(store, rows.item("a"), rows.item("b"))

    def tick(tx: UnitOfWork) -> list[bool]:
        return [
            tx.mark_todo("a", "k1", 10),
            tx.mark_todo("a", "k1", 20),
            tx.mark_todo("a", "k2", 30),
            tx.mark_todo("b", "k1", 40),
        ]

    assert await store.write(tick) == [True, False, True, True]
    found = await store.read(lambda tx: (tx.todo_marks("a"), tx.todo_marks("b")))
    assert found == ({"k1": 10, "k2": 30}, {"k1": 40})
    assert await store.read(lambda tx: tx.todo_marks("none")) == {}


async def test_an_undo_takes_one_tick_back_and_says_whether_there_was_one(store: Store) -> None:
    await rows.insert(store, rows.item("a"))
    await store.write(lambda tx: (tx.mark_todo("a", "k1", 1), tx.mark_todo("a", "k2", 2)))
    undone = await store.write(lambda tx: [tx.unmark_todo("a", "k1"), tx.unmark_todo("a", "k1")])
    assert undone == [True, False]
    assert await store.read(lambda tx: tx.todo_marks("a")) == {"k2": 2}
    # Ticked again later: the new time.
    await store.write(lambda tx: tx.mark_todo("a", "k1", 7))
    assert await store.read(lambda tx: tx.todo_marks("a")) == {"k1": 7, "k2": 2}


async def test_items_with_ticks_are_listed_by_id(store: Store) -> None:
    await rows.insert(store, rows.item("b"), rows.item("a"), rows.item("c"))
    await store.write(
        lambda tx: (tx.mark_todo("b", "k", 1), tx.mark_todo("a", "k", 1), tx.mark_todo("a", "j", 1))
    )
    assert await store.read(lambda tx: tx.items_with_todo_marks()) == ["a", "b"]
    await store.write(lambda tx: tx.unmark_todo("b", "k"))
    assert await store.read(lambda tx: tx.items_with_todo_marks()) == ["a"]


async def test_a_tick_needs_its_item(store: Store) -> None:
    with pytest.raises(ReaddodError):
        await store.write(lambda tx: tx.mark_todo("ghost", "k", 1))
    assert await store.read(lambda tx: tx.items_with_todo_marks()) == []


async def test_a_failed_unit_leaves_no_tick_and_ticks_survive_a_reopen(open_store: Opener) -> None:
    async with open_store() as store:
        await rows.insert(store, rows.item("a"))
        await store.write(lambda tx: tx.mark_todo("a", "kept", 5))

        def fails(tx: UnitOfWork) -> None:
            tx.mark_todo("a", "lost", 6)
            tx.unmark_todo("a", "kept")
            raise ValueError("the unit fails")

        with pytest.raises(ValueError):
            await store.write(fails)
        assert await store.read(lambda tx: tx.todo_marks("a")) == {"kept": 5}
    async with open_store() as store:
        assert await store.read(lambda tx: tx.todo_marks("a")) == {"kept": 5}
