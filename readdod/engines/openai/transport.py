"""One chat completion, sent through every safeguard readdod keeps around a model server.

From the inside out: the client never retries by itself and gives up before
readdod's deadline (``ai.timeout_s``); ``ai.concurrency`` bounds requests in
flight and ``ai.rpm``/``ai.tpm`` requests and tokens per minute; the
:class:`CircuitBreaker` parks requests while the server is down; and
:mod:`readdod.retrying` retries what a retry may fix, each retry recorded
through the step's hooks.
"""

from __future__ import annotations

import functools
import math
import time
import urllib.parse
from typing import Any, cast

import anyio
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from readdod import retrying
from readdod.clock import Clock
from readdod.config import AIConfig
from readdod.engines.base import ModelUsage, StepHooks, StepStopped
from readdod.engines.circuit import CircuitBreaker, State
from readdod.engines.openai.answers import bare_schema
from readdod.engines.openai.budget import ANSWER_TOKENS, estimate_tokens
from readdod.engines.openai.errors import CLIENT_TIMEOUT_RATIO, Down, classify
from readdod.engines.openai.limits import RateLimiter
from readdod.engines.openai.tally import Tally
from readdod.errors import AIError, ErrorCode
from readdod.logging import get_logger

log = get_logger("readdod.engines.openai")

Messages = list[dict[str, str]]


def display_url(url: str) -> str:
    """The base URL as messages show it: no user:password@, no query."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Transport:
    """Requests to one OpenAI-compatible server, with their limits, circuit and retries."""

    def __init__(
        self, cfg: AIConfig, *, api_key: str | None, server: str, clock: Clock | None = None
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
        self.slots = anyio.CapacityLimiter(cfg.concurrency)
        self.usage = ModelUsage()
        #: The response format asked for; ``auto`` falls back to ``json_object`` once.
        self.mode = "json_object" if cfg.structured_output == "json_object" else "json_schema"

    async def aclose(self) -> None:
        await self.client.close()

    async def complete(
        self,
        tally: Tally,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        hooks: StepHooks,
        on_retry: retrying.OnRetry | None,
        on_attempt: retrying.OnAttempt | None = None,
    ) -> str:
        """The model's answer to ``messages``, after the retries it needed; its cost tallied."""

        async def attempt() -> Any:
            return await self._request(tally, messages, kind, schema, hooks)

        resp = await retrying.call(attempt, self.policy, on_retry or hooks.on_retry, on_attempt)
        if resp.usage is not None:
            tally.prompt_tokens += resp.usage.prompt_tokens or 0
            tally.completion_tokens += resp.usage.completion_tokens or 0
            self.usage.prompt_tokens += resp.usage.prompt_tokens or 0
            self.usage.completion_tokens += resp.usage.completion_tokens or 0
        if not resp.choices:
            return ""
        choice = resp.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal or choice.finish_reason == "content_filter":
            raise AIError(
                f"the model declined to write the {kind}: {str(refusal or 'content filter')[:300]}",
                code=ErrorCode.AI_REFUSED,
                retryable=False,
            )
        return message.content or ""

    async def _request(
        self, tally: Tally, messages: Messages, kind: str, schema: dict[str, Any], hooks: StepHooks
    ) -> Any:
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
                return await self._once(tally, messages, kind, schema, hooks)
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
        hooks: StepHooks,
    ) -> Any:
        """One request through the circuit, the limits and the deadline; errors typed."""
        model = tally.model
        tokens = sum(estimate_tokens(m["content"]) for m in messages) + ANSWER_TOKENS
        stop_reason = hooks.stop_reason
        give_up = (lambda: stop_reason() is not None) if stop_reason is not None else None
        on_wait = functools.partial(self._note_throttled, hooks) if hooks.note else None
        while True:
            probe = await self.circuit.enter(give_up=give_up)
            if probe is None:
                raise StepStopped((stop_reason() if stop_reason else None) or "stop")
            try:
                if not await self.limiter.acquire(tokens, on_wait=on_wait, give_up=give_up):
                    raise StepStopped((stop_reason() if stop_reason else None) or "stop")
                async with self.slots:
                    tally.requests += 1
                    self.usage.requests += 1
                    started = time.perf_counter()
                    try:
                        resp = await self._send(model, messages, kind, schema)
                    finally:
                        tally.latency_ms += (time.perf_counter() - started) * 1000
            except Exception as exc:
                error, verdict = classify(
                    exc, server=self.server, model=model, cfg=self.cfg, mode=self.mode
                )
                if verdict == "fallback":
                    log.info("ai.structured_output_fallback", base_url=self.server)
                    self.mode = "json_object"
                    self.circuit.succeeded()
                    continue
                code = error.error_code if error is not None else ErrorCode.INTERNAL_ERROR
                self.usage.errors[code] = self.usage.errors.get(code, 0) + 1
                if verdict == "down":
                    self.circuit.failed()
                elif verdict == "answered":
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
            return resp

    async def _send(
        self, model: str, messages: Messages, kind: str, schema: dict[str, Any]
    ) -> ChatCompletion:
        fmt: dict[str, Any]
        if self.mode == "json_schema":
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": kind, "schema": bare_schema(schema), "strict": False},
            }
        else:
            fmt = {"type": "json_object"}
        with anyio.fail_after(self.cfg.timeout_s):
            return await self.client.chat.completions.create(
                model=model,
                messages=cast("list[ChatCompletionMessageParam]", messages),
                temperature=self.cfg.temperature,
                response_format=cast("ResponseFormat", fmt),
            )

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
