"""The engine interface every AI backend implements."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from readdod.errors import Spent, StepError
from readdod.models import Card, Score, Summary, Todos
from readdod.retrying import OnRetry

P = TypeVar("P")

ChunkStatus = Literal["pending", "processing", "retrying", "done", "error"]


class ChunkLedger(Protocol):
    """Where one step's chunks keep their state across retries and crashes.

    The actor backs it with the core's lease book (fenced by its lease), so an
    engine records chunk progress without knowing items, runs or the store.
    """

    async def begin(self, step: str, total: int, model: str | None) -> dict[int, str]:
        """Set up ``total`` chunks; return the stored outputs of chunks already done."""
        ...

    async def update(
        self,
        step: str,
        idx: int,
        status: ChunkStatus,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
        spent: Spent | None = None,
    ) -> None:
        """Move chunk ``idx`` to ``status``; ``model``: the model its starting attempt asks.

        ``spent``: the tokens the server reported for the chunk's requests since the
        engine last said, given when the chunk ends (``done`` or ``error``). They are
        counted there and then, so a crash or a pause after it loses none of them.
        """
        ...


@dataclass(frozen=True)
class StepHooks:
    """What the caller of one engine step offers it besides the input.

    ``on_retry`` records an in-step retry; ``note`` records an event about
    the step (e.g. waiting for a model server to come back); ``chunks`` keeps
    long texts' chunk state; ``stop_reason`` says (when not None) that the
    daemon wants the step to stop, so an engine waiting for a server that is
    down gives up with :class:`StepStopped`; ``reported`` is told of the
    tokens of each answer as it arrives, so a step cut short (a pause, a
    cancel) still has what its answers cost counted. Engines that need none
    of it ignore it.
    """

    on_retry: OnRetry | None = None
    note: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    chunks: ChunkLedger | None = None
    stop_reason: Callable[[], str | None] | None = None
    reported: Callable[[Spent], None] | None = None


class StepStopped(Exception):
    """A step gave up waiting because the daemon is pausing or stopping; not a failure."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"step stopped: {reason}")
        self.reason = reason


# Passed by context rather than as a parameter, so the four-method Engine
# protocol stays the same for engines that have no use for it.
_hooks: contextvars.ContextVar[StepHooks | None] = contextvars.ContextVar(
    "readdod_step_hooks", default=None
)
_NO_HOOKS = StepHooks()


def current_hooks() -> StepHooks:
    """The hooks of the step being run in this task."""
    return _hooks.get() or _NO_HOOKS


@contextlib.contextmanager
def step_hooks(hooks: StepHooks) -> Iterator[None]:
    token = _hooks.set(hooks)
    try:
        yield
    finally:
        _hooks.reset(token)


class EngineInput(msgspec.Struct, kw_only=True, frozen=True):
    """What an engine may know about the thing being read."""

    text: str
    intent: str
    title: str | None = None
    url: str | None = None
    site_name: str | None = None
    lang: str | None = None
    tags: tuple[str, ...] = ()
    captured_at: int | None = None
    """When the item was captured (ms since the epoch): a date in the text before it is past."""


class EngineOutput(msgspec.Struct, Generic[P], kw_only=True):
    """A payload plus the provenance that goes into ``artifact.meta``."""

    payload: P
    template_version: str
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: Prompt tokens the server answered from its prompt cache, where it says.
    cached_tokens: int | None = None
    latency_ms: int | None = None
    attempts: int = 1


class ModelUsage(msgspec.Struct, kw_only=True):
    """Requests an engine sent to its model server since it was built (for metrics)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Failed requests by error code (each attempt counts, retried or not).
    errors: dict[str, int] = {}


class Engine(Protocol):
    """One backend for the four AI steps.

    Each method returns a schema- and rubric-valid payload or raises
    :class:`readdod.errors.AIError` (with a precise code). Each later step
    receives the earlier payloads of the same run.
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

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]: ...

    async def score(self, inp: EngineInput, summary: Summary) -> EngineOutput[Score]: ...

    async def todos(
        self, inp: EngineInput, summary: Summary, score: Score
    ) -> EngineOutput[Todos]: ...

    async def card(
        self, inp: EngineInput, summary: Summary, score: Score, todos: Todos
    ) -> EngineOutput[Card]: ...
