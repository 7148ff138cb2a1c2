"""The supervisor and its actors in-process, on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from readdod.core import Core
from readdod.extraction.fetch import make_client
from readdod.items.models import CaptureRequest
from readdod.processing.supervisor import Supervisor
from readdod.runtime.clock import SystemClock
from readdod.store import SqliteStore
from tests.rigs import GateEngine, run_supervisor, supervisor

pytestmark = pytest.mark.anyio


class Rig:
    def __init__(self, path: Path, orch: Core, sup: Supervisor, engine: GateEngine) -> None:
        self.path, self.orch, self.sup, self.engine = path, orch, sup, engine


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    path = tmp_path / "s.db"
    engine = GateEngine()
    async with SqliteStore.open(path) as store, make_client() as http:
        orch = Core(store, SystemClock())
        sup = supervisor(orch, engine, http)
        async with anyio.create_task_group() as tg:
            await tg.start(run_supervisor, orch, sup)
            yield Rig(path, orch, sup, engine)
            sup.stop()


async def _capture(orch: Core) -> str:
    item, _ = await orch.commands.capture(
        CaptureRequest(intent="x", text="Some text.\n\nMore text.")
    )
    return item.id


async def test_pickup_is_event_driven(rig: Rig) -> None:
    """The safety-net timer is 30 s; the claim must come from the wake-up."""
    await _capture(rig.orch)
    with anyio.fail_after(5):
        await rig.engine.entered.wait()
    rig.engine.gate.set()


async def test_an_actor_that_loses_its_lease_stops_without_writing(rig: Rig) -> None:
    item_id = await _capture(rig.orch)
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    with sqlite3.connect(rig.path) as db:  # another worker takes the item over, for long
        db.execute(
            "UPDATE items SET lease_owner = 'thief', lease_expires_at = lease_expires_at + ?"
            " WHERE id = ?",
            (3_600_000, item_id),
        )
    with anyio.fail_after(10):
        await rig.sup.wait_idle()  # the heartbeat noticed and cancelled the actor
    rig.engine.gate.set()
    got = await rig.orch.reads.get(item_id, history=True)
    assert got["item"].status == "PROCESSING"
    assert set(got["artifacts"]) == {"extraction"}
    assert [e.to_status for e in got["events"] if e.kind in ("capture", "transition")] == [
        "CAPTURED",
        "QUEUED",
        "PROCESSING",
    ]
    with sqlite3.connect(rig.path) as db:
        assert db.execute("SELECT lease_owner FROM items").fetchone() == ("thief",)


async def test_pause_stops_the_running_step_at_once_and_keeps_the_finished_ones(
    rig: Rig,
) -> None:
    item_id = await _capture(rig.orch)
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    await rig.orch.commands.set_paused(True)
    with anyio.fail_after(10):
        await rig.sup.pause()  # the summary step is cancelled where it waits
    got = await rig.orch.reads.get(item_id, history=True)
    rig.engine.gate.set()
    assert got["item"].status == "QUEUED"
    assert set(got["artifacts"]) == {"extraction"}
    assert got["events"][-1].detail == {"reason": "pause"}
    assert got["runs"][0].status == "queued"


def _db_status(path: Path, item_id: str) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("SELECT status FROM items WHERE id = ?", (item_id,)).fetchone()[0])


async def test_a_capture_with_room_is_claimed_in_its_own_transaction(rig: Rig) -> None:
    item_id = await _capture(rig.orch)
    # Read before this task yields again: no claim of the supervisor's could have run yet.
    assert _db_status(rig.path, item_id) == "PROCESSING"
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    got = await rig.orch.reads.get(item_id, history=True)
    moves = [(e.from_status, e.to_status) for e in got["events"] if e.kind == "transition"]
    assert moves == [("CAPTURED", "QUEUED"), ("QUEUED", "PROCESSING")]
    assert got["runs"][0].status == "running" and got["runs"][0].attempts == 1
    rig.engine.gate.set()


async def test_a_capture_waits_its_turn_behind_older_queued_items(rig: Rig) -> None:
    ready: set[str] = set()
    all_ready = anyio.Event()

    def on_ready(item_id: str) -> None:
        ready.add(item_id)
        if len(ready) == 6:
            all_ready.set()

    rig.orch.units.on_ready(on_ready)
    first = [await _capture(rig.orch) for _ in range(4)]  # fill every slot
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    waiting = await _capture(rig.orch)
    assert _db_status(rig.path, waiting) == "QUEUED"
    rig.sup.concurrency = 5  # room again, but an older item still waits
    older_first = await _capture(rig.orch)
    assert _db_status(rig.path, older_first) == "QUEUED"
    rig.engine.gate.set()
    with anyio.fail_after(20):
        await all_ready.wait()
    assert ready == {*first, waiting, older_first}


async def test_a_capture_claims_through_the_supervisors_one_claim(rig: Rig) -> None:
    """A capture's claim is the claim loop's: with a slot free, it takes the item that
    waited longest, in the capture's own transaction, and the new item waits its turn."""
    for _ in range(4):  # fill every slot
        await _capture(rig.orch)
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    waiting = await _capture(rig.orch)
    assert _db_status(rig.path, waiting) == "QUEUED"
    rig.sup.concurrency = 5  # room again, and no wake-up: only a capture claims now
    newer = await _capture(rig.orch)
    # Read before this task yields again: no claim of the loop's could have run yet.
    assert (_db_status(rig.path, waiting), _db_status(rig.path, newer)) == (
        "PROCESSING",
        "QUEUED",
    )
    assert rig.sup.in_flight == 5
    rig.engine.gate.set()


async def test_a_clean_stop_gives_back_every_lease_it_still_holds(tmp_path: Path) -> None:
    path = tmp_path / "stop.db"
    engine = GateEngine()
    async with SqliteStore.open(path) as store, make_client() as http:
        orch = Core(store, SystemClock())
        sup = supervisor(orch, engine, http, concurrency=1, lease_ttl_s=30)
        async with anyio.create_task_group() as tg:
            await tg.start(run_supervisor, orch, sup)
            item_id = await _capture(orch)
            with anyio.fail_after(10):
                await engine.entered.wait()
            # A lease this daemon holds with no actor behind it (as when an actor's own
            # release failed): the stop must give it back too.
            other = await _capture(orch)
            with sqlite3.connect(path) as db:
                db.execute(
                    "UPDATE items SET status = 'PROCESSING', lease_owner = 'me' WHERE id = ?",
                    (other,),
                )
            sup.stop()
        got = await orch.reads.get(other, history=True)
        assert got["item"].status == "QUEUED"
        with sqlite3.connect(path) as db:
            assert db.execute(
                "SELECT orphan_count FROM items WHERE id = ?", (other,)
            ).fetchone() == (0,)
        assert got["events"][-1].detail == {"reason": "shutdown"}
        assert (await orch.reads.get(item_id))["item"].status == "QUEUED"
