"""The step order and what each step does (DESIGN §4.1).

Steps take what earlier steps of the same run produced and return a payload;
they raise :class:`readdod.errors.StepError` subclasses on failure. They
never touch the store or a status: the actor hands their results to the
core's lease book.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import msgspec

from readdod import __version__
from readdod.config import FetchConfig
from readdod.engines.base import (
    ChunkLedger,
    Engine,
    EngineInput,
    EngineOutput,
    StepHooks,
    step_hooks,
)
from readdod.errors import AIError, ErrorCode, Spent
from readdod.extraction import extract
from readdod.extraction.extract import extract_document, extract_text
from readdod.extraction.fetch import FetchClient, extract_url
from readdod.models import (
    PAYLOAD_TYPES,
    ArtifactMeta,
    Card,
    Extraction,
    Payload,
    ProvidedDocument,
    Score,
    Summary,
    Todos,
)
from readdod.retrying import OnRetry

#: The extraction has no prompt template: its meta names the version of the
#: extraction contract (seed 001 §2.1) that the payload follows.
EXTRACTION_TEMPLATE_VERSION: Final = "extraction.v1"


class StepResult(msgspec.Struct, kw_only=True):
    payload: Payload
    meta: ArtifactMeta
    item_fields: dict[str, Any] = {}


class RunContext(msgspec.Struct, kw_only=True):
    """What one run knows so far: the payloads of its finished steps."""

    item_id: str
    url: str | None
    intent: str
    title: str | None
    tags: tuple[str, ...]
    done: dict[str, Payload] = {}
    #: When the item was captured (ms since the epoch), for telling past dates from coming ones.
    captured_at: int | None = None
    #: Told before each in-step retry wait, so the retrying state is recorded.
    on_retry: OnRetry | None = None
    #: Records an event about the running step (e.g. waiting for the model server).
    note: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    #: Keeps the state of a long text's chunks for this run.
    chunks: ChunkLedger | None = None
    #: Why the daemon wants the run to stop (pause, shutdown); None to go on.
    stop_reason: Callable[[], str | None] | None = None
    #: Told of the tokens of each model answer as it arrives (what the run spent).
    reported: Callable[[Spent], None] | None = None

    def get(self, step: str, typ: type[Any]) -> Any:
        payload = self.done.get(step)
        if not isinstance(payload, typ):
            raise AIError(
                f"step {step} has no usable output in this run",
                code=ErrorCode.RUN_INCONSISTENT,
            )
        return payload


def decode_payload(step: str, raw: str | bytes) -> Payload:
    return msgspec.json.decode(raw, type=PAYLOAD_TYPES[step])


class Pipeline:
    """Runs one step at a time for an actor."""

    def __init__(self, engine: Engine, http: FetchClient, fetch: FetchConfig) -> None:
        self.engine = engine
        self.http = http
        self.fetch_cfg = fetch

    async def extraction(
        self,
        ctx: RunContext,
        html: str | None,
        text: str | None,
        document: ProvidedDocument | None = None,
    ) -> StepResult:
        """``document``: what the file ``text`` was read from said of itself (a PDF's metadata)."""
        if text is not None and document is not None:
            payload = extract_document(text, document, title=ctx.title, url=ctx.url)
        elif text is not None:
            payload = extract_text(text, title=ctx.title, url=ctx.url)
        elif html is not None:
            payload = await anyio.to_thread.run_sync(
                lambda: extract(html, ctx.url, source="provided_html")
            )
        else:
            assert ctx.url is not None
            payload = await extract_url(
                ctx.url,
                client=self.http,
                max_bytes=self.fetch_cfg.max_bytes,
                max_redirects=self.fetch_cfg.max_redirects,
                timeout_s=self.fetch_cfg.timeout_s,
                on_retry=ctx.on_retry,
            )
        fields: dict[str, Any] = {}
        if payload.final_url:
            fields["final_url"] = payload.final_url
        if ctx.title is None and payload.title:
            fields["title"] = payload.title[:300]
        meta = ArtifactMeta(
            run_id=None,
            engine="extractor",
            engine_version=payload.extractor,
            template_version=EXTRACTION_TEMPLATE_VERSION,
        )
        return StepResult(payload=payload, meta=meta, item_fields=fields)

    def _input(self, ctx: RunContext) -> EngineInput:
        ext: Extraction = ctx.get("extraction", Extraction)
        return EngineInput(
            text=ext.text,
            intent=ctx.intent,
            title=ctx.title or ext.title,
            url=ext.final_url or ext.url or ctx.url,
            site_name=ext.site_name,
            lang=ext.lang,
            tags=ctx.tags,
            captured_at=ctx.captured_at,
        )

    def _meta(self, out: EngineOutput[Any]) -> ArtifactMeta:
        return ArtifactMeta(
            run_id=None,
            engine=self.engine.name,
            engine_version=f"{self.engine.version} (readdod {__version__})",
            template_version=out.template_version,
            model=out.model,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            cached_tokens=out.cached_tokens,
            latency_ms=out.latency_ms,
            attempts=out.attempts,
        )

    async def ai_step(self, step: str, ctx: RunContext) -> StepResult:
        hooks = StepHooks(
            on_retry=ctx.on_retry,
            note=ctx.note,
            chunks=ctx.chunks,
            stop_reason=ctx.stop_reason,
            reported=ctx.reported,
        )
        with step_hooks(hooks):
            return await self._ai_step(step, ctx)

    async def _ai_step(self, step: str, ctx: RunContext) -> StepResult:
        inp = self._input(ctx)
        fields: dict[str, Any] = {}
        out: EngineOutput[Any]
        if step == "summary":
            out = await self.engine.summarize(inp)
        elif step == "score":
            # The item takes the score's priority when the run makes it READY, not before:
            # until then it shows the run it is READY on, if any.
            out = await self.engine.score(inp, ctx.get("summary", Summary))
        elif step == "todos":
            out = await self.engine.todos(inp, ctx.get("summary", Summary), ctx.get("score", Score))
        elif step == "card":
            out = await self.engine.card(
                inp, ctx.get("summary", Summary), ctx.get("score", Score), ctx.get("todos", Todos)
            )
            assert isinstance(out.payload, Card)
        else:
            raise ValueError(f"unknown step {step}")
        return StepResult(payload=out.payload, meta=self._meta(out), item_fields=fields)
