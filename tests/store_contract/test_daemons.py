"""The daemon registry: daemons register, beat, leave, and the dead are forgotten."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from readdod.store.rows import DaemonRow
from tests.store_contract.conftest import Opener

pytestmark = pytest.mark.anyio


def daemon(daemon_id: str, started_at: int, **fields: object) -> DaemonRow:
    values: dict[str, object] = {
        "host": "h1",
        "pid": 100,
        "version": "0.1.0",
        "heartbeat_at": started_at,
    }
    values.update(fields)
    return DaemonRow(daemon_id=daemon_id, started_at=started_at, **values)  # type: ignore[arg-type]


async def test_registered_daemons_come_back_longest_running_first(store: Store) -> None:
    await store.write(lambda tx: tx.register_daemon(daemon("b", 20)))
    await store.write(lambda tx: tx.register_daemon(daemon("c", 10, paused=True, in_flight=3)))
    await store.write(lambda tx: tx.register_daemon(daemon("a", 20, host="h2", pid=7)))
    found = await store.read(lambda tx: tx.daemons())
    assert [d.daemon_id for d in found] == ["c", "a", "b"]
    assert found[0] == daemon("c", 10, paused=True, in_flight=3)
    assert (found[1].host, found[1].pid) == ("h2", 7)
    assert found[1].paused is False


async def test_registering_again_replaces_the_row(store: Store) -> None:
    await store.write(lambda tx: tx.register_daemon(daemon("a", 10, in_flight=5)))
    await store.write(lambda tx: tx.register_daemon(daemon("a", 30, pid=9)))
    assert await store.read(lambda tx: tx.daemons()) == [daemon("a", 30, pid=9)]


async def test_a_beat_records_time_load_and_pause_and_says_whether_the_row_is_there(
    store: Store,
) -> None:
    await store.write(lambda tx: tx.register_daemon(daemon("a", 10)))

    async def beat(daemon_id: str) -> bool:
        return await store.write(lambda tx: tx.beat_daemon(daemon_id, 50, in_flight=4, paused=True))

    assert await beat("a") is True
    assert await beat("ghost") is False
    (row,) = await store.read(lambda tx: tx.daemons())
    assert (row.heartbeat_at, row.in_flight, row.paused, row.started_at) == (50, 4, True, 10)


async def test_a_daemon_leaves_once(store: Store) -> None:
    await store.write(lambda tx: tx.register_daemon(daemon("a", 10)))
    assert await store.write(lambda tx: tx.remove_daemon("a")) is True
    assert await store.write(lambda tx: tx.remove_daemon("a")) is False
    assert await store.read(lambda tx: tx.daemons()) == []


async def test_forgetting_takes_only_the_silent_and_never_the_one_kept(store: Store) -> None:
    def setup(tx: UnitOfWork) -> None:
        tx.register_daemon(daemon("old", 1, heartbeat_at=100))
        tx.register_daemon(daemon("me", 2, heartbeat_at=50))
        tx.register_daemon(daemon("live", 3, heartbeat_at=200))

    await store.write(setup)
    gone = await store.write(lambda tx: tx.forget_daemons(200, keep="me"))
    assert gone == ["old"]
    assert [d.daemon_id for d in await store.read(lambda tx: tx.daemons())] == ["me", "live"]


async def test_a_unit_that_fails_leaves_the_registry_as_it_was(store: Store) -> None:
    await store.write(lambda tx: tx.register_daemon(daemon("a", 10)))

    def unit(tx: UnitOfWork) -> None:
        tx.register_daemon(daemon("b", 20))
        tx.beat_daemon("a", 99, in_flight=1, paused=False)
        tx.remove_daemon("a")
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        await store.write(unit)
    assert await store.read(lambda tx: tx.daemons()) == [daemon("a", 10)]


async def test_the_registry_survives_a_reopen(open_store: Opener) -> None:
    async with open_store() as store:
        await store.write(lambda tx: tx.register_daemon(daemon("a", 10, in_flight=2)))
    async with open_store() as store:
        assert await store.read(lambda tx: tx.daemons()) == [daemon("a", 10, in_flight=2)]
