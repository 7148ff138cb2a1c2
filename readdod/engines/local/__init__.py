"""The offline engine: extractive, deterministic, no model and no network.

It exists so readdod works with no AI provider at all, and so tests and the
demo get the same output every run. Every result is built from the text
itself: sentences are ranked by TF-IDF centrality plus overlap with the
intent, and scores and todos cite counts found in the text. Any script works
(unspaced CJK/Thai text is read as character pairs); a text of fewer than
:data:`MIN_WORDS` words is refused with ``AI_INPUT_TOO_SHORT`` rather than
padded into a summary.

All real work happens in pure functions (no I/O, no clock, no randomness, no
set-order dependence), one module per step: :mod:`.summary`, :mod:`.score`,
:mod:`.todos` and :mod:`.card`, over what they share: :mod:`.analysis` (the
text, once), :mod:`.intent` (its topic terms and where they meet the text)
and :mod:`.wording`.
:class:`LocalEngine` only decides whether a text is long enough to be worth a
worker thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, TypeVar

import anyio.to_thread

from readdod.engines.base import NO_HOOKS, EngineInput, EngineOutput, ModelUsage, StepHooks
from readdod.engines.local.analysis import MIN_WORDS, TextAnalysis, analyze, require_text
from readdod.engines.local.card import build_card
from readdod.engines.local.score import NEUTRAL_SCORE, score_text
from readdod.engines.local.summary import summarize_text
from readdod.engines.local.todos import detect_genre, plan_todos
from readdod.items.models import Card, Score, Summary, Todos

__all__ = [
    "MIN_WORDS",
    "NEUTRAL_SCORE",
    "LocalEngine",
    "TextAnalysis",
    "analyze",
    "build_card",
    "detect_genre",
    "plan_todos",
    "score_text",
    "summarize_text",
]

T = TypeVar("T")

#: Texts longer than this are processed in a worker thread so the event loop stays responsive.
OFFLOAD_CHARS: Final = 20_000


async def _run(text: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` inline for short texts, in a worker thread for long ones."""
    require_text(text)
    if len(text) > OFFLOAD_CHARS:
        return await anyio.to_thread.run_sync(fn)
    return fn()


class LocalEngine:
    """The :class:`readdod.engines.base.Engine` that needs nothing but the text."""

    name: str = "local"
    version: str = "1"

    def circuit_state(self) -> str:
        return "closed"

    def model_usage(self) -> ModelUsage:
        return ModelUsage()

    async def aclose(self) -> None:
        pass

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Summary]:
        payload = await _run(inp.text, functools.partial(summarize_text, inp))
        return EngineOutput(payload=payload, template_version="summary.local.v1")

    async def score(
        self, inp: EngineInput, summary: Summary, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Score]:
        payload = await _run(inp.text, functools.partial(score_text, inp, summary))
        return EngineOutput(payload=payload, template_version="score.local.v1")

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Todos]:
        payload = await _run(inp.text, functools.partial(plan_todos, inp, summary, score))
        return EngineOutput(payload=payload, template_version="todos.local.v1")

    async def card(
        self,
        inp: EngineInput,
        summary: Summary,
        score: Score,
        todos: Todos,
        *,
        hooks: StepHooks = NO_HOOKS,
    ) -> EngineOutput[Card]:
        payload = await _run(inp.text, functools.partial(build_card, inp, summary, score, todos))
        return EngineOutput(payload=payload, template_version="card.local.v1")
