"""The score step: match score, priority and reasons for the intent (DESIGN §4.2).

The item takes the score's priority when the run makes it READY, not before:
until then it shows the run it is READY on, if any (:func:`readdod.core.runs.finish`).
"""

from __future__ import annotations

from typing import Final, Protocol

from readdod.items.models import Score, Summary, UserScore
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


class Scorer(Named, Protocol):
    """What the step asks of an engine."""

    async def score(
        self, inp: EngineInput, summary: Summary, *, hooks: StepHooks = ...
    ) -> EngineOutput[Score]: ...


class Tools(Protocol):
    @property
    def engine(self) -> Scorer: ...


def check(p: Score) -> list[str]:
    distinct = {r.strip().lower() for r in p.reasons if r.strip()}
    if len(distinct) < 3:
        return ["score needs at least 3 distinct, non-blank reasons"]
    return []


def user_check(p: UserScore) -> list[str]:
    return blank_entries("score", p.reasons)


async def run(ctx: StepContext, tools: Tools) -> StepResult:
    summary = ctx.get("summary", Summary)
    out = await tools.engine.score(ctx.engine_input(), summary, hooks=ctx.hooks)
    return engine_result(tools.engine, out)


STEP: Final = Step[Tools](
    name="score",
    wire="score",
    payload=Score,
    user_payload=UserScore,
    needs=("extraction", "summary"),
    gated=True,
    fails_as=Status.FAILED_AI,
    check=check,
    user_check=user_check,
    run=run,
)
