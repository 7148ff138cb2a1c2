"""What a pipeline step is made of, and what it hands an engine and gets back.

Pure: a step module declares its step (:class:`Step`) and its ``run`` does its
I/O only through what it is given, the run's :class:`StepContext` and the tools
the pipeline passes (the engine, the fetcher). So the step list can be read by
the pure parts (the rubric, the TUI's progress) as well as by the actor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from readdod import __version__
from readdod.errors import AIError, ErrorCode, Spent, StepError
from readdod.items.models import ArtifactMeta, Extraction, ProvidedDocument, WireStep
from readdod.items.states import Status
from readdod.runtime.retrying import OnRetry

P = TypeVar("P")
W = TypeVar("W", contravariant=True)
S = TypeVar("S", bound=msgspec.Struct)

ChunkStatus = Literal["pending", "processing", "retrying", "done", "error"]

#: What a capture handed over besides its link: (html, text, what a file said of itself).
Source = tuple[str | None, str | None, ProvidedDocument | None]


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
    """What the caller of one step offers it besides the input, passed as an argument.

    ``on_retry`` records an in-step retry; ``note`` records an event about
    the step (e.g. waiting for a model server to come back); ``chunks`` keeps
    long texts' chunk state; ``stop_reason`` says (when not None) that the
    daemon wants the step to stop, so an engine waiting for a server that is
    down gives up; ``reported`` is told of the tokens of each answer as it
    arrives, so a step cut short (a pause, a cancel) still has what its
    answers cost counted. Engines that need none of it ignore it.
    """

    on_retry: OnRetry | None = None
    note: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    chunks: ChunkLedger | None = None
    stop_reason: Callable[[], str | None] | None = None
    reported: Callable[[Spent], None] | None = None


NO_HOOKS: StepHooks = StepHooks()


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


class Named(Protocol):
    """An engine's name and version, which every AI artifact's meta records."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...


class StepResult(msgspec.Struct, kw_only=True):
    """One step's artifact: its payload, its meta, and item fields it sets (a title)."""

    payload: msgspec.Struct
    meta: ArtifactMeta
    item_fields: dict[str, Any] = {}


def engine_result(engine: Named, out: EngineOutput[Any]) -> StepResult:
    """An AI step's result: the engine's payload with the provenance its meta keeps."""
    meta = ArtifactMeta(
        run_id=None,
        engine=engine.name,
        engine_version=f"{engine.version} (readdod {__version__})",
        template_version=out.template_version,
        model=out.model,
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        cached_tokens=out.cached_tokens,
        latency_ms=out.latency_ms,
        attempts=out.attempts,
    )
    return StepResult(payload=out.payload, meta=meta)


async def _no_source() -> Source:
    return None, None, None


class StepContext(msgspec.Struct, kw_only=True):
    """What one run knows so far (the payloads of its finished steps) and its hooks."""

    item_id: str
    url: str | None
    intent: str
    title: str | None
    tags: tuple[str, ...]
    done: dict[str, msgspec.Struct] = {}
    #: When the item was captured (ms since the epoch), for telling past dates from coming ones.
    captured_at: int | None = None
    #: Given to each step, and by it to its engine: retries, notes, chunks, stop, tokens.
    hooks: StepHooks = NO_HOOKS
    #: What the capture handed over (read when a step asks, from the store if need be).
    source: Callable[[], Awaitable[Source]] = _no_source

    def get(self, step: str, typ: type[S]) -> S:
        """The payload ``step`` made in this run; RUN_INCONSISTENT if there is none."""
        payload = self.done.get(step)
        if not isinstance(payload, typ):
            raise AIError(
                f"step {step} has no usable output in this run",
                code=ErrorCode.RUN_INCONSISTENT,
            )
        return payload

    def engine_input(self) -> EngineInput:
        """What an engine is told of the text: the run's extraction and the item."""
        ext = self.get("extraction", Extraction)
        return EngineInput(
            text=ext.text,
            intent=self.intent,
            title=self.title or ext.title,
            url=ext.final_url or ext.url or self.url,
            site_name=ext.site_name,
            lang=ext.lang,
            tags=self.tags,
            captured_at=self.captured_at,
        )


def no_problems(payload: Any) -> list[str]:
    """The check of a step whose Struct says all there is to say."""
    return []


def blank_entries(name: str, texts: list[str]) -> list[str]:
    """A person's version with a point or a todo of no words: it says nothing."""
    return [f"{name} has a blank entry"] if any(not t.strip() for t in texts) else []


@dataclass(frozen=True)
class Step(Generic[W]):
    """One pipeline step, declared once in its module and listed in :data:`readdod.steps.STEPS`.

    ``W`` is what the step asks of the pipeline's tools (an engine, a fetcher).
    """

    #: Its name inside readdod and as an artifact type (``runs.current_step``, events, logs).
    name: str
    #: Its name in ``failure.failed_step`` (seed 000 §6.1).
    wire: WireStep
    #: The Struct its artifact decodes to (decoding is validation).
    payload: type[msgspec.Struct]
    #: The Struct a person's edited version decodes to (structure only, no rubric).
    user_payload: type[msgspec.Struct]
    #: The steps of the same run whose payloads it reads.
    needs: tuple[str, ...]
    #: Makes the run's card: the READY gate requires it, from this run, passing ``check``.
    gated: bool
    #: Where an item whose run failed at this step goes.
    fails_as: Status
    #: What the Struct cannot say (nothing blank, nothing repeated): problems, empty if none.
    check: Callable[[Any], list[str]]
    #: What a person's version must not be, beyond its Struct (no rubric: it is theirs).
    user_check: Callable[[Any], list[str]]
    #: Makes the step's artifact from the run so far and the tools.
    run: Callable[[StepContext, W], Awaitable[StepResult]]
    #: A REGENERATE run reuses the newest artifact of this step unless asked to refetch.
    reused_on_regenerate: bool = False
