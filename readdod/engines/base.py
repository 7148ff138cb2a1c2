"""The engine interface every AI backend implements."""

from __future__ import annotations

from typing import Protocol

import msgspec

from readdod.steps.base import NO_HOOKS as NO_HOOKS
from readdod.steps.base import ChunkLedger as ChunkLedger
from readdod.steps.base import ChunkStatus as ChunkStatus
from readdod.steps.base import EngineInput as EngineInput
from readdod.steps.base import EngineOutput as EngineOutput
from readdod.steps.base import StepHooks as StepHooks
from readdod.steps.card import CardMaker
from readdod.steps.score import Scorer
from readdod.steps.summary import Summarizer
from readdod.steps.todos import TodoMaker


class StepStopped(Exception):
    """A step gave up waiting because the daemon is pausing or stopping; not a failure."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"step stopped: {reason}")
        self.reason = reason


class ModelUsage(msgspec.Struct, kw_only=True):
    """Requests an engine sent to its model server since it was built (for metrics)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Failed requests by error code (each attempt counts, retried or not).
    errors: dict[str, int] = {}


class Engine(Summarizer, Scorer, TodoMaker, CardMaker, Protocol):
    """One backend for the AI steps: each step's module says what it asks of it.

    Each step method returns a schema- and rubric-valid payload or raises
    :class:`readdod.errors.AIError` (with a precise code). Each later step
    receives the earlier payloads of the same run, and every step its hooks
    (:class:`StepHooks`), passed by the step.
    """

    name: str
    version: str

    def circuit_state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half_open"``: whether the backend is usable."""
        ...

    def model_usage(self) -> ModelUsage:
        """What the engine asked of a model server so far (an offline engine asks nothing)."""
        ...

    async def aclose(self) -> None:
        """Release what the engine holds (an HTTP client's connections); called at shutdown."""
        ...
