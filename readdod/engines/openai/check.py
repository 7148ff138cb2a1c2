"""`readdod server check`: what a configured model server takes, asked of it directly.

The daemon learns each server's limits from its answers as it goes; this
check asks up front, so a person sees in a minute what the first items
would have found out: the response formats the server takes, its context
length, how fast the model writes, and whether streaming holds with two
requests at once (llama-cpp-python at its defaults cuts a running stream
when the next request arrives; Ollama and ``llama-server`` queue or run
them side by side; hosted APIs may answer 429). What it finds is kept where
the daemon keeps what it learns (``model-servers.json`` in the data
directory), so a daemon started after it begins at the right pace.

The requests are small (tens of tokens); the context probe, made only when
the server does not say its context, sends one prompt somewhat longer than
``ai.context_tokens`` with ``max_tokens`` 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio
import httpx
import msgspec
import openai

from readdod.engines.openai import formats
from readdod.engines.openai.servers import ServerMemory
from readdod.engines.openai.transport import display_url
from readdod.settings.config import AIConfig

#: The tiny JSON every format is asked for.
_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
_ASK_JSON: Final = (
    'Is the sky blue on a clear day? Answer with JSON only, as {"answer": "yes"} or'
    ' {"answer": "no"}.'
)
_COUNT: Final = "Count from 1 to 60 in words, separated by commas. Write nothing else."
#: Tokens asked for when measuring speed and concurrency.
WRITE_TOKENS: Final = 64
#: Seconds one request of the check may take.
REQUEST_S: Final = 300.0


class Stream(msgspec.Struct, kw_only=True):
    """One streamed request of the check: how it ended and when."""

    outcome: str
    started_s: float
    first_token_s: float | None = None
    ended_s: float = 0.0
    completion_tokens: int = 0
    detail: str | None = None


class Report(msgspec.Struct, kw_only=True):
    """What the check found, and the settings it suggests."""

    base_url: str
    model: str
    reachable: bool
    models: list[str] = []
    #: Each format of :data:`formats.LADDER`: "accepted", or the server's words.
    formats: dict[str, str] = {}
    context_tokens: int | None = None
    #: Where the context came from: the server's own metadata, or a probe.
    context_source: str | None = None
    tokens_per_s: float | None = None
    prompt_tokens_per_s: float | None = None
    #: "parallel", "queued", "cut" (a running stream ended when the other came), or
    #: "limited" (429/503).
    two_streams: str | None = None
    streams: list[Stream] = []
    concurrency: int | None = None
    settings: dict[str, Any] = {}
    notes: list[str] = []
    error: str | None = None


@dataclass
class _Probe:
    cfg: AIConfig
    client: openai.AsyncOpenAI
    http: httpx.AsyncClient
    report: Report
    clock: Any = field(default=time.perf_counter)


async def check(cfg: AIConfig, *, api_key: str | None, memory: ServerMemory | None) -> Report:
    """Ask the server of ``cfg`` what it takes; keep what was learned in ``memory``."""
    report = Report(base_url=display_url(cfg.base_url), model=cfg.model, reachable=False)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with (
        httpx.AsyncClient(timeout=30.0, headers=headers) as http,
        openai.AsyncOpenAI(
            base_url=cfg.base_url,
            api_key=api_key or "none",
            max_retries=0,
            timeout=REQUEST_S,
        ) as client,
    ):
        probe = _Probe(cfg, client, http, report)
        try:
            await _models(probe)
        except (httpx.HTTPError, ValueError) as exc:
            report.error = f"the server at {report.base_url} did not answer /models: {exc}"
            return report
        report.reachable = True
        await _formats(probe)
        await _metadata_context(probe)
        if report.context_tokens is None:
            await _probe_context(probe)
        await _speed(probe)
        await _two_streams(probe)
    _advise(report, cfg)
    if memory is not None:
        best = next((f for f, said in report.formats.items() if said == "accepted"), None)
        memory.remember(
            report.base_url,
            cfg.model,
            format=best,
            context=report.context_tokens,
            concurrency=report.concurrency,
        )
    return report


async def _models(p: _Probe) -> None:
    resp = await p.http.get(_url(p.cfg, "models"))
    resp.raise_for_status()
    body = resp.json()
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("its /models answer has no list of models")
    p.report.models = [str(m.get("id")) for m in data if isinstance(m, dict)]
    for m in data:
        if isinstance(m, dict) and m.get("id") == p.cfg.model:
            size = _context_field(m)
            if size:
                p.report.context_tokens, p.report.context_source = size, "/models"
    if p.cfg.model not in p.report.models and p.report.models:
        p.report.notes.append(
            f"ai.model {p.cfg.model!r} is not among the models the server lists"
            f" ({', '.join(p.report.models[:5])}); a server with one model may answer any name"
        )


def _context_field(model: dict[str, Any]) -> int | None:
    """The context a model entry names: vLLM's ``max_model_len``, LM Studio's
    ``max_context_length``, llama-server's ``meta.n_ctx_train``."""
    meta = model.get("meta") if isinstance(model.get("meta"), dict) else {}
    for value in (
        model.get("max_model_len"),
        model.get("max_context_length"),
        model.get("context_length"),
        cast("dict[str, Any]", meta).get("n_ctx"),
        cast("dict[str, Any]", meta).get("n_ctx_train"),
    ):
        if isinstance(value, int) and value > 0:
            return value
    return None


async def _metadata_context(p: _Probe) -> None:
    """llama-server's ``/props`` (the context it runs with, per slot), Ollama's
    ``/api/show``."""
    root = _root(p.cfg)
    try:
        resp = await p.http.get(f"{root}/props")
        if resp.status_code == 200:
            props = resp.json()
            settings = props.get("default_generation_settings") or {}
            n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
            if isinstance(n_ctx, int) and n_ctx > 0:
                p.report.context_tokens, p.report.context_source = n_ctx, "/props"
            slots = props.get("total_slots")
            if isinstance(slots, int) and slots > 0:
                p.report.notes.append(f"the server runs {slots} request(s) at once (/props)")
            return
        resp = await p.http.post(f"{root}/api/show", json={"model": p.cfg.model})
        if resp.status_code == 200:
            shown = resp.json()
            info = shown.get("model_info") or {}
            for key, value in info.items() if isinstance(info, dict) else ():
                if key.endswith(".context_length") and isinstance(value, int):
                    p.report.context_tokens, p.report.context_source = value, "/api/show"
            p.report.notes.append(
                "Ollama runs a model with its num_ctx (2048 or 4096 by default), not the"
                " model's full context: set num_ctx on the model, and ai.context_tokens to it"
            )
    except (httpx.HTTPError, ValueError):
        pass


async def _formats(p: _Probe) -> None:
    for mode in formats.LADDER:
        params: dict[str, Any] = {
            "model": p.cfg.model,
            "messages": [{"role": "user", "content": _ASK_JSON}],
            "max_tokens": 24,
            "temperature": 0.0,
        }
        fmt = formats.response_format(mode, "check", _SCHEMA)
        if fmt is not None:
            params["response_format"] = fmt
        try:
            with anyio.fail_after(REQUEST_S):
                await p.client.chat.completions.create(**params)
            p.report.formats[mode] = "accepted"
        except openai.APIStatusError as exc:
            said = formats.error_text(exc.body, str(exc))
            p.report.formats[mode] = f"refused: HTTP {exc.status_code} {said[:160]}"
        except (openai.APIError, TimeoutError) as exc:
            p.report.formats[mode] = f"error: {exc!r}"[:200]


async def _probe_context(p: _Probe) -> None:
    """A prompt somewhat longer than ``ai.context_tokens``: refused, the server's words
    often give its context; taken, the context is at least that."""
    words = int(p.cfg.context_tokens * 1.25)
    prompt = "Reply with OK. " + "word " * words
    try:
        with anyio.fail_after(REQUEST_S):
            await p.client.chat.completions.create(
                model=p.cfg.model,
                messages=[{"role": "user", "content": prompt}],
                max_tokens=1,
            )
        p.report.notes.append(
            f"a prompt of about {words} tokens was taken: the context is at least"
            f" ai.context_tokens ({p.cfg.context_tokens})"
        )
    except openai.APIStatusError as exc:
        said = formats.error_text(exc.body, str(exc))
        size = formats.context_size(said) or formats.context_size(str(exc.body))
        if formats.context_overflow(said) and size:
            p.report.context_tokens, p.report.context_source = size, "probe"
        elif formats.context_overflow(said):
            p.report.notes.append(f"a long prompt was refused as too long: {said[:160]}")
    except (openai.APIError, TimeoutError):
        pass


async def _stream(p: _Probe, t0: float, started: anyio.Event | None = None) -> Stream:
    got = Stream(outcome="error", started_s=p.clock() - t0)
    finished = False
    try:
        with anyio.fail_after(REQUEST_S):
            stream = await p.client.chat.completions.create(
                model=p.cfg.model,
                messages=[{"role": "user", "content": _COUNT}],
                max_tokens=WRITE_TOKENS,
                temperature=0.0,
                stream=True,
            )
            try:
                async for chunk in stream:
                    for choice in chunk.choices:
                        if choice.delta.content:
                            if got.first_token_s is None:
                                got.first_token_s = p.clock() - t0
                                if started is not None:
                                    started.set()
                            got.completion_tokens += 1
                        if choice.finish_reason:
                            finished = True
            finally:
                await stream.close()
        got.outcome = "finished" if finished else "cut"
    except openai.APIStatusError as exc:
        got.outcome = "refused"
        got.detail = f"HTTP {exc.status_code}: {formats.error_text(exc.body, str(exc))[:160]}"
    except openai.APIConnectionError as exc:
        got.outcome = "cut" if got.completion_tokens else "error"
        got.detail = repr(exc.__cause__ or exc)[:200]
    except (openai.APIError, TimeoutError) as exc:
        got.detail = repr(exc)[:200]
    got.ended_s = p.clock() - t0
    if started is not None:
        started.set()
    return got


async def _speed(p: _Probe) -> None:
    one = await _stream(p, p.clock())
    if one.outcome == "finished" and one.first_token_s is not None:
        writing = one.ended_s - one.first_token_s
        if writing > 0 and one.completion_tokens > 1:
            # Stream events are close to tokens for the servers people run.
            p.report.tokens_per_s = round((one.completion_tokens - 1) / writing, 1)


async def _two_streams(p: _Probe) -> None:
    """Two streamed requests, the second sent once the first writes."""
    t0 = p.clock()
    first_writes = anyio.Event()
    results: list[Stream] = []

    async def first() -> None:
        results.insert(0, await _stream(p, t0, first_writes))

    async def second() -> None:
        await first_writes.wait()
        results.append(await _stream(p, t0))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        tg.start_soon(second)
    p.report.streams = results
    a, b = results
    outcomes = {a.outcome, b.outcome}
    if "cut" in outcomes:
        p.report.two_streams, p.report.concurrency = "cut", 1
    elif "refused" in outcomes and any(
        s.detail and s.detail.startswith(("HTTP 429", "HTTP 503")) for s in results
    ):
        p.report.two_streams, p.report.concurrency = "limited", 1
    elif outcomes == {"finished"}:
        overlapped = b.first_token_s is not None and b.first_token_s < a.ended_s
        p.report.two_streams = "parallel" if overlapped else "queued"
        p.report.concurrency = p.cfg.concurrency if overlapped else 1
    else:
        p.report.two_streams = "error"


def _advise(report: Report, cfg: AIConfig) -> None:
    """The settings to use, from what was found."""
    settings: dict[str, Any] = {}
    best = next((f for f, said in report.formats.items() if said == "accepted"), None)
    if best is not None:
        settings["ai.structured_output"] = "auto" if best == formats.LADDER[0] else best
    if report.context_tokens is not None and report.context_tokens < cfg.context_tokens:
        settings["ai.context_tokens"] = report.context_tokens
    if report.concurrency is not None:
        settings["ai.concurrency"] = max(1, min(report.concurrency, cfg.concurrency))
    if report.two_streams == "cut":
        report.notes.append(
            "the server ends a running stream when another request arrives (llama-cpp-python's"
            " interrupt_requests, on by default): readdod learns to send one request at a"
            " time; start the server with --interrupt_requests False to have it queue instead"
        )
    elif report.two_streams == "queued":
        report.notes.append(
            "the server answers one request at a time: more requests in flight only wait"
            " in its queue (llama-server: --parallel N gives it N slots)"
        )
    if report.tokens_per_s:
        longest = max(msgspec.structs.asdict(cfg.max_tokens).values())
        needed = longest / report.tokens_per_s * 2 + 30
        if needed > cfg.timeout_s:
            settings["ai.timeout_s"] = float(round(needed, -1))
    report.settings = settings


def _url(cfg: AIConfig, path: str) -> str:
    return f"{cfg.base_url.rstrip('/')}/{path}"


def _root(cfg: AIConfig) -> str:
    """The server's root: the base URL without its ``/v1``."""
    base = cfg.base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base
