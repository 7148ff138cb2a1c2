"""Notices between the users of one database: what ``LISTEN``/``NOTIFY`` is on PostgreSQL.

Two stores opened on the same database stand for two daemons.
"""

from __future__ import annotations

import anyio
import pytest

from readdod.store.api import NOTICE_MAX_BYTES
from tests.store_contract.conftest import Opener

pytestmark = pytest.mark.anyio


async def test_a_notice_reaches_every_listener_of_the_database_in_order(
    open_store: Opener,
) -> None:
    async with open_store() as a, open_store() as b, a.listen() as on_a, b.listen() as on_b:
        await a.notify("one")
        await b.notify("two ünïcode")
        with anyio.fail_after(10):
            assert [await on_a.__anext__(), await on_a.__anext__()] == ["one", "two ünïcode"]
            assert [await on_b.__anext__(), await on_b.__anext__()] == ["one", "two ünïcode"]


async def test_a_listener_hears_only_what_was_sent_after_it_began(open_store: Opener) -> None:
    async with open_store() as a, open_store() as b:
        await a.notify("before")
        async with b.listen() as heard:
            await a.notify("after")
            with anyio.fail_after(10):
                assert await heard.__anext__() == "after"
        # Its block is over: sending on goes nowhere and fails nothing.
        await a.notify("nobody listens")


async def test_a_notice_of_the_largest_size_goes_through_and_a_larger_one_is_refused(
    open_store: Opener,
) -> None:
    async with open_store() as a, a.listen() as heard:
        big = "x" * NOTICE_MAX_BYTES
        await a.notify(big)
        with anyio.fail_after(10):
            assert await heard.__anext__() == big
        with pytest.raises(ValueError, match="at most"):
            await a.notify("é" * NOTICE_MAX_BYTES)
