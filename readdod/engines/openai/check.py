"""``readdod server check``: what the configured model server takes, found by asking it.

A handful of small requests, each bounded: the models it lists (and the
context it says, where it says one: vLLM's ``max_model_len`` in
``/v1/models``, llama.cpp's ``llama-server`` ``n_ctx`` in ``/props``, LM
Studio's and others' ``context_length``), each response format of
:data:`.formats.LADDER` until one is taken, the context probed with a prompt
beyond ``ai.context_tokens`` when the server did not say it, the speed of one
streamed answer, and whether two streams at once both finish (llama-cpp-python
at its defaults cuts the first). :func:`advise` (pure) turns the findings into
the settings to use. What was found is kept where the daemon keeps what it
learns (:mod:`.servers`), so a daemon started later begins with it.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any, Final

import anyio
import httpx
import msgspec

from readdod.config import AIConfig
from readdod.engines.openai import formats
from readdod.engines.openai.servers import ServerMemory
from readdod.engines.openai.transport import display_url

#: A tiny schema every format is tried with.
PROBE_SCHEMA: Final = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
#: Tokens each probe's answer may take; the speed probe's.
PROBE_TOKENS: Final = 8
SPEED_TOKENS: Final = 48
#: Seconds one probe may take, at most (a small bound: ``ai.timeout_s`` is per request).
PROBE_S: Final = 120.0
#: Keys that name a model's context in the ``/v1/models`` answers of known servers.
CONTEXT_KEYS: Final = ("max_model_len", "context_length", "max_context_length", "n_ctx")


class FormatTried(msgspec.Struct, kw_only=True):
    format: str
    taken: bool
    said: str = ""


class StreamRun(msgspec.Struct, kw_only=True):
    finished: bool
    finish_reason: str | None = None
    events: int = 0
    completion_tokens: int | None = None
    seconds: float = 0.0
    first_token_s: float | None = None
    error: str = ""


class Findings(msgspec.Struct, kw_only=True):
    """What the server showed; ``settings``: the config to use."""

    base_url: str
    model: str
    reachable: bool
    error: str = ""
    models: list[str] = []
    formats: list[FormatTried] = []
    format: str | None = None
    context_tokens: int | None = None
    context_from: str = ""
    tokens_per_s: float | None = None
    speed: StreamRun | None = None
    two_streams: list[StreamRun] = []
    two_streams_hold: bool | None = None
    settings: dict[str, Any] = {}
    notes: list[str] = []


def advise(found: Findings, cfg: AIConfig) -> tuple[dict[str, Any], list[str]]:
    """The ``[ai]`` settings to use for what was found, and why. Pure."""
    settings: dict[str, Any] = {}
    notes: list[str] = []
    if found.format is not None:
        settings["structured_output"] = found.format
        notes.append(
            f"the server takes {found.format!r}; with structured_output = 'auto' readdod learns"
            " this by itself"
        )
    if found.context_tokens is not None:
        settings["context_tokens"] = max(1024, found.context_tokens)
    if found.two_streams_hold is False:
        settings["concurrency"] = 1
        notes.append(
            "a second request cut the first one's stream short (llama-cpp-python's"
            " interrupt_requests does this): readdod lowers its limit to 1 by itself;"
            " set ai.concurrency = 1 to start there, or run the server with"
            " --interrupt_requests False"
        )
    elif found.two_streams_hold:
        settings["concurrency"] = cfg.concurrency
    if found.tokens_per_s:
        longest = max(cfg.max_tokens.summary, cfg.max_tokens.todos, cfg.max_tokens.score)
        first = (found.speed.first_token_s if found.speed else None) or 0.0
        # Room for the longest answer three times over, plus reading the prompt, with
        # the requests that may queue ahead of it.
        need = (longest / found.tokens_per_s + first * 8) * 3
        if need > cfg.timeout_s:
            settings["timeout_s"] = float(min(3600, round(need, -1) + 10))
    return settings, notes


def _models_url(base: str) -> str:
    return base.rstrip("/") + "/models"


def _root(base: str) -> str:
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _context_of(entry: dict[str, Any]) -> int | None:
    for source in (entry, entry.get("meta") or {}):
        for key in CONTEXT_KEYS:
            value = source.get(key) if isinstance(source, dict) else None
            if isinstance(value, int) and value >= 256:
                return value
    return None


def _body(cfg: AIConfig, prompt: str, max_tokens: int, *, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": cfg.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _said(resp: httpx.Response) -> str:
    try:
        body: object = resp.json()
    except ValueError:
        body = resp.text
    return f"HTTP {resp.status_code}: {formats.error_text(body)[:200]}"


async def _stream(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], started: float
) -> StreamRun:
    run = StreamRun(finished=False)
    try:
        async with client.stream("POST", url, json=body) as resp:
            if resp.status_code != 200:
                await resp.aread()
                run.error = _said(resp)
                return run
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    event = json.loads(data)
                except ValueError:
                    continue
                run.events += 1
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content") and run.first_token_s is None:
                        run.first_token_s = round(time.monotonic() - started, 3)
                    if choice.get("finish_reason"):
                        run.finish_reason = choice["finish_reason"]
                usage = event.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    run.completion_tokens = usage["completion_tokens"]
    except httpx.HTTPError as exc:
        run.error = f"the stream broke off: {exc!r}"[:200]
    run.seconds = round(time.monotonic() - started, 3)
    run.finished = run.finish_reason is not None
    return run


async def _formats(client: httpx.AsyncClient, url: str, cfg: AIConfig, found: Findings) -> None:
    prompt = 'Answer with the JSON object {"ok": true} and nothing else.'
    for mode in formats.LADDER:
        body = _body(cfg, prompt, PROBE_TOKENS, stream=False)
        fmt = formats.response_format(mode, "check", PROBE_SCHEMA)
        if fmt is not None:
            body["response_format"] = fmt
        resp = await client.post(url, json=body)
        if resp.status_code == 200:
            found.formats.append(FormatTried(format=mode, taken=True))
            found.format = mode
            return
        found.formats.append(FormatTried(format=mode, taken=False, said=_said(resp)))


async def _probe_context(
    client: httpx.AsyncClient, url: str, cfg: AIConfig, found: Findings
) -> None:
    """Ask with a prompt twice ``ai.context_tokens`` long: servers refuse it and most
    say their context; Ollama cuts it to its context and counts what it read."""
    sent = cfg.context_tokens * 2
    prompt = "Reply with one word. " + "the " * sent
    resp = await client.post(url, json=_body(cfg, prompt, 1, stream=False))
    if resp.status_code == 200:
        read = (resp.json().get("usage") or {}).get("prompt_tokens")
        if isinstance(read, int) and read < sent * 0.9:
            found.context_tokens, found.context_from = read, "probed: it read only this much"
        else:
            found.context_from = f"probed: at least {sent}, all it was sent; keep ai.context_tokens"
        return
    said = _said(resp)
    size = formats.context_size(said)
    if size is not None:
        found.context_tokens, found.context_from = size, f"probed: {said[:120]}"
    elif formats.context_overflow(said):
        found.context_from = f"probed: less than {sent} tokens ({said[:120]})"
    else:
        found.context_from = f"probed, not said: {said[:120]}"


async def _context_said(client: httpx.AsyncClient, cfg: AIConfig, found: Findings) -> None:
    """The context as the server reports it: ``/v1/models``, then ``/props``."""
    resp = await client.get(_models_url(cfg.base_url))
    if resp.status_code != 200:
        raise httpx.HTTPStatusError(_said(resp), request=resp.request, response=resp)
    data = resp.json().get("data") or []
    found.models = [str(m.get("id")) for m in data if isinstance(m, dict)][:20]
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == cfg.model:
            size = _context_of(entry)
            if size is not None:
                found.context_tokens, found.context_from = size, "/v1/models"
                return
    try:
        props = await client.get(_root(cfg.base_url) + "/props")
    except httpx.HTTPError:
        return
    if props.status_code == 200:
        try:
            settings = props.json().get("default_generation_settings") or {}
        except ValueError:
            return
        size = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(size, int) and size >= 256:
            found.context_tokens, found.context_from = size, "/props"


async def check(cfg: AIConfig, api_key: str | None, memory: ServerMemory | None = None) -> Findings:
    """Ask the server of ``cfg`` what it takes; keep what was found in ``memory``."""
    server = display_url(cfg.base_url)
    found = Findings(base_url=server, model=cfg.model, reachable=False)
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    headers = {"authorization": f"Bearer {api_key or 'no-key'}"}
    timeout = httpx.Timeout(min(PROBE_S, cfg.timeout_s * 2), connect=10.0)
    async with httpx.AsyncClient(headers=headers, timeout=timeout) as client:
        try:
            await _context_said(client, cfg, found)
            found.reachable = True
            await _formats(client, url, cfg, found)
            if found.context_tokens is None:
                await _probe_context(client, url, cfg, found)
            prompt = "Count from 1 to 100, separated by commas."
            started = time.monotonic()
            found.speed = await _stream(
                client, url, _body(cfg, prompt, SPEED_TOKENS, stream=True), started
            )
            tokens = found.speed.completion_tokens or found.speed.events
            writing = found.speed.seconds - (found.speed.first_token_s or 0)
            span = writing if writing > 0.05 else found.speed.seconds
            if found.speed.finished and tokens and span > 0:
                found.tokens_per_s = round(tokens / span, 1)
            runs: list[StreamRun] = []

            async def one(body: dict[str, Any]) -> None:
                runs.append(await _stream(client, url, body, time.monotonic()))

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, _body(cfg, prompt, SPEED_TOKENS, stream=True))
                # The second one goes out once the first is streaming, as the next item's
                # request would.
                await anyio.sleep(max(0.2, (found.speed.first_token_s or 0) * 1.5))
                tg.start_soon(one, _body(cfg, "Name ten colours.", SPEED_TOKENS, stream=True))
            found.two_streams = runs
            found.two_streams_hold = all(r.finished for r in runs)
        except httpx.HTTPError as exc:
            found.error = str(exc) or repr(exc)
    found.settings, found.notes = advise(found, cfg)
    if memory is not None and found.reachable:
        memory.remember(
            server,
            cfg.model,
            format=found.format,
            context=found.context_tokens,
            concurrency=found.settings.get("concurrency"),
        )
    return found
