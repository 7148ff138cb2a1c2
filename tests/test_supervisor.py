"""The supervisor and its actors in-process, on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from readdod.clock import SystemClock
from readdod.config import FetchConfig
from readdod.engines.base import EngineInput, EngineOutput
from readdod.engines.fixed import FixedEngine
from readdod.extraction.fetch import make_client
from readdod.models import Summary
from readdod.orchestrator import CaptureRequest, Orchestrator
from readdod.pipeline import Pipeline
from readdod.store import Store
from readdod.supervisor import Supervisor

pytestmark = pytest.mark.anyio


class GateEngine(FixedEngine):
    """Summaries wait for the test to open the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = anyio.Event()
        self.gate = anyio.Event()

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]:
        self.entered.set()
        await self.gate.wait()
        return await super().summarize(inp)


class Rig:
    def __init__(self, path: Path, orch: Orchestrator, sup: Supervisor, engine: GateEngine) -> None:
        self.path, self.orch, self.sup, self.engine = path, orch, sup, engine


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    path = tmp_path / "s.db"
    engine = GateEngine()
    async with Store.open(path) as store, make_client() as http:
        orch = Orchestrator(store, SystemClock())
        sup = Supervisor(
            orch,
            Pipeline(engine, http, FetchConfig()),
            owner="me",
            concurrency=4,
            batch_size=4,
            lease_ttl_s=0.3,
            claim_interval_s=30,
            shutdown_grace_s=0,
        )
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            yield Rig(path, orch, sup, engine)
            sup.stop()


async def _capture(orch: Orchestrator) -> str:
    item, _ = await orch.capture(CaptureRequest(intent="x", text="Some text.\n\nMore text."))
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
    with sqlite3.connect(rig.path) as db:  # another worker takes the item over
        db.execute("UPDATE items SET lease_owner = 'thief' WHERE id = ?", (item_id,))
    with anyio.fail_after(10):
        await rig.sup.wait_idle()  # the heartbeat noticed and cancelled the actor
    rig.engine.gate.set()
    got = await rig.orch.get(item_id, history=True)
    assert got["item"].status == "PROCESSING"
    assert set(got["artifacts"]) == {"extraction"}
    assert [e.to_status for e in got["events"] if e.kind in ("capture", "transition")] == [
        "CAPTURED",
        "QUEUED",
        "PROCESSING",
    ]
    with sqlite3.connect(rig.path) as db:
        assert db.execute("SELECT lease_owner FROM items").fetchone() == ("thief",)


async def test_pause_returns_work_to_queued_at_the_next_step(rig: Rig) -> None:
    item_id = await _capture(rig.orch)
    with anyio.fail_after(10):
        await rig.engine.entered.wait()
    await rig.orch.set_paused(True)
    rig.sup.set_paused(True)
    rig.engine.gate.set()  # the summary step finishes; the actor stops before score
    with anyio.fail_after(10):
        await rig.sup.wait_idle()
    got = await rig.orch.get(item_id, history=True)
    assert got["item"].status == "QUEUED"
    assert set(got["artifacts"]) == {"extraction", "summary"}
    assert got["events"][-1].detail == {"reason": "pause"}
    assert got["runs"][0].status == "queued"
