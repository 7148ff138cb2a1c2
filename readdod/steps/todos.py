"""The todos step: 3–7 todos, at least one that makes something (DESIGN §4.2)."""

from __future__ import annotations

from typing import Final, Protocol

from readdod.items.models import Score, Summary, Todos, UserTodos
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


class TodoMaker(Named, Protocol):
    """What the step asks of an engine."""

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score, *, hooks: StepHooks = ...
    ) -> EngineOutput[Todos]: ...


class Tools(Protocol):
    @property
    def engine(self) -> TodoMaker: ...


def check(p: Todos) -> list[str]:
    problems = []
    if not any(t.kind == "output" for t in p.items):
        problems.append("todos need at least one todo of kind 'output'")
    if any(not t.title.strip() for t in p.items):
        problems.append("todos has a blank title")
    if len({t.title.strip().lower() for t in p.items}) != len(p.items):
        problems.append("todos repeats a title")
    return problems


def user_check(p: UserTodos) -> list[str]:
    return blank_entries("todos", [t.title for t in p.items])


async def run(ctx: StepContext, tools: Tools) -> StepResult:
    summary, score = ctx.get("summary", Summary), ctx.get("score", Score)
    out = await tools.engine.todos(ctx.engine_input(), summary, score, hooks=ctx.hooks)
    return engine_result(tools.engine, out)


STEP: Final = Step[Tools](
    name="todos",
    wire="todos",
    payload=Todos,
    user_payload=UserTodos,
    needs=("extraction", "summary", "score"),
    gated=True,
    fails_as=Status.FAILED_AI,
    check=check,
    user_check=user_check,
    run=run,
)
