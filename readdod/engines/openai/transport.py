"""One chat completion, sent through every safeguard readdod keeps around a model server.

From the inside out: every request carries ``max_tokens`` and is streamed, so
a request readdod gives up on (``ai.timeout_s``) closes its connection and a
server that honours the disconnect stops generating instead of keeping the
next request waiting; the client never retries by itself; requests in flight
are bounded per server and model by a limit learned from its answers, up to
``ai.concurrency`` (:mod:`.concurrency`), and ``ai.rpm``/``ai.tpm`` bound
requests and tokens per minute; the :class:`CircuitBreaker` parks requests
while the server is down; and :mod:`readdod.runtime.retrying` retries what a retry
may fix, each retry recorded through the step's hooks.

A stream cut short (llama-cpp-python ends a running stream when the next
request arrives; a proxy may close it) is the server's way of saying it
takes fewer requests at once, not a failure: the limit is lowered and the
request sent again, without counting against the circuit or the step's
attempts. After :data:`MAX_CUTS` cuts, or a cut with one request in flight,
the request is asked whole (not streamed), which no server cuts.

The response format is learned from the server's answers (:mod:`.formats`):
an error that names the format moves the request one step down the ladder,
at once and without counting against the circuit, and the format that works
is remembered per server and model (:class:`.servers.ServerMemory`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import urllib.parse
from typing import Any, cast

import anyio
import openai
from openai import AsyncOpenAI
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from readdod.engines.base import ModelUsage, StepHooks, StepStopped
from readdod.engines.circuit import CircuitBreaker, State
from readdod.engines.openai import formats
from readdod.engines.openai.budget import estimate_tokens
from readdod.engines.openai.concurrency import AdaptiveSlots
from readdod.engines.openai.errors import CLIENT_TIMEOUT_RATIO, Down, classify
from readdod.engines.openai.limits import RateLimiter
from readdod.engines.openai.servers import ServerMemory
from readdod.engines.openai.tally import Tally
from readdod.errors import AIError, ErrorCode, Spent
from readdod.runtime import retrying
from readdod.runtime.clock import Clock
from readdod.runtime.logging import get_logger
from readdod.settings.config import AIConfig

log = get_logger("readdod.engines.openai")

Messages = list[dict[str, str]]

#: Seconds a closing stream may take once readdod gave up on it.
CLOSE_S = 2.0
#: Cut streams one request may meet before it is asked whole.
MAX_CUTS = 6


class StreamBroken(Exception):
    """A streamed request that failed before its first event, after its 200 (as
    llama-cpp-python's does on a prompt beyond its context): asked whole, the server
    says why."""


class StreamCut(Exception):
    """A streamed answer cut short after it began: the connection closed, or the
    stream ended with no finish reason."""


@dataclasses.dataclass
class Answer:
    """One streamed answer, put together: its text, why it ended, what it cost."""

    content: str = ""
    refusal: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    #: The likeliest first tokens and their log-probabilities, when the request asked
    #: for them (a relevance probe) and the server gave them.
    first_tokens: list[tuple[str, float]] = dataclasses.field(default_factory=list)

    def add(self, chunk: ChatCompletionChunk) -> None:
        for choice in chunk.choices:
            delta = choice.delta
            if delta is not None:
                self.content += delta.content or ""
                self.refusal += getattr(delta, "refusal", None) or ""
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        self.count(chunk.usage, chunk.model_extra)

    def count(self, usage: CompletionUsage | None, extra: dict[str, Any] | None) -> None:
        """The tokens an answer says it cost: ``usage``, and llama.cpp's ``timings``."""
        if usage is not None:
            self.prompt_tokens = usage.prompt_tokens
            self.completion_tokens = usage.completion_tokens
            details = usage.prompt_tokens_details
            if details is not None and details.cached_tokens is not None:
                self.cached_tokens = details.cached_tokens
        # llama.cpp's server: tokens evaluated (prompt_n) and taken from its cache (cache_n).
        timings = (extra or {}).get("timings")
        if isinstance(timings, dict):
            fresh, cached = timings.get("prompt_n"), timings.get("cache_n")
            if isinstance(cached, int):
                self.cached_tokens = cached
                if isinstance(fresh, int) and self.prompt_tokens is None:
                    self.prompt_tokens = fresh + cached


def _unstreamed(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in ("stream", "stream_options")}


def display_url(url: str) -> str:
    """The base URL as messages show it: no user:password@, no query."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class CompletionClient:
    """Requests to one OpenAI-compatible server, with their limits, circuit and retries."""

    def __init__(
        self,
        cfg: AIConfig,
        *,
        api_key: str | None,
        server: str,
        clock: Clock | None = None,
        memory: ServerMemory | None = None,
    ) -> None:
        self.cfg = cfg
        self.server = server
        self.client = AsyncOpenAI(
            # Local servers (Ollama, llama.cpp, vLLM) accept any key; the client requires one.
            api_key=api_key or "no-key",
            base_url=cfg.base_url,
            max_retries=0,
            timeout=cfg.timeout_s * CLIENT_TIMEOUT_RATIO,
        )
        self.policy = retrying.RetryPolicy(
            attempts=cfg.attempts,
            initial_s=cfg.retry_initial_s,
            max_s=max(cfg.retry_max_s, cfg.retry_initial_s),
            jitter_s=min(1.0, cfg.retry_initial_s),
        )
        self.circuit = CircuitBreaker(
            cfg.circuit_failures, cfg.circuit_probe_s, name=server, clock=clock
        )
        self.limiter = RateLimiter(cfg.rpm, cfg.tpm)
        self.memory = memory or ServerMemory(None)
        #: Requests in flight per model, each with its learned limit.
        self._slots: dict[str, AdaptiveSlots] = {}
        #: Streams cut short since the engine was built (not failures).
        self.cuts = 0
        #: The response format each model is asked in, once known.
        self.modes: dict[str, str] = {}
        #: Request parameters this server refused, and what replaces them.
        self.token_param = "max_tokens"
        self.usage_in_stream = True
        #: Whether probes ask for log-probabilities (until the server refuses them).
        self.logprobs = True
        self.usage = ModelUsage()

    async def aclose(self) -> None:
        await self.client.close()

    def slots(self, model: str) -> AdaptiveSlots:
        """The requests in flight to ``model`` here, shared by every step and item."""
        if model not in self._slots:

            def moved(limit: int, why: str) -> None:
                log.info(
                    "ai.concurrency",
                    base_url=self.server,
                    model=model,
                    limit=limit,
                    ceiling=self.cfg.concurrency,
                    reason=why,
                )
                self.memory.remember(self.server, model, concurrency=limit)

            learned = self.memory.get(self.server, model).concurrency
            self._slots[model] = AdaptiveSlots(self.cfg.concurrency, learned, moved)
        return self._slots[model]

    def mode(self, model: str) -> str:
        """The response format ``model`` is asked in: ``ai.structured_output``, else learned."""
        if self.cfg.structured_output != "auto":
            return self.cfg.structured_output
        if model not in self.modes:
            known = self.memory.get(self.server, model).format
            self.modes[model] = known if known in formats.LADDER else formats.LADDER[0]
        return self.modes[model]

    async def complete(
        self,
        tally: Tally,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        max_tokens: int,
        hooks: StepHooks,
        on_retry: retrying.OnRetry | None,
        on_attempt: retrying.OnAttempt | None = None,
        *,
        logprobs: int = 0,
    ) -> Answer:
        """The model's answer to ``messages``, after the retries it needed; its cost tallied.

        ``logprobs`` > 0 makes a probe: no response format, asked whole, with the
        likeliest first tokens (:attr:`Answer.first_tokens`) when the server gives them.
        """

        async def attempt() -> Answer:
            return await self._request(
                tally, messages, kind, schema, max_tokens, hooks, logprobs=logprobs
            )

        answer = await retrying.call(attempt, self.policy, on_retry or hooks.on_retry, on_attempt)
        tally.prompt_tokens += answer.prompt_tokens or 0
        tally.completion_tokens += answer.completion_tokens or 0
        if answer.cached_tokens is not None:
            tally.cached_tokens = (tally.cached_tokens or 0) + answer.cached_tokens
        if hooks.reported is not None and (answer.prompt_tokens or answer.completion_tokens):
            hooks.reported(
                Spent(
                    model=tally.model,
                    prompt_tokens=answer.prompt_tokens or 0,
                    completion_tokens=answer.completion_tokens or 0,
                    cached_tokens=answer.cached_tokens,
                )
            )
        self.usage.prompt_tokens += answer.prompt_tokens or 0
        self.usage.completion_tokens += answer.completion_tokens or 0
        if answer.refusal or answer.finish_reason == "content_filter":
            raise AIError(
                f"the model declined to write the {kind}:"
                f" {(answer.refusal or 'content filter')[:300]}",
                code=ErrorCode.AI_REFUSED,
                retryable=False,
            )
        return answer

    async def _request(
        self,
        tally: Tally,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        max_tokens: int,
        hooks: StepHooks,
        *,
        logprobs: int = 0,
    ) -> Answer:
        """One request, parked while the circuit is open; raises a retryable AIError otherwise."""
        noted = False
        last: AIError | None = None
        while True:
            if not noted and self.circuit.state is not State.CLOSED and hooks.note is not None:
                noted = True
                await hooks.note(
                    "step.waiting",
                    {
                        "reason": "provider_unavailable",
                        "circuit": self.circuit.state.value,
                        "error_code": last.error_code if last else None,
                        "message": (last.message if last else None)
                        or f"the model server {self.server} is unavailable;"
                        " waiting for it to answer again",
                        "probe_s": self.cfg.circuit_probe_s,
                    },
                )
            try:
                return await self._once(
                    tally, messages, kind, schema, max_tokens, hooks, logprobs=logprobs
                )
            except Down as down:
                if self.circuit.state is State.CLOSED:
                    raise down.error from down
                last = down.error

    async def _once(
        self,
        tally: Tally,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        max_tokens: int,
        hooks: StepHooks,
        *,
        logprobs: int = 0,
    ) -> Answer:
        """One request through the circuit, the limits and the deadline; errors typed."""
        model = tally.model
        tokens = sum(estimate_tokens(m["content"]) for m in messages) + max_tokens
        stop_reason = hooks.stop_reason
        give_up = (lambda: stop_reason() is not None) if stop_reason is not None else None
        on_wait = functools.partial(self._note_throttled, hooks) if hooks.note else None
        slots = self.slots(model)
        cuts = 0
        whole = False
        while True:
            mode = self.mode(model)
            probe = await self.circuit.enter(give_up=give_up)
            if probe is None:
                raise StepStopped((stop_reason() if stop_reason else None) or "stop")
            try:
                if not await self.limiter.acquire(tokens, on_wait=on_wait, give_up=give_up):
                    raise StepStopped((stop_reason() if stop_reason else None) or "stop")
                async with slots.slot() as slot:
                    # Read once the slot is ours: a request queued behind the one that
                    # found the format goes out in it.
                    mode = self.mode(model)
                    tally.requests += 1
                    self.usage.requests += 1
                    started = time.perf_counter()
                    answer: Answer | None = None
                    alone = slots.limit == 1
                    try:
                        answer = await self._send(
                            model,
                            messages,
                            kind,
                            schema,
                            max_tokens,
                            mode,
                            whole=whole,
                            logprobs=logprobs,
                        )
                    except StreamCut:
                        # Lowered while the slot is still held: released first, it would
                        # let a queued request out at the old limit, to be cut in turn.
                        slots.lower(slot, "stream cut short", cut=True)
                        raise
                    except openai.APIStatusError as exc:
                        if exc.status_code in (429, 503):
                            slots.lower(slot, f"HTTP {exc.status_code}")
                        raise
                    finally:
                        spent = time.perf_counter() - started
                        tally.latency_ms += spent * 1000
                        asked = "prompt" if logprobs else mode
                        self._logged(model, kind, asked, max_tokens, spent, answer, slots.limit)
            except StreamCut as cut:
                # The server is up and answering: it takes fewer requests at once.
                cuts += 1
                self.cuts += 1
                whole = cuts >= MAX_CUTS or alone
                log.info(
                    "ai.stream_cut",
                    base_url=self.server,
                    model=model,
                    kind=kind,
                    cuts=cuts,
                    limit=slots.limit,
                    next="whole" if whole else "stream",
                    error=str(cut)[:300],
                )
                self.circuit.succeeded()
                continue
            except Exception as exc:
                error, verdict = classify(
                    exc, server=self.server, model=model, cfg=self.cfg, mode=mode
                )
                if verdict == "fallback" and logprobs:
                    # A probe asks in no format: what it is refused says nothing of
                    # the formats the steps use.
                    self.circuit.succeeded()
                    raise AIError(
                        f"the model server {self.server} refused a {kind} question asked"
                        f" without a response format: {str(exc)[:300]}",
                        code=ErrorCode.AI_PROVIDER_ERROR,
                        retryable=False,
                    ) from exc
                if verdict == "fallback":
                    self._step_down(model, mode, exc)
                    self.circuit.succeeded()
                    continue
                if verdict == "adapt" and self._adapt(exc):
                    self.circuit.succeeded()
                    continue
                code = error.error_code if error is not None else ErrorCode.INTERNAL_ERROR
                self.usage.errors[code] = self.usage.errors.get(code, 0) + 1
                if verdict == "down":
                    self.circuit.failed()
                elif verdict in ("answered", "context", "adapt"):
                    self.circuit.succeeded()
                elif probe:
                    self.circuit.abandoned()
                if error is None:
                    raise
                if verdict == "down":
                    raise Down(error) from exc
                raise error from exc
            except BaseException:
                if probe:
                    self.circuit.abandoned()
                raise
            self.circuit.succeeded()
            slots.succeed(max_tokens)
            assert answer is not None
            return answer

    def _logged(
        self,
        model: str,
        kind: str,
        mode: str,
        max_tokens: int,
        spent: float,
        answer: Answer | None,
        concurrency: int,
    ) -> None:
        """One line per request: the format, its limit, its time and what it cost, and
        how many requests the server is given at once."""
        got = answer or Answer()
        log.info(
            "ai.request",
            base_url=self.server,
            model=model,
            kind=kind,
            format=mode,
            max_tokens=max_tokens,
            seconds=round(spent, 3),
            answered=answer is not None,
            finish_reason=got.finish_reason,
            prompt_tokens=got.prompt_tokens,
            cached_tokens=got.cached_tokens,
            completion_tokens=got.completion_tokens,
            concurrency=concurrency,
        )

    def _step_down(self, model: str, mode: str, exc: Exception) -> None:
        """The server named the format ``mode``: ask ``model`` in the next one from now on."""
        nxt = formats.next_format(mode)
        assert nxt is not None
        log.info(
            "ai.structured_output_fallback",
            base_url=self.server,
            model=model,
            refused=mode,
            next=nxt,
            message=str(exc)[:300],
        )
        self.modes[model] = nxt
        self.memory.remember(self.server, model, format=nxt)

    def _adapt(self, exc: Exception) -> bool:
        """Change the request parameter the server refused; False when nothing is left to
        change."""
        said = str(exc)
        if "max_completion_tokens" in said and self.token_param == "max_tokens":
            self.token_param = "max_completion_tokens"
        elif "stream_options" in said and self.usage_in_stream:
            self.usage_in_stream = False
        elif "logprobs" in said and self.logprobs:
            self.logprobs = False
        else:
            return False
        log.info("ai.request_adapted", base_url=self.server, message=said[:300])
        return True

    async def _send(
        self,
        model: str,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        max_tokens: int,
        mode: str,
        *,
        whole: bool = False,
        logprobs: int = 0,
    ) -> Answer:
        """One request; ``whole``: not streamed (after streams were cut short, and for a
        probe, whose answer is a word)."""
        params: dict[str, Any] = {
            "model": model,
            "messages": cast("list[ChatCompletionMessageParam]", messages),
            "temperature": self.cfg.temperature,
            self.token_param: max_tokens,
            "stream": True,
        }
        if self.usage_in_stream:
            params["stream_options"] = {"include_usage": True}
        fmt = None if logprobs else formats.response_format(mode, kind, schema)
        if fmt is not None:
            params["response_format"] = fmt
        if logprobs:
            whole = True
            if self.logprobs:
                params["logprobs"] = True
                params["top_logprobs"] = logprobs
        with anyio.fail_after(self.cfg.timeout_s):
            if whole:
                return await self._whole(_unstreamed(params))
            try:
                return await self._streamed(params)
            except StreamBroken as broken:
                # Some servers fail a streamed request after its 200 (llama-cpp-python on a
                # prompt beyond its context): asked whole, they answer with the error itself.
                log.info("ai.stream_broken", base_url=self.server, error=str(broken)[:300])
                return await self._whole(_unstreamed(params))

    async def _streamed(self, params: dict[str, Any]) -> Answer:
        answer = Answer()
        events = 0
        stream = await self.client.chat.completions.create(**params)
        try:
            async for chunk in stream:
                events += 1
                answer.add(chunk)
        except openai.APITimeoutError:
            raise  # a slow server, not a broken answer: timed as any request
        except openai.APIError as exc:
            if not isinstance(exc, openai.APIConnectionError):
                raise  # an error event in the stream: the server's answer
            broke = f"the answer broke off after {events} events: {exc.__cause__ or exc!r}"
            raise (StreamCut(broke) if events else StreamBroken(broke)) from exc
        except Exception as exc:
            # The connection broke mid-stream (the HTTP library's own error type).
            broke = f"the answer broke off after {events} events: {exc!r}"
            raise (StreamCut(broke) if events else StreamBroken(broke)) from exc
        finally:
            # Closing the connection is what tells the server to stop generating.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_S):
                await stream.close()
        if answer.finish_reason is None:
            raise StreamCut(f"the answer ended after {events} events without a finish reason")
        return answer

    async def _whole(self, params: dict[str, Any]) -> Answer:
        resp = await self.client.chat.completions.create(**params)
        answer = Answer()
        for choice in resp.choices[:1]:
            answer.content = choice.message.content or ""
            answer.refusal = getattr(choice.message, "refusal", None) or ""
            answer.finish_reason = choice.finish_reason
            content = choice.logprobs.content if choice.logprobs is not None else None
            if content:
                answer.first_tokens = [(t.token, t.logprob) for t in content[0].top_logprobs]
        answer.count(resp.usage, resp.model_extra)
        return answer

    async def _note_throttled(self, hooks: StepHooks, limit: str, wait_s: float) -> None:
        assert hooks.note is not None
        await hooks.note(
            "step.waiting",
            {
                "reason": "rate_limit",
                "error_code": None,
                "message": f"{limit} is reached for {self.server}; the next request goes out"
                f" in {math.ceil(wait_s)} s",
            },
        )
