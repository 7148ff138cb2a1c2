"""Two daemons on one store, in one process: what one does reaches the other through the
store's notices (wake-ups, ``watch``, pause, resume, ``archive --cancel``), and the
registry lists both.

Daemon A has no workers of its own; daemon B runs a real supervisor whose safety-net
claim timer is 30 s, so anything B does within seconds was caused by a notice. Every
store implementation of the contract runs it (SQLite: two stores on one file).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from readdod.core import Core
from readdod.core.fleet import Fleet
from readdod.extraction.fetch import make_client
from readdod.fleet.relay import Relay
from readdod.items.models import CaptureRequest
from readdod.processing.supervisor import Supervisor
from readdod.runtime.clock import SystemClock
from readdod.runtime.events import BusEvent, Subscription
from tests.daemon_proc import DaemonProc, run_cli
from tests.rigs import GateEngine, run_supervisor, supervisor
from tests.store_contract.conftest import IMPLEMENTATIONS

pytestmark = pytest.mark.anyio


class Pair:
    def __init__(self, a: Core, b: Core, sup: Supervisor, engine: GateEngine) -> None:
        self.a, self.b, self.sup, self.engine = a, b, sup, engine
        self.fleet_a = Fleet(a.units, "A", 100)
        self.fleet_b = Fleet(b.units, "B", 100)
        self.relay_a = Relay(self.fleet_a, a.bus, _NoWorkers())
        self.relay_b = Relay(self.fleet_b, b.bus, sup)


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
async def pair(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Pair]:
    open_store = IMPLEMENTATIONS[request.param](tmp_path)
    engine = GateEngine()
    async with open_store() as store_a, open_store() as store_b, make_client() as http:
        a, b = Core(store_a, SystemClock()), Core(store_b, SystemClock())
        sup = supervisor(b, engine, http)
        pair = Pair(a, b, sup, engine)
        a.units.observe(pair.relay_a.committed)
        b.units.observe(pair.relay_b.committed)
        async with anyio.create_task_group() as tg:
            await tg.start(pair.relay_a.run)
            await tg.start(pair.relay_b.run)
            await tg.start(run_supervisor, b, sup)
            yield pair
            engine.gate.set()
            sup.stop()
            await sup.wait_idle()
            tg.cancel_scope.cancel()


class _NoWorkers:
    """Daemon A runs no actors (a daemon that only answers the socket)."""

    def wake(self) -> None:
        pass

    def set_paused(self, paused: bool) -> None:
        pass

    def cancel(self, item_id: str) -> bool:
        return False

    def cleanup_s(self, default_s: float) -> float:
        return default_s


async def _capture(core: Core, intent: str = "learn it") -> str:
    item, _ = await core.commands.capture(
        CaptureRequest(intent=intent, text="Some text.\n\nMore text.")
    )
    return item.id


async def _next(sub: Subscription, event: str, **data: object) -> BusEvent:
    """The next event named ``event`` whose data has ``data``."""
    with anyio.fail_after(10):
        async for ev in sub:
            merged = {**ev.data, "item_id": ev.item_id}
            if ev.event == event and all(merged.get(k) == v for k, v in data.items()):
                return ev
    raise AssertionError(f"the bus closed before {event} {data}")


async def test_a_capture_on_one_daemon_wakes_the_claimer_of_another(pair: Pair) -> None:
    await _capture(pair.a)
    with anyio.fail_after(5):  # the claim timer is 30 s: only the notice can do this
        await pair.engine.entered.wait()
    assert pair.sup.in_flight == 1


async def test_watch_on_one_daemon_shows_the_events_of_another(pair: Pair) -> None:
    sub = pair.b.bus.subscribe()
    item_id = await _capture(pair.a)
    queued = await _next(sub, "item.transition", item_id=item_id, to="QUEUED")
    assert queued.data["daemon"] == "A"
    # B's own claim of it is B's event (no daemon field), in the same stream.
    claimed = await _next(sub, "item.transition", item_id=item_id, to="PROCESSING")
    assert "daemon" not in claimed.data
    sub.close()


async def test_what_only_watchers_want_is_sent_only_while_another_daemon_has_one(
    pair: Pair,
) -> None:
    await pair.a.commands.pause()  # nobody claims: A's items stay QUEUED
    first = await _capture(pair.a)
    await pair.relay_a.flush()
    sent = pair.relay_a.notes_sent
    assert sent > 0, "a QUEUED item is news for every daemon"
    await pair.a.commands.archive(first)  # QUEUED -> ARCHIVED: no daemon acts on it
    await pair.relay_a.flush()
    assert pair.relay_a.notes_sent == sent, "with nobody watching, only notes acted on go out"

    sub = pair.b.bus.subscribe()
    with anyio.fail_after(10):
        await pair.relay_a.heard_watching.wait()
    second = await _capture(pair.a)
    await pair.a.commands.archive(second)
    archived = await _next(sub, "item.transition", item_id=second, to="ARCHIVED")
    assert archived.data["daemon"] == "A"
    sub.close()


async def test_pause_and_resume_on_one_daemon_stop_and_restart_another(pair: Pair) -> None:
    sub = pair.b.bus.subscribe()
    item_id = await _capture(pair.a)
    with anyio.fail_after(5):
        await pair.engine.entered.wait()
    assert await pair.a.commands.pause() is True
    await _next(sub, "daemon.paused", daemon="A")
    assert pair.sup.paused
    with anyio.fail_after(5):  # the gate is shut: only the pause can end the actor
        await pair.sup.wait_idle()
    await _next(sub, "item.transition", item_id=item_id, to="QUEUED")
    assert (await pair.a.reads.get(item_id))["item"].status == "QUEUED"

    pair.engine.gate.set()
    await pair.a.commands.resume()
    await _next(sub, "daemon.resumed", daemon="A")
    assert not pair.sup.paused
    await _next(sub, "item.transition", item_id=item_id, to="READY")
    sub.close()


async def test_archive_cancel_on_one_daemon_stops_the_actor_on_the_daemon_holding_the_lease(
    pair: Pair,
) -> None:
    item_id = await _capture(pair.a)
    with anyio.fail_after(5):
        await pair.engine.entered.wait()
    item, _ = await pair.a.commands.archive(item_id, cancel=True)
    assert item.status == "ARCHIVED"
    with anyio.fail_after(5):  # the gate never opens: only the cancel can end the actor
        await pair.sup.wait_idle()
    got = await pair.b.reads.get(item_id, history=True)
    assert got["item"].status == "ARCHIVED"
    # The cancelled actor wrote nothing after the cancel: no summary, no move of its own.
    assert set(got["artifacts"]) == {"extraction"}
    assert [e.to_status for e in got["events"] if e.kind == "transition"][-2:] == [
        "QUEUED",
        "ARCHIVED",
    ]


async def test_the_registry_lists_both_daemons_alive_and_each_knows_itself(pair: Pair) -> None:
    await pair.fleet_a.join(alone=False, paused=False)
    await pair.fleet_b.join(alone=False, paused=False)
    await pair.fleet_b.beat(in_flight=3, paused=True)
    seen_by_a = await pair.fleet_a.members()
    assert [(m.daemon_id, m.this, m.alive) for m in seen_by_a] == [
        ("A", True, True),
        ("B", False, True),
    ]
    assert (seen_by_a[1].in_flight, seen_by_a[1].paused) == (3, True)
    assert [m.this for m in await pair.fleet_b.members()] == [False, True]
    await pair.fleet_b.leave()
    assert [m.daemon_id for m in await pair.fleet_a.members()] == ["A"]
    # A daemon alone on its store (SQLite's instance lock) forgets every other row.
    await pair.fleet_b.join(alone=False, paused=False)
    await pair.fleet_a.join(alone=True, paused=False)
    assert [m.daemon_id for m in await pair.fleet_a.members()] == ["A"]


def test_health_and_stats_of_a_real_daemon_report_the_fleet_and_forget_a_killed_one(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start()
    first = d.call("ping")["worker_id"]
    health = d.call("health")
    assert health["daemon"] == first
    (me,) = health["fleet"]
    assert (me["daemon_id"], me["this"], me["alive"], me["paused"]) == (first, True, True, False)
    assert d.proc is not None and me["pid"] == d.proc.pid
    stats = d.call("stats")
    assert stats["daemon"] == first
    assert [(m["daemon_id"], m["started_at"]) for m in stats["fleet"]] == [
        (first, me["started_at"])
    ]
    text = run_cli(d, "health")
    assert f"{first} (this one): alive" in text.stdout

    d.kill9()  # no clean stop: its row stays behind
    with d.db() as db:
        assert db.execute("SELECT daemon_id FROM daemons").fetchall() == [(first,)]
    d.start()
    second = d.call("ping")["worker_id"]
    # Holding the instance lock, the new daemon knows the old one is dead.
    assert [m["daemon_id"] for m in d.call("stats")["fleet"]] == [second]
    assert d.stop() == 0
    with d.db() as db:  # a clean stop leaves the registry empty
        assert db.execute("SELECT count(*) FROM daemons").fetchone() == (0,)


async def test_a_forgotten_daemon_comes_back_at_its_next_beat_with_its_start_kept(
    pair: Pair,
) -> None:
    await pair.fleet_b.join(alone=False, paused=False)
    started = (await pair.fleet_b.members())[0].started_at
    await pair.fleet_a.join(alone=True, paused=False)  # forgets B
    assert [m.daemon_id for m in await pair.fleet_a.members()] == ["A"]
    await pair.fleet_b.beat(in_flight=2, paused=False)
    back = {m.daemon_id: m for m in await pair.fleet_a.members()}
    assert back["B"].started_at == started and back["B"].in_flight == 2
