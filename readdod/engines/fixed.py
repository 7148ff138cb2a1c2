"""An engine that answers instantly (or after a set delay) with fixed valid payloads.

For benchmarks and tests of the orchestration itself: it costs nothing, so
what is measured is readdod's own overhead. Select it with
``ai.engine = "fixed"`` (and ``ai.fixed_delay_ms`` to make each step wait).
"""

from __future__ import annotations

import anyio

from readdod.engines.base import NO_HOOKS, EngineInput, EngineOutput, ModelUsage, StepHooks
from readdod.items.models import Card, CardSource, RenderSpec, Score, Summary, Todo, Todos
from readdod.text import reading_minutes

_TODOS = [
    Todo(title="Write a one-paragraph note on what this changes", kind="output", estimate_min=15),
    Todo(title="Try the main idea on a small example", kind="action", estimate_min=30),
    Todo(title="Read the section that matters most for the intent", kind="read", estimate_min=10),
]


class FixedEngine:
    name = "fixed"
    version = "1"

    def __init__(self, delay_ms: int = 0) -> None:
        self.delay_s = delay_ms / 1000

    def circuit_state(self) -> str:
        return "closed"

    def model_usage(self) -> ModelUsage:
        return ModelUsage()

    async def aclose(self) -> None:
        pass

    async def _pause(self) -> None:
        if self.delay_s:
            await anyio.sleep(self.delay_s)

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Summary]:
        await self._pause()
        first = inp.text.strip().split("\n", 1)[0][:200] or "(untitled)"
        return EngineOutput(
            payload=Summary(
                tl_dr=first,
                key_points=["The first point.", "The second point.", "The third point."],
                intent_relevance=f"Fixed answer for the intent: {inp.intent[:200]}",
                reading_time_min=reading_minutes(inp.text),
            ),
            template_version="summary.fixed.v1",
        )

    async def score(
        self, inp: EngineInput, summary: Summary, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Score]:
        await self._pause()
        return EngineOutput(
            payload=Score(
                match_score=70,
                priority="P1",
                reasons=["Fixed reason one.", "Fixed reason two.", "Fixed reason three."],
                recommendation="read",
            ),
            template_version="score.fixed.v1",
        )

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Todos]:
        await self._pause()
        return EngineOutput(payload=Todos(items=list(_TODOS)), template_version="todos.fixed.v1")

    async def card(
        self,
        inp: EngineInput,
        summary: Summary,
        score: Score,
        todos: Todos,
        *,
        hooks: StepHooks = NO_HOOKS,
    ) -> EngineOutput[Card]:
        await self._pause()
        return EngineOutput(
            payload=Card(
                title=(inp.title or summary.tl_dr)[:300],
                one_liner=summary.tl_dr[:280],
                summary=summary.tl_dr,
                key_points=summary.key_points,
                todos=todos.items,
                priority=score.priority,
                match_score=score.match_score,
                tags=list(inp.tags),
                source=CardSource(url=inp.url, title=inp.title, site_name=inp.site_name),
                render_spec=RenderSpec(
                    template="card",
                    version="card.v1",
                    sections=["one_liner", "key_points", "todos"],
                ),
            ),
            template_version="card.fixed.v1",
        )
