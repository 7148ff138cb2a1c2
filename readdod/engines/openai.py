"""The ``openai`` engine: any OpenAI-compatible chat-completions server.

``ai.base_url`` points it at OpenAI, Ollama, vLLM, llama.cpp's server or LM
Studio. Each step renders a versioned prompt template (``templates/``,
chosen by ``ai.profile``), asks for JSON matching the payload's generated
JSON Schema (``response_format`` ``json_schema`` where the server supports
it, ``json_object`` plus validation where not), and judges the answer with
:mod:`readdod.rubric`. An invalid answer gets one repair request that tells
the model what was wrong; a second invalid answer fails the step.

Resilience, from the inside out:

- the client never retries by itself (``max_retries=0``) and its timeout is
  below readdod's own deadline for the request (``ai.timeout_s``);
- timeouts, 429 (honouring ``Retry-After``), 5xx and connection errors are
  retried by :mod:`readdod.retrying`, each retry recorded through the step's
  ``on_retry`` hook;
- consecutive connection failures and 5xx open a :class:`CircuitBreaker`;
  while it is open, requests wait for the server instead of failing;
- ``ai.concurrency`` bounds requests in flight and ``ai.rpm`` / ``ai.tpm``
  bound requests and tokens per minute.

Text beyond the context budget (``ai.context_tokens``) is split on paragraph
boundaries; the summary maps over the chunks and reduces their notes, each
chunk's state kept in the step's :class:`ChunkLedger`.

The card is assembled from the run's summary, score and todos; the model
only names it (title and one-liner), so the card cannot drift from what the
earlier steps decided.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import os
import re
import string
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar, cast

import anyio
import msgspec
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from readdod import retrying, rubric, schemas
from readdod.clock import Clock
from readdod.config import AIConfig
from readdod.engines.base import (
    EngineInput,
    EngineOutput,
    StepHooks,
    StepStopped,
    current_hooks,
)
from readdod.engines.circuit import CircuitBreaker, State
from readdod.errors import AIError, ConfigError, ErrorCode, StepError
from readdod.logging import add_secret, get_logger
from readdod.models import TL_DR_MAX, Card, CardSource, RenderSpec, Score, Summary, Todos
from readdod.text import Level, chunk, paragraphs, split_sentences
from readdod.text import reading_minutes as reading_minutes  # the reading time of every engine

log = get_logger("readdod.engines.openai")
T = TypeVar("T")

#: Tokens kept free in the context for the prompt template, the schema and the answer.
RESERVED_TOKENS: Final = 2_048
#: Tokens assumed for an answer when reserving from ``ai.tpm``.
ANSWER_TOKENS: Final = 512
#: The client gives up this much before readdod's own deadline, so its error is the one seen.
CLIENT_TIMEOUT_RATIO: Final = 0.9
#: Longest sleep of a request held back by ``ai.rpm``/``ai.tpm`` before it re-checks.
MAX_NAP_S: Final = 1.0


# --- what the model is asked for, beyond the artifact payloads -------------


class ChunkNotes(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one chunk of a long text says (the map step of a long summary)."""

    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=1_000)]
    key_points: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=500)]],
        msgspec.Meta(min_length=1, max_length=7),
    ]


class CardText(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The words of a card; the rest of it comes from the earlier steps."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    one_liner: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]


def _struct_schema(typ: type[Any]) -> dict[str, Any]:
    raw = msgspec.json.schema(typ)
    defs: dict[str, Any] = raw.get("$defs", {})
    out: dict[str, Any] = dict(defs.pop(typ.__name__))
    if defs:
        out["$defs"] = defs
    return out


def _display_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without ``$schema``/``$id``, which some servers' schema subsets reject."""
    return {k: v for k, v in schema.items() if k not in ("$schema", "$id")}


def _judge(kind: str, typ: type[T], content: str) -> tuple[T | None, list[str], bool]:
    """Decode and check ``content``: (payload, problems, parsed-as-JSON)."""
    text = _strip_fence(content)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        return None, [f"the answer is not valid JSON ({exc})"], False
    if kind in schemas.ARTIFACT_TYPES:
        payload, problems = rubric.validate(kind, raw)
        return payload, problems, True  # type: ignore[return-value]
    try:
        return msgspec.convert(raw, type=typ), [], True
    except msgspec.ValidationError as exc:
        return None, [f"{kind}: {exc}"], True


def _strip_fence(content: str) -> str:
    """Some servers wrap JSON mode answers in a Markdown fence anyway."""
    s = content.strip()
    m = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", s, flags=re.S)
    return m.group(1) if m else s


# --- templates ---------------------------------------------------------------


class Template(msgspec.Struct, frozen=True):
    version: str
    body: string.Template


@functools.cache
def load_template(name: str, profile: str) -> Template:
    """The newest ``<name>[.<profile>].vN.txt``; the default variant when the profile has none."""
    folder = resources.files("readdod.engines") / "templates"
    found: dict[str, tuple[int, str]] = {}
    for entry in folder.iterdir():
        m = re.fullmatch(r"([a-z_]+)(?:\.([a-z]+))?\.v(\d+)\.txt", entry.name)
        if not m or m.group(1) != name:
            continue
        variant = m.group(2) or "default"
        version = int(m.group(3))
        if version > found.get(variant, (0, ""))[0]:
            found[variant] = (version, entry.name)
    chosen = found.get(profile) or found.get("default")
    if chosen is None:
        raise ConfigError(f"no prompt template {name!r} is bundled with readdod")
    file = chosen[1]
    return Template(
        version=file.removesuffix(".txt"),
        body=string.Template((folder / file).read_text("utf-8")),
    )


# --- helpers ---------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """A deliberately generous guess (about 3 UTF-8 bytes a token): no tokenizer needed."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def _fit_tokens(text: str, budget_tokens: int) -> int:
    """Characters of the longest prefix of ``text`` within ``budget_tokens``."""
    return len(text.encode("utf-8")[: budget_tokens * 3].decode("utf-8", "ignore"))


_CHUNK_LEVELS: Final = (Level(paragraphs, "\n\n"), Level(split_sentences, " "))


def split_paragraphs(text: str, budget_tokens: int) -> list[str]:
    """Split ``text`` into chunks of at most ``budget_tokens``, on paragraph boundaries.

    A paragraph larger than the budget is cut at sentence ends, and a
    sentence larger than that at the budget itself.
    """
    return chunk(text, _CHUNK_LEVELS, budget_tokens, size=estimate_tokens, fit=_fit_tokens)


def clip_tokens(text: str, budget_tokens: int) -> str:
    if estimate_tokens(text) <= budget_tokens:
        return text
    head = text.encode("utf-8")[: budget_tokens * 3].decode("utf-8", "ignore")
    return head.rsplit("\n\n", 1)[0] if "\n\n" in head else head


def read_api_key(env_name: str, environ: dict[str, str] | None = None) -> str | None:
    """The key from ``$<env_name>``, else from ``$CREDENTIALS_DIRECTORY/<env_name>`` (systemd)."""
    env = os.environ if environ is None else environ
    value = env.get(env_name, "").strip()
    if value:
        return value
    creds = env.get("CREDENTIALS_DIRECTORY")
    if creds:
        path = Path(creds) / env_name
        try:
            value = path.read_text("utf-8").strip()
        except OSError:
            return None
        return value or None
    return None


class _Down(Exception):
    """The server could not be reached or answered 5xx: counts against the circuit."""

    def __init__(self, error: AIError) -> None:
        super().__init__(error.message)
        self.error = error


class RateLimiter:
    """Requests and tokens per minute for one provider, over a sliding minute."""

    def __init__(self, rpm: int, tpm: int) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self._window: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = anyio.Lock()

    def wait_s(self, now: float, tokens: int) -> float:
        """Seconds until ``tokens`` more may go out; 0 means now (and counts them)."""
        while self._window and self._window[0][0] <= now - 60:
            self._window.popleft()
        used = sum(t for _, t in self._window)
        rpm_ok = not self.rpm or len(self._window) < self.rpm
        tpm_ok = not self.tpm or not self._window or used + tokens <= self.tpm
        if rpm_ok and tpm_ok:
            self._window.append((now, tokens))
            return 0.0
        return max(self._window[0][0] + 60 - now, 0.01)

    def _full(self) -> str:
        """Which limit holds a request back, as the config names it."""
        return "ai.rpm" if self.rpm and len(self._window) >= self.rpm else "ai.tpm"

    async def acquire(
        self,
        tokens: int,
        *,
        on_wait: Callable[[str, float], Awaitable[None]] | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> bool:
        """Wait for room for ``tokens``; False, without counting them, once ``give_up()``."""
        if not self.rpm and not self.tpm:
            return True
        noted = False
        async with self._lock:
            while True:
                wait = self.wait_s(time.monotonic(), tokens)
                if not wait:
                    return True
                if not noted and on_wait is not None:
                    noted = True
                    await on_wait(self._full(), wait)
                if give_up is not None and give_up():
                    return False
                # In short naps, so a pause or a stop is seen within a second.
                await anyio.sleep(min(wait, MAX_NAP_S))


class _Tally:
    """What one step's requests cost, for ``artifact.meta``."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.latency_ms = 0.0
        self.requests = 0
        self.templates: list[str] = []

    def output(self, payload: T) -> EngineOutput[T]:
        return EngineOutput(
            payload=payload,
            template_version="+".join(dict.fromkeys(self.templates)),
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=round(self.latency_ms),
            attempts=self.requests,
        )


Messages = list[dict[str, str]]


class OpenAIEngine:
    """The :class:`readdod.engines.base.Engine` for OpenAI-compatible servers."""

    name: str = "openai"
    version: str = "1"

    def __init__(
        self,
        cfg: AIConfig,
        *,
        environ: dict[str, str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        if cfg.circuit_failures > cfg.attempts:
            raise ConfigError(
                f"ai.circuit_failures ({cfg.circuit_failures}) must not exceed ai.attempts"
                f" ({cfg.attempts}): a lone item would fail before the circuit could open"
            )
        self.cfg = cfg
        #: The base URL as messages show it: no user:password@, no query.
        self.server = _display_url(cfg.base_url)
        key = read_api_key(cfg.api_key_env, environ)
        add_secret(key)
        if key is None:
            log.info("ai.no_api_key", api_key_env=cfg.api_key_env, base_url=self.server)
        self.client = AsyncOpenAI(
            # Local servers (Ollama, llama.cpp, vLLM) accept any key; the client requires one.
            api_key=key or "no-key",
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
            cfg.circuit_failures, cfg.circuit_probe_s, name=self.server, clock=clock
        )
        self.limiter = RateLimiter(cfg.rpm, cfg.tpm)
        self.slots = anyio.CapacityLimiter(cfg.concurrency)
        self.mode = "json_object" if cfg.structured_output == "json_object" else "json_schema"
        self.budget = max(cfg.context_tokens - RESERVED_TOKENS, 256)

    def circuit_state(self) -> str:
        return self.circuit.state.value

    async def aclose(self) -> None:
        await self.client.close()
        log.info("ai.closed", base_url=self.server)

    def model_for(self, step: str) -> str:
        per_step: str | None = getattr(self.cfg, f"model_{step}", None)
        return per_step or self.cfg.model

    # --- one request ---------------------------------------------------------

    async def _send(
        self, model: str, messages: Messages, kind: str, schema: dict[str, Any]
    ) -> ChatCompletion:
        fmt: dict[str, Any]
        if self.mode == "json_schema":
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": kind, "schema": _bare(schema), "strict": False},
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

    def _map_status(self, exc: openai.APIStatusError, model: str) -> AIError:
        status = exc.status_code
        where = f"{self.server} (model {model})"
        if status == 429:
            body = exc.body if isinstance(exc.body, dict) else {}
            if body.get("code") == "insufficient_quota":
                return AIError(
                    f"the model server {where} says the account is out of quota;"
                    " add credit or switch ai.base_url, then retry the item",
                    code=ErrorCode.AI_RATE_LIMITED,
                    retryable=False,
                )
            return AIError(
                f"the model server {where} is rate limiting readdod (HTTP 429);"
                " lower ai.rpm / ai.tpm / ai.concurrency if this keeps happening",
                code=ErrorCode.AI_RATE_LIMITED,
                retryable=True,
                retry_after=retrying.retry_after_s(exc.response.headers),
            )
        if status in (401, 403):
            return AIError(
                f"the model server {where} refused the API key (HTTP {status});"
                f" set ${self.cfg.api_key_env} or the systemd credential of that name",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=False,
            )
        if status == 404:
            return AIError(
                f"the model server {where} answered 404: the model or the endpoint does not"
                " exist there; check ai.model and ai.base_url (it usually ends in /v1)",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=False,
            )
        return AIError(
            f"the model server {where} answered HTTP {status}",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=status in (408, 409),
            debug=str(exc.body)[:1000] if exc.body is not None else None,
        )

    def _classify(self, exc: Exception, model: str) -> tuple[AIError | None, str]:
        """Type a failed request: (error, verdict) with verdict one of
        ``down`` (counts against the circuit), ``answered`` (the server is up),
        ``neutral`` (a timeout says neither), ``fallback`` (retry in JSON mode)
        or ``foreign`` (not a request failure: let it through)."""
        where = f"{self.server} (model {model})"
        if isinstance(exc, TimeoutError):
            return AIError(
                f"the model server {where} did not answer within {self.cfg.timeout_s:g} s"
                " (ai.timeout_s)",
                code=ErrorCode.AI_TIMEOUT,
                retryable=True,
            ), "neutral"
        if isinstance(exc, openai.APITimeoutError):
            if "Connect" in type(exc.__cause__).__name__:
                return AIError(
                    f"cannot connect to the model server {where}: connection timed out",
                    code=ErrorCode.AI_PROVIDER_ERROR,
                    retryable=True,
                ), "down"
            return AIError(
                f"the model server {where} did not answer within"
                f" {self.cfg.timeout_s * CLIENT_TIMEOUT_RATIO:g} s (ai.timeout_s)",
                code=ErrorCode.AI_TIMEOUT,
                retryable=True,
            ), "neutral"
        if isinstance(exc, openai.APIConnectionError):
            return AIError(
                f"cannot connect to the model server {where}; is it running?",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=True,
                debug=repr(exc.__cause__ or exc),
            ), "down"
        if isinstance(exc, openai.InternalServerError):
            return AIError(
                f"the model server {where} failed (HTTP {exc.status_code})",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=True,
                debug=str(exc.body)[:1000] if exc.body is not None else None,
            ), "down"
        if (
            isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError)
            and self.mode == "json_schema"
            and self.cfg.structured_output == "auto"
        ):
            return None, "fallback"
        if isinstance(exc, openai.APIStatusError):
            return self._map_status(exc, model), "answered"
        if isinstance(exc, ValueError):
            # A 200 whose body is not JSON: a proxy's error page, or a base_url that is no API.
            return AIError(
                f"the model server {where} answered with something that is not a chat"
                " completion; check ai.base_url (it usually ends in /v1)",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=True,
                debug=str(exc)[:500],
            ), "answered"
        if isinstance(exc, openai.APIError):
            return AIError(
                f"the model server {where} sent an answer readdod cannot read ({exc})",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=False,
            ), "answered"
        return None, "foreign"

    async def _once(
        self,
        tally: _Tally,
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
                    started = time.perf_counter()
                    try:
                        resp = await self._send(model, messages, kind, schema)
                    finally:
                        tally.latency_ms += (time.perf_counter() - started) * 1000
            except Exception as exc:
                error, verdict = self._classify(exc, model)
                if verdict == "fallback":
                    log.info("ai.structured_output_fallback", base_url=self.server)
                    self.mode = "json_object"
                    self.circuit.succeeded()
                    continue
                if verdict == "down":
                    self.circuit.failed()
                elif verdict == "answered":
                    self.circuit.succeeded()
                elif probe:
                    self.circuit.abandoned()
                if error is None:
                    raise
                if verdict == "down":
                    raise _Down(error) from exc
                raise error from exc
            except BaseException:
                if probe:
                    self.circuit.abandoned()
                raise
            self.circuit.succeeded()
            return resp

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

    async def _request(
        self, tally: _Tally, messages: Messages, kind: str, schema: dict[str, Any], hooks: StepHooks
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
            except _Down as down:
                if self.circuit.state is State.CLOSED:
                    raise down.error from down
                last = down.error

    async def _ask(
        self,
        kind: str,
        typ: type[T],
        schema: dict[str, Any],
        template: str,
        values: dict[str, str],
        tally: _Tally,
        hooks: StepHooks,
        on_retry: retrying.OnRetry | None = None,
        on_attempt: retrying.OnAttempt | None = None,
    ) -> T:
        """Ask for one ``typ``: the request, its retries, one repair, the typed failure."""
        system = load_template("system", self.cfg.profile)
        user = load_template(template, self.cfg.profile)
        tally.templates.append(user.version)
        messages: Messages = [
            {
                "role": "system",
                "content": system.body.substitute(
                    artifact=kind, schema=json.dumps(schema, ensure_ascii=False)
                ),
            },
            {"role": "user", "content": user.body.substitute(values)},
        ]
        problems: list[str] = []
        parsed = True
        for turn in range(2):
            content = await self._complete(
                tally, messages, kind, schema, hooks, on_retry, on_attempt
            )
            payload, problems, parsed = _judge(kind, typ, content)
            if payload is not None and not problems:
                return payload
            if turn == 0:
                repair = load_template("repair", self.cfg.profile)
                tally.templates.append(repair.version)
                log.info("ai.repair", kind=kind, problems=problems[:5])
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": repair.body.substitute(
                            problems="\n".join(f"- {p}" for p in problems)
                        ),
                    },
                ]
        raise AIError(
            f"the model's {kind} was still invalid after a repair request: "
            + "; ".join(problems)[:1500],
            code=ErrorCode.AI_SCHEMA_INVALID if parsed else ErrorCode.AI_PARSE_ERROR,
            retryable=False,
        )

    async def _complete(
        self,
        tally: _Tally,
        messages: Messages,
        kind: str,
        schema: dict[str, Any],
        hooks: StepHooks,
        on_retry: retrying.OnRetry | None,
        on_attempt: retrying.OnAttempt | None = None,
    ) -> str:
        async def attempt() -> Any:
            return await self._request(tally, messages, kind, schema, hooks)

        resp = await retrying.call(attempt, self.policy, on_retry or hooks.on_retry, on_attempt)
        if resp.usage is not None:
            tally.prompt_tokens += resp.usage.prompt_tokens or 0
            tally.completion_tokens += resp.usage.completion_tokens or 0
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

    # --- the four steps ------------------------------------------------------

    def _common(self, inp: EngineInput) -> dict[str, str]:
        return {"intent": inp.intent, "title": inp.title or "(untitled)"}

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]:
        _require_text(inp.text)
        hooks = current_hooks()
        tally = _Tally(self.model_for("summary"))
        schema = schemas.json_schema("summary")
        if estimate_tokens(inp.text) <= self.budget:
            payload = await self._ask(
                "summary",
                Summary,
                schema,
                "summary",
                {**self._common(inp), "text": inp.text},
                tally,
                hooks,
            )
        else:
            notes = await self._map_chunks(inp, tally, hooks)
            payload = await self._ask(
                "summary",
                Summary,
                schema,
                "summary_reduce",
                {
                    **self._common(inp),
                    "total": str(len(notes)),
                    "reading_time_min": str(reading_minutes(inp.text)),
                    "notes": clip_tokens(_render_notes(notes), self.budget),
                },
                tally,
                hooks,
            )
        payload.reading_time_min = reading_minutes(inp.text)
        return tally.output(payload)

    async def _map_chunks(
        self, inp: EngineInput, tally: _Tally, hooks: StepHooks
    ) -> list[ChunkNotes]:
        chunks = split_paragraphs(inp.text, self.budget)
        ledger = hooks.chunks
        done = await ledger.begin("summary", len(chunks), tally.model) if ledger else {}
        schema = _struct_schema(ChunkNotes)
        notes: list[ChunkNotes] = []
        for idx, piece in enumerate(chunks):
            if idx in done:
                try:
                    notes.append(msgspec.json.decode(done[idx], type=ChunkNotes))
                    continue
                except msgspec.DecodeError:
                    pass
            if ledger is not None:
                await ledger.update("summary", idx, "processing", model=tally.model)
            on_retry, on_attempt = _chunk_retry(hooks, "summary", idx, tally.model)
            try:
                note = await self._ask(
                    "summary_chunk",
                    ChunkNotes,
                    schema,
                    "summary_chunk",
                    {
                        **self._common(inp),
                        "number": str(idx + 1),
                        "total": str(len(chunks)),
                        "text": piece,
                    },
                    tally,
                    hooks,
                    on_retry,
                    on_attempt,
                )
            except StepError as exc:
                if ledger is not None:
                    with anyio.CancelScope(shield=True):
                        await ledger.update("summary", idx, "error", error=exc)
                raise
            if ledger is not None:
                await ledger.update(
                    "summary", idx, "done", output=msgspec.json.encode(note).decode()
                )
            notes.append(note)
        return notes

    def _digest(self, inp: EngineInput, summary: Summary) -> dict[str, str]:
        return {
            **self._common(inp),
            "tl_dr": summary.tl_dr,
            "key_points": "\n".join(f"- {k}" for k in summary.key_points),
        }

    async def score(self, inp: EngineInput, summary: Summary) -> EngineOutput[Score]:
        _require_text(inp.text)
        tally = _Tally(self.model_for("score"))
        payload = await self._ask(
            "score",
            Score,
            schemas.json_schema("score"),
            "score",
            {**self._digest(inp, summary), "text": clip_tokens(inp.text, self.budget)},
            tally,
            current_hooks(),
        )
        return tally.output(payload)

    async def todos(self, inp: EngineInput, summary: Summary, score: Score) -> EngineOutput[Todos]:
        tally = _Tally(self.model_for("todos"))
        payload = await self._ask(
            "todos",
            Todos,
            schemas.json_schema("todos"),
            "todos",
            {
                **self._digest(inp, summary),
                "match_score": str(score.match_score),
                "priority": score.priority,
                "recommendation": score.recommendation,
            },
            tally,
            current_hooks(),
        )
        return tally.output(payload)

    async def card(
        self, inp: EngineInput, summary: Summary, score: Score, todos: Todos
    ) -> EngineOutput[Card]:
        tally = _Tally(self.model_for("card"))
        words = await self._ask(
            "card_text",
            CardText,
            _struct_schema(CardText),
            "card",
            {
                **self._digest(inp, summary),
                "priority": score.priority,
                "match_score": str(score.match_score),
            },
            tally,
            current_hooks(),
        )
        card = Card(
            title=words.title,
            one_liner=words.one_liner,
            summary=summary.tl_dr,
            key_points=list(summary.key_points),
            todos=list(todos.items),
            priority=score.priority,
            match_score=score.match_score,
            tags=list(inp.tags),
            source=CardSource(url=inp.url, title=inp.title, site_name=inp.site_name),
            render_spec=RenderSpec(
                template="card",
                version="card.v1",
                sections=["one_liner", "key_points", "todos", "source"],
            ),
        )
        _, problems = rubric.validate("card", msgspec.to_builtins(card))
        if problems:
            raise AIError(
                "the assembled card is invalid: " + "; ".join(problems),
                code=ErrorCode.AI_SCHEMA_INVALID,
                retryable=False,
            )
        return tally.output(card)


def _render_notes(notes: Sequence[ChunkNotes]) -> str:
    parts = []
    for i, note in enumerate(notes, 1):
        points = "\n".join(f"  - {p}" for p in note.key_points)
        parts.append(f"Part {i}: {note.summary}\n{points}")
    return "\n\n".join(parts)


def _chunk_retry(
    hooks: StepHooks, step: str, idx: int, model: str
) -> tuple[retrying.OnRetry | None, retrying.OnAttempt | None]:
    """Record a chunk's retries on the chunk row (and on the run): ``retrying`` while
    it waits, ``processing`` again when the next attempt starts."""
    ledger = hooks.chunks
    run_retry = hooks.on_retry
    if ledger is None:
        return run_retry, None

    async def on_retry(attempt: int, error: StepError, delay_s: float) -> None:
        await ledger.update(step, idx, "retrying", error=error)
        if run_retry is not None:
            await run_retry(attempt, error, delay_s)

    async def on_attempt(attempt: int) -> None:
        await ledger.update(step, idx, "processing", model=model)

    return on_retry, on_attempt


def _require_text(text: str) -> None:
    if not text.strip():
        raise AIError(
            "there is no text to summarise: the extraction found nothing readable",
            code=ErrorCode.AI_INPUT_EMPTY,
            retryable=False,
        )
