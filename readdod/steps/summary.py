"""The summary step: a TL;DR and key points for the intent (DESIGN §4.2)."""

from __future__ import annotations

from typing import Final, Protocol

from readdod.items.models import Summary, UserSummary
from readdod.items.states import Status
from readdod.steps.base import (
    EngineInput,
    EngineOutput,
    Named,
    Step,
    StepContext,
    StepHooks,
    StepResult,
    blank_entries,
    engine_result,
)


class Summarizer(Named, Protocol):
    """What the step asks of an engine."""

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = ...
    ) -> EngineOutput[Summary]: ...


class Tools(Protocol):
    @property
    def engine(self) -> Summarizer: ...


def check(p: Summary) -> list[str]:
    problems = []
    if not p.tl_dr.strip():
        problems.append("summary.tl_dr is blank")
    if any(not k.strip() for k in p.key_points):
        problems.append("summary.key_points has a blank point")
    if len({k.strip().lower() for k in p.key_points}) != len(p.key_points):
        problems.append("summary.key_points repeats a point")
    return problems


def user_check(p: UserSummary) -> list[str]:
    return blank_entries("summary", p.key_points)


async def run(ctx: StepContext, tools: Tools) -> StepResult:
    out = await tools.engine.summarize(ctx.engine_input(), hooks=ctx.hooks)
    return engine_result(tools.engine, out)


STEP: Final = Step[Tools](
    name="summary",
    wire="summarize",
    payload=Summary,
    user_payload=UserSummary,
    needs=("extraction",),
    gated=True,
    fails_as=Status.FAILED_AI,
    check=check,
    user_check=user_check,
    run=run,
)
