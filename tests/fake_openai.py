"""A fake OpenAI-compatible server on 127.0.0.1, for tests and the eval gate.

A real HTTP server (stdlib ``ThreadingHTTPServer``, no dependency) that
answers ``POST /v1/chat/completions`` with JSON built from the request: the
JSON Schema (from ``response_format``, or from the system prompt in JSON
mode) gives the shape, and the text of the prompt gives the words, so every
answer is valid for the schema and about the text it was asked about.

Misbehaviour is asked for in the request itself, by a directive anywhere in
the prompt (tests put it in the item's intent), so concurrent items can each
get their own::

    fake:<what>[x<N>][@<step>][#<tag>]

``what`` is ``400`` (a request error that is not about the format), ``429``
(with ``Retry-After``), ``500``, ``503``, ``hang`` (no
answer until the client gives up: its disconnect is counted in
:attr:`FakeOpenAI.disconnects`), ``garbage`` (an HTTP body that is not
JSON), ``badjson`` (a message that is not JSON), ``invalid``
(JSON that breaks the schema), ``refuse`` (a refusal), ``reset`` (the
connection is dropped with a TCP RST instead of an answer), ``length`` (the
answer is cut off: ``finish_reason: length``), ``ctrl`` (valid content
written loosely: in a code fence, with words around it and a raw newline
inside a string), ``bigint`` (integers far outside their range, as a
grammar that ignores ranges lets through) or ``echo`` (the JSON Schema
itself instead of an answer), ``cut`` (a stream cut short as
llama-cpp-python's ``interrupt_requests`` cuts it: some content, then
``[DONE]`` with no finish reason) or ``drop`` (a stream whose connection
closes after some content).

Besides the faults, it behaves as the servers people run do, each behaviour
chosen when it is made: which response formats it takes (``accepts``) and
how it refuses the others (``format_status``, ``format_message``, e.g.
llama-cpp-python's HTTP 500), whether a model asked without a schema echoes
the schema back (``echo_without_schema``), its context (``context_tokens``:
a longer request is refused with ``context_length_exceeded``, or, with
``stream_errors``, a streamed one breaks off after its 200 as
llama-cpp-python's does), and ``max_tokens`` (an answer longer than it is cut
off with ``finish_reason: length``), and the request parameters it refuses
(``refuses``, with OpenAI's 400 that names them). Requests with ``stream: true`` are
answered as server-sent events, with ``usage`` (including
``prompt_tokens_details.cached_tokens``: the prefix shared with the request
before, as a prompt cache would find it) when ``stream_options`` asks. With
``interrupts`` it runs one request at a time and cuts a running stream short
as soon as another request waits, as llama-cpp-python's server does at its
defaults (``event_s`` paces the events, as a model writes). ``delay_s`` makes
every request wait that long before its answer, as a slow model does. ``xN`` limits it to
the first N matching requests (default: all), ``@step`` to one artifact
(``summary``, ``score``, ``todos``, ``card_text``, ``summary_chunk``), and
``#tag`` keeps directives of different items apart.

A test can also decide later how an item's requests go, with
:meth:`FakeOpenAI.fault` (``fake.fault("words of its intent", "invalid", step="score")``).

Run alone: ``python -m tests.fake_openai --port 8765``; or around one command,
which finds the server through ``$READDOD_CONFIG``:
``python -m tests.fake_openai -- readdod eval --engine openai``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIRECTIVE = re.compile(
    r"fake:(400|429|500|503|hang|badjson|invalid|refuse|garbage|reset|length|ctrl|bigint|echo"
    r"|cut|drop)"
    r"(?:x(\d+))?(?:@([a-z_]+))?(?:#(\w+))?"
)
_WORD = re.compile(r"\w+", re.UNICODE)
#: Answer with a body that is not JSON at all.
GARBAGE: Any = object()
#: Answer with a TCP reset.
RESET: Any = object()
#: Answer 200 and break the stream off before any event.
BREAK: Any = object()
#: Stream part of the answer, then ``[DONE]`` without a finish reason.
CUT: Any = object()
#: Stream part of the answer, then close the connection.
DROP: Any = object()
#: The response formats a server may take, as readdod names them.
FORMATS = ("json_schema", "json_object_schema", "json_object", "prompt")
#: How llama-cpp-python's server refuses ``json_schema`` (HTTP 500).
LLAMA_CPP_PYTHON_REFUSAL = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format',"
    " 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


#: readdod's short questions (``templates/relevance.v1.txt``, ``helps.v1.txt``) name the
#: reader's goal so.
_RELEVANCE = re.compile(r'(?:A reader saved this text for this goal|A reader\'s goal): "(.*)"')
_SECTION = re.compile(r"^(?:Text|Notes|Part \d+ of \d+|Key points):\s*$", re.M)


def _sentences(prompt: str) -> list[str]:
    """Sentences of the material the prompt is about (its last section), without repeats."""
    # readdod's prompts: the article (or notes) first, then "---" and the step's task.
    prompt = prompt.split("\n---\n", 1)[0]
    heads = list(_SECTION.finditer(prompt))
    text = prompt[heads[-1].end() :] if heads else prompt
    out: dict[str, None] = {}
    for part in re.split(r"(?<=[.!?])\s+|\n+", text):
        part = part.strip(" -\t")
        if len(part) >= 12 and "fake:" not in part and not part.startswith("Intent of"):
            out[part] = None
    return list(out) or ["The text says little."]


def _terms(text: str) -> set[str]:
    """Words of 4+ letters; character pairs for scripts written without spaces (CJK)."""
    out: set[str] = set()
    for token in _WORD.findall(text.lower()):
        if "fake" in token:
            continue
        if any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in token):
            out.update(token[i : i + 2] for i in range(len(token) - 1))
        elif len(token) > 3:
            out.add(token)
    return out


class _Instance:
    """Builds a schema-valid value with words from the prompt."""

    def __init__(self, schema: dict[str, Any], prompt_text: str, intent: str) -> None:
        self.defs: dict[str, Any] = schema.get("$defs", {})
        self.sentences = _sentences(prompt_text)
        self.next = 0
        words = _terms(intent)
        body = _terms(" ".join(self.sentences))
        self.overlap = len(words & body) / len(words) if words else 0.0
        #: Write integers outside their range, as a grammar that ignores ranges may.
        self.wild_integers = False

    def sentence(self) -> str:
        s = self.sentences[self.next % len(self.sentences)]
        n = self.next // len(self.sentences)
        self.next += 1
        return s if n == 0 else f"{s} ({n + 1})"

    def build(self, schema: dict[str, Any], name: str = "", index: int = 0) -> Any:
        if "$ref" in schema:
            return self.build(self.defs[schema["$ref"].rsplit("/", 1)[-1]], name, index)
        if "anyOf" in schema:
            options = [o for o in schema["anyOf"] if o.get("type") != "null"]
            return self.build(options[0], name, index) if options else None
        if "enum" in schema:
            enum = schema["enum"]
            if name == "priority":
                return enum[1] if len(enum) > 1 else enum[0]
            if name in ("addresses", "covered") and set(enum) == {"yes", "partly", "no"}:
                # A judgement as a model makes it: from the words the intent and text share.
                return "yes" if self.overlap >= 0.5 else "partly" if self.overlap >= 0.25 else "no"
            return enum[index % len(enum)]
        kind = schema.get("type")
        if kind == "object":
            props: dict[str, Any] = schema.get("properties", {})
            return {k: self.build(v, k, index) for k, v in props.items()}
        if kind == "array":
            lo = schema.get("minItems", 1)
            hi = schema.get("maxItems", max(lo, 4))
            n = max(lo, min(4, hi))
            return [self.build(schema.get("items", {}), name, i) for i in range(n)]
        if kind == "integer":
            if self.wild_integers:
                return 192_036_847
            lo = schema.get("minimum", 0)
            hi = schema.get("maximum", 100)
            want = round(20 + 75 * self.overlap) if name == "match_score" else 15
            return max(lo, min(hi, want))
        if kind == "number":
            return float(schema.get("minimum", 0))
        if kind == "boolean":
            return True
        if name == "lang":
            return "en"
        text = self.sentence()
        hi = schema.get("maxLength", 10_000)
        lo = schema.get("minLength", 0)
        text = text[:hi].rstrip() or "x"
        return text + "." * max(0, lo - len(text))


def _prompt_parts(messages: list[dict[str, Any]]) -> tuple[str, str, str]:
    """(system text, user text of the first turn, intent)."""
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    m = re.search(r"^Intent of the reader: (.*)$", user, flags=re.M)
    return system, user, m.group(1) if m else ""


def _format_of(body: dict[str, Any]) -> str:
    """The response format a request asks for, as readdod names them."""
    fmt = body.get("response_format") or {}
    kind = fmt.get("type")
    if kind == "json_schema":
        return "json_schema"
    if kind == "json_object":
        return "json_object_schema" if fmt.get("schema") else "json_object"
    return "prompt"


def _schema_of(body: dict[str, Any], prompt: str) -> tuple[str, dict[str, Any] | None, bool]:
    """(step, schema, whether the schema came with ``response_format``)."""
    fmt = body.get("response_format") or {}
    name = re.search(r'write the "(\w+)" part', prompt)
    step = name.group(1) if name else ""
    if fmt.get("type") == "json_schema":
        js = fmt.get("json_schema") or {}
        return str(js.get("name", step)), js.get("schema"), True
    if fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):
        return step, fmt["schema"], True
    schema = None
    schema_at = prompt.find("JSON Schema:")
    if schema_at >= 0:
        start = prompt.find("{", schema_at)
        try:
            schema, _ = json.JSONDecoder().raw_decode(prompt, start)
        except ValueError:
            schema = None
    return step, schema, False


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class FakeOpenAI:
    """The server; use as a context manager, or :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        port: int = 0,
        *,
        retry_after: str = "0.2",
        hang_s: float = 30.0,
        structured_output: bool = True,
        accepts: tuple[str, ...] = FORMATS,
        format_status: int = 400,
        format_message: str = "response_format json_schema is not supported",
        echo_without_schema: bool = False,
        context_tokens: int | None = None,
        stream_errors: bool = False,
        refuses: tuple[str, ...] = (),
        interrupts: bool = False,
        event_s: float = 0.0,
        delay_s: float = 0.0,
    ) -> None:
        self.port = port
        #: Seconds every request waits before its answer: a slow model (or a cancel's
        #: window), ended early only by the client hanging up or the server stopping.
        self.delay_s = delay_s
        #: One request at a time, and a stream cut short (``[DONE]`` with no finish reason)
        #: as soon as another request waits: llama-cpp-python's ``interrupt_requests``.
        self.interrupts = interrupts
        #: Seconds between two events of a stream: how fast the model writes.
        self.event_s = event_s
        #: Streams cut short because another request came (``interrupts``).
        self.cuts = 0
        self._model = threading.Lock()
        self._waiting = 0
        self.retry_after = retry_after
        self.hang_s = hang_s
        #: The response formats taken; others are refused with ``format_status``.
        self.accepts = (
            accepts if structured_output else tuple(f for f in accepts if f != "json_schema")
        )
        self.format_status = format_status
        self.format_message = format_message
        #: A model asked without a schema in ``response_format`` answers with the schema.
        self.echo_without_schema = echo_without_schema
        #: Tokens (4 characters each) a request's prompt and ``max_tokens`` may fill.
        self.context_tokens = context_tokens
        #: Fail a streamed request after its 200 (llama-cpp-python on a context overflow).
        self.stream_errors = stream_errors
        #: Request parameters refused with a 400 that names them, as OpenAI does.
        self.refuses = refuses
        #: The prompt of the request before, for the prompt cache's count.
        self._last_prompt = ""
        self.requests: list[dict[str, Any]] = []
        #: The ``usage`` of every answer that reported one to its client (written to it
        #: whole: a stream cut before its usage event reported none), with its prompt
        #: and the step asked (its schema's name).
        self.usages: list[tuple[str, str, dict[str, Any]]] = []
        self.counts: dict[str, int] = {}
        #: Faults set at run time: (text the prompt contains, what, step or None).
        self.rules: list[tuple[str, str, str | None]] = []
        #: Requests being answered right now, and the most there ever were at once.
        self.in_flight = 0
        self.max_in_flight = 0
        #: Hung requests whose client went away (cancelled or timed out) before an answer.
        self.disconnects = 0
        self._lock = threading.RLock()
        #: Notified whenever a request arrives or ends, for :meth:`wait_until`.
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "body is not JSON"}})
                    return
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    fake._changed.notify_all()
                try:
                    if fake.interrupts:
                        with fake._lock:
                            fake._waiting += 1
                        with fake._model:
                            with fake._lock:
                                fake._waiting -= 1
                            self._post(body)
                    else:
                        self._post(body)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                        fake._changed.notify_all()

            def _post(self, body: dict[str, Any]) -> None:
                if fake.delay_s and self._client_left(fake.delay_s):
                    with fake._lock:
                        fake.disconnects += 1
                        fake._changed.notify_all()
                    self.close_connection = True
                    return
                status, payload, headers = fake._answer(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                if status == 0:
                    if self._client_left(fake.hang_s):
                        with fake._lock:
                            fake.disconnects += 1
                            fake._changed.notify_all()
                        self.close_connection = True
                        return
                    status, payload, headers = 200, fake._ok(body, "late"), {}
                if payload is GARBAGE:
                    self._raw(200, b"<html><body>502 Bad Gateway</body></html>")
                    return
                if payload is BREAK:
                    self._events(body, [], complete=False)
                    return
                if isinstance(payload, tuple) and payload[0] in (CUT, DROP):
                    # Every event but the finish reason (and the usage after it).
                    events = [
                        e
                        for e in fake._chunks(body, payload[1])
                        if e["choices"] and not e["choices"][0]["finish_reason"]
                    ]
                    self._events(
                        body, events[: max(2, len(events) // 2)], complete=payload[0] is CUT
                    )
                    return
                if status == 200 and body.get("stream"):
                    self._events(body, fake._chunks(body, payload))
                    return
                if payload is RESET:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    self.connection.close()
                    return
                sent = self._json(status, payload, headers)
                if sent and isinstance(payload, dict) and payload.get("usage"):
                    fake._reported(body, payload["usage"])

            def _client_left(self, wait_s: float) -> bool:
                """Wait up to ``wait_s`` (or until the server stops) for the client to hang up."""
                deadline = time.monotonic() + wait_s
                while not fake._stopping.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    # Short polls, so that stop() ends the wait too.
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                    if not readable:
                        continue
                    try:
                        if self.connection.recv(1, socket.MSG_PEEK) == b"":
                            return True
                    except OSError:
                        return True
                    # The client sent more on this connection: nothing to tell from it.
                    fake._stopping.wait(max(deadline - time.monotonic(), 0))
                    return False
                return False

            def _events(
                self, body: dict[str, Any], events: list[dict[str, Any]], complete: bool = True
            ) -> None:
                """Server-sent events, as a streamed chat completion; ``complete=False``
                breaks the stream off (a chunked body never finished)."""
                self.close_connection = True
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.send_header("connection", "close")  # so no client reuses it
                    self.end_headers()
                    for sent, event in enumerate(events):
                        if fake.event_s:
                            fake._stopping.wait(fake.event_s)
                        if fake.interrupts and sent and fake._waiting and complete:
                            with fake._lock:
                                fake.cuts += 1
                            break  # another request waits: this one ends here, unfinished
                        self._chunk(f"data: {json.dumps(event)}\n\n".encode())
                        if event.get("usage"):
                            self.wfile.flush()
                            fake._reported(body, event["usage"])
                    if complete:
                        self._chunk(b"data: [DONE]\n\n")
                        self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

            def _raw(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def _json(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> bool:
                """Send ``payload``; False if the client was gone before all of it went."""
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:
                    return False  # the client gave up (a hang test)
                return True

        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: connections are refused until :meth:`start` again (same port)."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- answers ---------------------------------------------------------------

    def fault(self, needle: str, what: str | None, step: str | None = None) -> None:
        """From now on, answer every request whose prompt contains ``needle`` with ``what``
        (as in a directive), for ``step`` only if given; None: answer them well again.

        Unlike a directive, which is fixed when the item is captured, this lets a
        test decide how an item's next run goes.
        """
        if what is not None and not DIRECTIVE.fullmatch(f"fake:{what}"):
            raise ValueError(f"unknown fault {what!r}")
        with self._lock:
            self.rules = [r for r in self.rules if r[0] != needle]
            if what is not None:
                self.rules.append((needle, what, step))

    def _directive(self, text: str, step: str) -> str | None:
        with self._lock:
            for needle, what, only in self.rules:
                if needle in text and only in (None, step):
                    return what
            for m in DIRECTIVE.finditer(text):
                what, times, only, _tag = m.groups()
                if only and only != step:
                    continue
                key = m.group(0)
                used = self.counts.get(key, 0)
                if times is not None and used >= int(times):
                    continue
                self.counts[key] = used + 1
                return what
        return None

    def _reported(self, body: dict[str, Any], usage: dict[str, Any]) -> None:
        """Count ``usage`` as reported: it was written to the client whole."""
        whole = "\n".join(str(m.get("content")) for m in body.get("messages") or [])
        step = "relevance" if is_relevance_question(body) else _schema_of(body, whole)[0]
        with self._lock:
            self.usages.append((whole, step, usage))

    def _ok(self, body: dict[str, Any], _why: str = "") -> dict[str, Any]:
        messages = body.get("messages") or []
        system, user, intent = _prompt_parts(messages)
        _, schema, _ = _schema_of(body, f"{system}\n{user}")
        content = json.dumps(_Instance(schema or {}, user, intent).build(schema or {}))
        return self._completion(body, content, user)

    def _completion(
        self,
        body: dict[str, Any],
        content: str | None,
        prompt: str,
        refusal: str | None = None,
        finish_reason: str = "stop",
        logprobs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if content is not None and isinstance(limit, int) and len(content) > limit * 4:
            content, finish_reason = content[: limit * 4], "length"
        whole = "\n".join(str(m.get("content")) for m in body.get("messages") or [])
        with self._lock:
            cached = _common_prefix(self._last_prompt, whole) // 4
            self._last_prompt = whole
        usage = {
            "prompt_tokens": len(whole) // 4 + 1,
            "completion_tokens": len(content or "") // 4 + 1,
            "total_tokens": (len(whole) + len(content or "")) // 4 + 2,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": logprobs,
                }
            ],
            "usage": usage,
        }

    def _chunks(self, body: dict[str, Any], whole: dict[str, Any]) -> list[dict[str, Any]]:
        """A completion as the events of a stream: the role, the content in pieces, the
        finish reason, then the usage when ``stream_options`` asks for it."""
        choice = whole["choices"][0]
        message = choice["message"]
        base = {k: whole[k] for k in ("id", "created", "model")} | {
            "object": "chat.completion.chunk"
        }

        def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events = [event({"role": "assistant", "content": ""})]
        content = message.get("content") or ""
        events += [event({"content": content[i : i + 40]}) for i in range(0, len(content), 40)]
        if message.get("refusal"):
            events.append(event({"refusal": message["refusal"]}))
        events.append(event({}, choice["finish_reason"]))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(base | {"choices": [], "usage": whole["usage"]})
        return events

    def _answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, headers); status 0 means: hang."""
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self._changed.notify_all()
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}, {}
        messages = body.get("messages") or []
        _, user, intent = _prompt_parts(messages)
        whole = "\n".join(str(m.get("content")) for m in messages)
        step, schema, given = _schema_of(body, whole)
        for param in self.refuses:
            if param in body:
                hint = " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
                return (
                    400,
                    {
                        "error": {
                            "message": f"Unsupported parameter: '{param}' is not supported"
                            f" with this model.{hint}",
                            "type": "invalid_request_error",
                            "param": param,
                            "code": "unsupported_parameter",
                        }
                    },
                    {},
                )
        fmt = _format_of(body)
        if fmt not in self.accepts and not (
            fmt == "json_object_schema" and "json_object" in self.accepts
        ):
            message = self.format_message
            if self.format_status >= 500:
                return self.format_status, {"error": {"message": message, "code": None}}, {}
            return self.format_status, {"error": {"message": message}}, {}
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        asked = len(whole) // 4 + 1 + limit
        if self.context_tokens is not None and asked > self.context_tokens:
            if self.stream_errors and body.get("stream"):
                return 200, BREAK, {}
            return (
                400,
                {
                    "error": {
                        "message": f"This model's maximum context length is"
                        f" {self.context_tokens} tokens. However, you requested {asked} tokens"
                        f" ({asked - limit} in the messages, {limit} in the completion)."
                        " Please reduce the length of the messages or completion.",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
                {},
            )
        what = self._directive(whole, step)
        if what == "429":
            return (
                429,
                {"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limit"}},
                {"retry-after": self.retry_after},
            )
        if what == "400":
            return 400, {"error": {"message": "temperature must be at most 2"}}, {}
        if what in ("500", "503"):
            return int(what), {"error": {"message": "the model crashed"}}, {}
        if what == "hang":
            return 0, None, {}
        if what == "garbage":
            return 200, GARBAGE, {}
        if what == "reset":
            return 200, RESET, {}
        if what in ("cut", "drop"):
            if body.get("stream"):
                return 200, (CUT if what == "cut" else DROP, self._ok(body)), {}
            return 200, self._ok(body), {}
        if what == "badjson":
            return 200, self._completion(body, "Sure! Here it is: {summary: oops", user), {}
        if what == "invalid":
            return 200, self._completion(body, json.dumps({"unexpected": True}), user), {}
        if what == "refuse":
            return 200, self._completion(body, None, user, refusal="I can't help with that."), {}
        if what == "echo" or (self.echo_without_schema and not given):
            return 200, self._completion(body, json.dumps(schema or {}), user), {}
        asked_goal = _RELEVANCE.search(user)
        if asked_goal and schema is None:
            return 200, self._relevance(body, user, asked_goal.group(1)), {}
        instance = _Instance(schema or {}, user, intent)
        instance.wild_integers = what == "bigint"
        content = json.dumps(instance.build(schema or {}), ensure_ascii=False)
        if what == "length":
            return (
                200,
                self._completion(body, content[: len(content) // 2], user, None, "length"),
                {},
            )
        if what == "ctrl":
            # A raw newline inside the first string, in a fence, with words around it.
            loose = content.replace('": "', '": "Line one.\nLine two: ', 1)
            content = f"Here is the JSON you asked for:\n```json\n{loose}\n```\nHope it helps!"
        return 200, self._completion(body, content, user), {}

    def _relevance(self, body: dict[str, Any], user: str, goal: str) -> dict[str, Any]:
        """readdod's short relevance question, answered as a model does: ``yes`` is the
        likelier the more of the goal's words the text's lead shares, with the first
        token's log-probabilities when the request asks for them."""
        words = _terms(goal)
        shared = len(words & _terms(user[: user.find("A reader")])) / len(words) if words else 0
        p = 0.35 + 0.6 * min(1.0, 2 * shared)
        word = "yes" if p >= 0.5 else "no"
        logprobs = None
        if body.get("logprobs"):
            top = [("yes", math.log(p)), ("no", math.log(1 - p))]
            logprobs = {
                "content": [
                    {
                        "token": word,
                        "logprob": max(lp for _, lp in top),
                        "bytes": None,
                        "top_logprobs": [
                            {"token": t, "logprob": lp, "bytes": None} for t, lp in top
                        ],
                    }
                ]
            }
        return self._completion(body, word, user, logprobs=logprobs)

    # --- what tests look at ----------------------------------------------------

    def wait_until(self, what: Callable[[FakeOpenAI], bool], timeout: float = 30) -> None:
        """Block until ``what(self)`` holds, re-checked whenever a request arrives or ends."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not what(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the fake model server waited {timeout:g} s in vain: {len(self.requests)}"
                        f" requests, {self.in_flight} in flight, {self.disconnects} disconnects"
                    )
                self._changed.wait(left)

    def tokens_reported(
        self, needle: str = "", steps: tuple[str, ...] | None = None
    ) -> tuple[int, int]:
        """Prompt and completion tokens this server reported to its clients, for prompts
        holding ``needle`` (and asking for one of ``steps``, by their schema's name)."""
        with self._lock:
            found = [
                u
                for prompt, step, u in self.usages
                if needle in prompt and (steps is None or step in steps)
            ]
        return sum(u["prompt_tokens"] for u in found), sum(u["completion_tokens"] for u in found)

    def completions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def steps(self) -> list[dict[str, Any]]:
        """The completions that asked for a step's answer: all but the relevance questions."""
        return [r for r in self.completions() if not is_relevance_question(r["body"])]


def is_relevance_question(body: dict[str, Any]) -> bool:
    """Whether a request is readdod's short relevance question (no format, one word)."""
    _, user, _ = _prompt_parts(body.get("messages") or [])
    return "response_format" not in body and _RELEVANCE.search(user) is not None


def ai_config(base_url: str, **overrides: Any) -> dict[str, Any]:
    """A daemon's ``[ai]`` section for this server: quick retries, no circuit breaker."""
    cfg: dict[str, Any] = {
        "engine": "openai",
        "base_url": base_url,
        "model": "fake-small",
        "api_key_env": "FAKE_LLM_KEY",
        "attempts": 3,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.02,
        "timeout_s": 1.0,
        "circuit_failures": 0,
    }
    cfg.update(overrides)
    return cfg


@contextmanager
def running(**kwargs: Any) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(**kwargs).start()
    try:
        yield fake
    finally:
        fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="run this command with $READDOD_CONFIG pointing readdod's openai engine at the"
        " server, then stop (e.g. -- readdod eval --engine openai)",
    )
    args = parser.parse_args()
    fake = FakeOpenAI(args.port).start()
    try:
        command = [c for c in args.command if c != "--"]
        if command:
            with tempfile.TemporaryDirectory() as tmp:
                cfg = Path(tmp) / "config.toml"
                cfg.write_text(
                    f'[ai]\nengine = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n'
                )
                env = {**os.environ, "READDOD_CONFIG": str(cfg)}
                return subprocess.run(command, env=env, check=False).returncode
        done = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        signal.signal(signal.SIGINT, lambda *_: done.set())
        print(f"fake OpenAI-compatible server on {fake.base_url}", flush=True)
        done.wait()
        return 0
    finally:
        fake.stop()


if __name__ == "__main__":
    sys.exit(main())
