"""A supervisor on a real SQLite file, with an engine a test can hold at the summary step."""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from readdod.core import Core
from readdod.engines.base import NO_HOOKS, EngineInput, EngineOutput, StepHooks
from readdod.engines.fixed import FixedEngine
from readdod.extraction.fetch import FetchClient
from readdod.items.models import Summary
from readdod.loops.heartbeat import Heartbeat
from readdod.processing.pipeline import Pipeline
from readdod.processing.supervisor import Supervisor
from readdod.settings.config import FetchConfig


class GateEngine(FixedEngine):
    """Summaries wait for the test to open the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = anyio.Event()
        self.gate = anyio.Event()

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Summary]:
        self.entered.set()
        await self.gate.wait()
        return await super().summarize(inp, hooks=hooks)


def supervisor(
    orch: Core,
    engine: FixedEngine,
    http: FetchClient,
    *,
    concurrency: int = 4,
    lease_ttl_s: float = 0.3,
) -> Supervisor:
    """A supervisor that claims only when woken (the safety-net timer is 30 s) and stops at once,
    attached to the core as the daemon attaches it."""
    sup = Supervisor(
        orch.leases,
        orch.book,
        orch.bus,
        Pipeline(engine, http, FetchConfig()),
        owner="me",
        concurrency=concurrency,
        batch_size=concurrency,
        lease_ttl_s=lease_ttl_s,
        claim_interval_s=30,
        shutdown_grace_s=0,
    )
    orch.attach(sup)
    return sup


async def run_supervisor(
    core: Core, sup: Supervisor, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Run ``sup`` with its heartbeat, as the daemon runs them, until it has drained."""
    async with anyio.create_task_group() as tg:
        await tg.start(Heartbeat(core.leases, sup).run)

        async def supervise(*, task_status: TaskStatus[None]) -> None:
            try:
                await sup.run(task_status=task_status)
            finally:
                tg.cancel_scope.cancel()

        await tg.start(supervise)
        task_status.started()
