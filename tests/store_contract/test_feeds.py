"""Feeds: one per URL, polled when due, their entries remembered once."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows
from tests.store_contract.conftest import Opener

pytestmark = pytest.mark.anyio


async def test_a_url_is_followed_once(store: Store) -> None:
    first = rows.feed("f1", url="https://example.org/a.xml", created_at=5)
    again = rows.feed("f2", url="https://example.org/a.xml")
    other = rows.feed("f3", url="https://example.org/b.xml", created_at=7)
    added = await store.write(
        lambda tx: [tx.insert_feed(first), tx.insert_feed(again), tx.insert_feed(other)]
    )
    assert added == [True, False, True]
    got = await store.read(
        lambda tx: (tx.feeds(), tx.feed("f1"), tx.feed("f2"), tx.feed_by_url(other.url))
    )
    assert [f.id for f in got[0]] == ["f1", "f3"]
    assert got[1] == first and got[2] is None and got[3] == other


async def test_due_feeds_come_most_overdue_first(store: Store) -> None:
    feeds = [rows.feed(f"f{i}", next_poll_at=at) for i, at in enumerate([50, 10, 30, 99])]

    def unit(tx: UnitOfWork) -> None:
        for f in feeds:
            tx.insert_feed(f)

    await store.write(unit)
    due = await store.read(lambda tx: [f.id for f in tx.feeds_due(50, 10)])
    assert due == ["f1", "f2", "f0"]
    assert await store.read(lambda tx: [f.id for f in tx.feeds_due(50, 2)]) == ["f1", "f2"]
    assert await store.read(lambda tx: tx.next_feed_poll()) == 10
    assert await store.read(lambda tx: tx.feeds_due(9, 10)) == []


async def test_no_feed_no_next_poll(store: Store) -> None:
    assert await store.read(lambda tx: tx.next_feed_poll()) is None


async def test_set_feed_updates_columns_and_reports_a_missing_feed(store: Store) -> None:
    await store.write(lambda tx: tx.insert_feed(rows.feed("f1")))
    done = await store.write(
        lambda tx: (
            tx.set_feed("f1", etag='"v2"', failures=3, last_error="HTTP 500", next_poll_at=77),
            tx.set_feed("nope", failures=1),
        )
    )
    assert done == (True, False)
    row = await store.read(lambda tx: tx.feed("f1"))
    assert row is not None
    assert (row.etag, row.failures, row.last_error, row.next_poll_at) == ('"v2"', 3, "HTTP 500", 77)
    with pytest.raises(ValueError, match="not settable"):
        await store.write(lambda tx: tx.set_feed("f1", url="https://elsewhere.example/"))


async def test_entries_are_remembered_once_and_forgotten_with_their_feed(
    open_store: Opener,
) -> None:
    async with open_store() as store:
        await store.write(lambda tx: tx.insert_feed(rows.feed("f1")))
        await store.write(lambda tx: tx.insert_feed(rows.feed("f2")))

        def unit(tx: UnitOfWork) -> None:
            tx.add_feed_entry("f1", "guid-1", "item-1", 10)
            tx.add_feed_entry("f1", "guid-1", "item-9", 20)  # kept as first seen
            tx.add_feed_entry("f1", "guid-2", None, 10)
            tx.add_feed_entry("f2", "guid-1", "item-2", 10)

        await store.write(unit)
    async with open_store() as store:  # survives a reopen
        keys = ["guid-1", "guid-2", "guid-3", *[f"k{i}" for i in range(1200)]]
        seen = await store.read(lambda tx: tx.feed_entries_seen("f1", keys))
        assert seen == {"guid-1", "guid-2"}
        assert await store.write(lambda tx: tx.delete_feed("f1")) is True
        assert await store.write(lambda tx: tx.delete_feed("f1")) is False
        assert await store.read(lambda tx: tx.feed_entries_seen("f1", keys)) == set()
        assert await store.read(lambda tx: tx.feed_entries_seen("f2", keys)) == {"guid-1"}


async def test_a_failed_unit_leaves_no_feed_behind(store: Store) -> None:
    def unit(tx: UnitOfWork) -> None:
        tx.insert_feed(rows.feed("f1"))
        tx.add_feed_entry("f1", "k", None, 1)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await store.write(unit)
    assert await store.read(lambda tx: (tx.feeds(), tx.feed_entries_seen("f1", ["k"]))) == (
        [],
        set(),
    )
