"""The card step: what the run decided, composed for reading and export (DESIGN §4.2)."""

from __future__ import annotations

from typing import Final, Protocol

from readdod.items.models import Card, Score, Summary, Todos, UserCard
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


class CardMaker(Named, Protocol):
    """What the step asks of an engine."""

    async def card(
        self,
        inp: EngineInput,
        summary: Summary,
        score: Score,
        todos: Todos,
        *,
        hooks: StepHooks = ...,
    ) -> EngineOutput[Card]: ...


class Tools(Protocol):
    @property
    def engine(self) -> CardMaker: ...


def check(p: Card) -> list[str]:
    problems = []
    if not p.one_liner.strip() or not p.summary.strip():
        problems.append("card.one_liner and card.summary must not be blank")
    if not any(t.kind == "output" for t in p.todos):
        problems.append("card.todos need at least one todo of kind 'output'")
    return problems


def user_check(p: UserCard) -> list[str]:
    return blank_entries("card", [*p.key_points, *(t.title for t in p.todos)])


async def run(ctx: StepContext, tools: Tools) -> StepResult:
    earlier = ctx.get("summary", Summary), ctx.get("score", Score), ctx.get("todos", Todos)
    out = await tools.engine.card(ctx.engine_input(), *earlier, hooks=ctx.hooks)
    return engine_result(tools.engine, out)


STEP: Final = Step[Tools](
    name="card",
    wire="card",
    payload=Card,
    user_payload=UserCard,
    needs=("extraction", "summary", "score", "todos"),
    gated=True,
    fails_as=Status.FAILED_AI,
    check=check,
    user_check=user_check,
    run=run,
)
