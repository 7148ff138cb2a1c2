"""The engine interface every AI backend implements."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

import msgspec

from readdod.models import Card, Score, Summary, Todos

P = TypeVar("P")


class EngineInput(msgspec.Struct, kw_only=True, frozen=True):
    """What an engine may know about the thing being read."""

    text: str
    intent: str
    title: str | None = None
    url: str | None = None
    site_name: str | None = None
    lang: str | None = None
    tags: tuple[str, ...] = ()


class EngineOutput(msgspec.Struct, Generic[P], kw_only=True):
    """A payload plus the provenance that goes into ``artifact.meta``."""

    payload: P
    template_version: str
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int | None = None
    attempts: int = 1


class Engine(Protocol):
    """One backend for the four AI steps.

    Each method returns a schema- and rubric-valid payload or raises
    :class:`readdod.errors.AIError` (with a precise code). Each later step
    receives the earlier payloads of the same run.
    """

    name: str
    version: str

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]: ...

    async def score(self, inp: EngineInput, summary: Summary) -> EngineOutput[Score]: ...

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score
    ) -> EngineOutput[Todos]: ...

    async def card(
        self, inp: EngineInput, summary: Summary, score: Score, todos: Todos
    ) -> EngineOutput[Card]: ...
