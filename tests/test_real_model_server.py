"""The ``openai`` engine against a real model server that readdod's authors did not write.

llama-cpp-python's OpenAI-compatible server runs the SmolLM2-135M-Instruct
GGUF (``.ci/setup-llama`` builds the one and unpacks the other where this test
looks; ``READDOD_LLAMA_PYTHON`` and ``READDOD_LLAMA_MODEL`` name others) on 127.0.0.1; a small
proxy between readdod's daemon and it keeps a log of every request and
answer. The server refuses ``json_schema`` with an HTTP 500 and takes
``json_object`` with a schema (a grammar); it streams; it runs one request at
a time. A 135M model writes poor cards: the test asks only that the plumbing
holds. No request is refused for its format once the server has said which it
takes, every request is bounded by ``max_tokens``, and every item ends READY
or FAILED_AI for what the model wrote.

A missing server or model fails the test: run ``.ci/setup-llama``.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from readdod.engines.openai.asking import RELEVANCE_TOKENS
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc

MAX_TOKENS = {"summary": 160, "summary_chunk": 160, "score": 120, "todos": 160, "card_text": 60}
#: Content reasons a FAILED_AI may have: what the model wrote, not how the server behaved.
CONTENT_CODES = {"AI_SCHEMA_INVALID", "AI_PARSE_ERROR", "AI_REFUSED"}
TEXTS = [
    (
        "learn how to make SQLite writes durable",
        "SQLite in WAL mode lets readers and a writer work at the same time. To enable it, run"
        " PRAGMA journal_mode=WAL once; the setting persists in the file. With synchronous=FULL"
        " every commit is durable, even after a power loss.",
    ),
    (
        "grow tomatoes on my balcony",
        "Tomato plants need six hours of sun a day. Water them deeply twice a week and tie the"
        " stems to a cane as they grow. Pick the fruit when it is fully red.",
    ),
    (
        "plan a conference talk",
        "A good talk has one idea. Write it down in a sentence, then cut every slide that does"
        " not serve it. Rehearse aloud three times and time yourself.",
    ),
]


@dataclass
class Logged:
    """One request through the proxy: what was asked and what came back."""

    body: dict[str, Any]
    status: int
    answer: bytes
    seconds: float


class LoggingProxy:
    """A loopback HTTP proxy to one upstream server that logs each request and answer."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(b"")

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("content-length") or 0)))

            def _forward(self, raw: bytes) -> None:
                started = time.monotonic()
                up = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=600)
                try:
                    up.request(
                        self.command,
                        self.path,
                        body=raw or None,
                        headers={"content-type": "application/json"},
                    )
                    resp = up.getresponse()
                    data = resp.read()  # the whole stream: events are passed on at its end
                    status = resp.status
                    ctype = resp.getheader("content-type") or "application/json"
                except (OSError, http.client.HTTPException) as exc:
                    # The server broke the answer off: so does the proxy.
                    status, data, ctype = 0, repr(exc).encode(), ""
                finally:
                    up.close()
                if raw:
                    with proxy._lock:
                        proxy.log.append(
                            Logged(json.loads(raw), status, data, time.monotonic() - started)
                        )
                if status == 0:
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LoggingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    port: int
    #: The server's log lines, among them llama.cpp's prompt cache hits.
    lines: list[str]

    def cache_hits(self) -> list[tuple[int, int]]:
        """(prompt tokens taken from the cache, tokens evaluated) of each request."""
        out = []
        for line in self.lines:
            m = re.search(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens", line)
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
        return out


def llama_server_for(model: str, *, n_ctx: int = 4096) -> Iterator[LlamaServer]:
    """llama-cpp-python's server on 127.0.0.1 with ``model``, at its defaults otherwise."""
    cache = Path(os.environ.get("READDOD_CI_CACHE") or Path.home() / ".cache" / "readdod-ci")
    python = os.environ.get("READDOD_LLAMA_PYTHON") or str(cache / "llama-venv" / "bin" / "python")
    if not (python and Path(python).exists() and model and Path(model).exists()):
        pytest.fail(
            "the real model server is missing: READDOD_LLAMA_PYTHON and READDOD_LLAMA_MODEL"
            " (or READDOD_LLAMA_QWEN_MODEL) must name llama-cpp-python's interpreter and a GGUF"
            " model (default: where `bash .ci/setup-llama` puts them); run `bash .ci/setup` first"
        )
    port = _free_port()
    proc = subprocess.Popen(
        [
            *(python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1"),
            *("--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "2"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    server = LlamaServer(port, [])
    drain: threading.Thread | None = None
    try:
        for line in stderr:  # uvicorn says when it listens
            server.lines.append(line)
            if "Uvicorn running on" in line:
                break
        else:
            pytest.fail("llama-cpp-python's server did not start:\n" + "".join(server.lines[-20:]))
        drain = threading.Thread(target=lambda: server.lines.extend(stderr), daemon=True)
        drain.start()
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if drain is not None:
            drain.join(timeout=10)
        stderr.close()


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """llama-cpp-python's server on 127.0.0.1 with the small GGUF."""
    cache = Path(os.environ.get("READDOD_CI_CACHE") or Path.home() / ".cache" / "readdod-ci")
    model = os.environ.get("READDOD_LLAMA_MODEL") or str(
        cache / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    yield from llama_server_for(model)


def _finished(item: str, e: dict[str, Any]) -> bool:
    return bool(
        e["event"] == "item.transition"
        and e.get("item_id") == item
        and e["to"] in ("READY", "FAILED_AI", "FAILED_EXTRACTION")
    )


def _format(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_object" and fmt.get("schema"):
        return "json_object_schema"
    return str(fmt.get("type") or "prompt")


def test_items_go_through_a_real_llama_cpp_python_server(
    llama_server: LlamaServer, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with LoggingProxy(llama_server.port) as proxy:
        d = DaemonProc(
            tmp_path,
            ai={
                "engine": "openai",
                "base_url": f"http://127.0.0.1:{proxy.port}/v1",
                "model": "smollm2-135m",
                "concurrency": 1,
                "timeout_s": 300.0,  # generous: CI runs other tests beside it on 2 cores
                "attempts": 2,
                "retry_initial_s": 0.1,
                "retry_max_s": 0.2,
                "circuit_failures": 2,
                "context_tokens": 4096,
                "temperature": 0.0,
            },
            daemon={"skip_below": 0},
            **{"ai.max_tokens": MAX_TOKENS},
            **NO_AUTO_RETRY,
        )
        daemons.append(d)
        d.start()
        outcomes: dict[str, tuple[str, str | None, str | None]] = {}
        # One item at a time, so each run's steps follow each other and the server's
        # prompt cache can serve the article they share.
        for intent, text in TEXTS:
            item = d.call("capture", {"text": text, "intent": intent})["item"]["id"]
            d.wait_log(functools.partial(_finished, item), timeout=600)
            got = d.call("get", {"id": item})["item"]
            failure = got.get("failure") or {}
            outcomes[item] = (got["status"], failure.get("error_code"), failure.get("message"))
        d.stop()

    requests = [r for r in proxy.log if r.body.get("messages")]
    print("\nrequests through the proxy (format, max_tokens, status, seconds):")
    for r in requests:
        print(
            f"  {_format(r.body):<20} {r.body.get('max_tokens')!s:>5} {r.status} {r.seconds:6.1f}"
        )
    print("readdod's own request log (kind, format, max_tokens, s, finish, prompt/cached):")
    for e in d.logs:
        if e["event"] == "ai.request":
            print(
                f"  {e['kind']:<12} {e['format']:<20} {e['max_tokens']:>4} {e['seconds']:6.1f}"
                f" {e.get('finish_reason')!s:<7} {e.get('prompt_tokens')}/{e.get('cached_tokens')}"
            )
    hits = llama_server.cache_hits()
    print("llama.cpp's prompt cache (tokens reused / tokens evaluated):", hits)
    print("outcomes:", json.dumps(outcomes, indent=1))

    # The server said once that it does not take json_schema; after that, every request
    # went in a format it takes, and none was refused for it.
    refused = [r for r in requests if r.status >= 400 and b"json_object" in r.answer]
    assert [_format(r.body) for r in refused] == ["json_schema"]
    assert requests[0] is refused[0]
    # (The score's relevance question asks in no format: it wants one word.)
    steps = [r for r in requests[1:] if "logprobs" not in r.body]
    assert {_format(r.body) for r in steps} == {"json_object_schema"}
    assert {_format(r.body) for r in requests[1:]} - {"json_object_schema"} <= {"prompt"}
    learned = json.loads((d.data / "model-servers.json").read_text())
    assert [v["format"] for v in learned.values()] == ["json_object_schema"]
    # Every step's request is bounded by its step's max_tokens, and streamed; the
    # relevance question asks for a word, whole.
    for r in steps:
        assert r.body.get("max_tokens") in MAX_TOKENS.values(), r.body.get("max_tokens")
        assert r.body.get("stream") is True
    for r in requests[1:]:
        if r not in steps:
            assert r.body.get("max_tokens") == RELEVANCE_TOKENS and not r.body.get("stream")
    # The system text and the article are the prompts' shared prefix: the server's cache
    # serves them again to the later steps of a run.
    assert max(reused for reused, _ in hits) > 150, hits
    # Every item ends READY, or FAILED_AI for what the model wrote.
    for status, code, message in outcomes.values():
        assert status == "READY" or (status == "FAILED_AI" and code in CONTENT_CODES), (
            status,
            code,
            message,
        )


def test_two_items_in_flight_at_the_defaults_lose_no_request_to_a_cut_stream(
    llama_server: LlamaServer, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """llama-cpp-python at its defaults (``interrupt_requests`` on) and readdod at its
    own (``ai.concurrency`` unset): the server's cuts teach readdod to send one request
    at a time, and no item fails because a stream was cut."""
    d = DaemonProc(
        tmp_path,
        ai={
            "engine": "openai",
            "base_url": f"http://127.0.0.1:{llama_server.port}/v1",
            "model": "smollm2-135m",
            "timeout_s": 300.0,
            "context_tokens": 4096,
            "temperature": 0.0,
        },
        daemon={"skip_below": 0},
        **{"ai.max_tokens": MAX_TOKENS},
        **NO_AUTO_RETRY,
    )
    daemons.append(d)
    d.start()
    items = [
        d.call("capture", {"text": text, "intent": intent})["item"]["id"]
        for intent, text in TEXTS[:2]
    ]
    for item in items:
        d.wait_log(functools.partial(_finished, item), timeout=900)
    got = [d.call("get", {"id": i})["item"] for i in items]
    d.stop()
    requests = [e for e in d.logs if e["event"] == "ai.request"]
    cuts = [e for e in d.logs if e["event"] == "ai.stream_cut"]
    moves = [(e["limit"], e["reason"]) for e in d.logs if e["event"] == "ai.concurrency"]
    print(f"\n{len(requests)} requests, {len(cuts)} streams cut, limit moves: {moves}")
    for item in got:
        failure = item.get("failure") or {}
        print(" ", item["status"], failure.get("error_code"), failure.get("message"))
    # Both items were in flight at once, so the server met two requests together.
    assert max(e["concurrency"] for e in requests) >= 2 or cuts
    # A cut stream lowered the limit and was asked again; it never failed an item.
    if cuts:
        assert moves and moves[0][1] == "stream cut short"
        assert min(limit for limit, _ in moves) == 1
    for item in got:
        failure = item.get("failure") or {}
        assert item["status"] == "READY" or (
            item["status"] == "FAILED_AI" and failure.get("error_code") in CONTENT_CODES
        ), (item["status"], failure)
    assert not [e for e in d.logs if e.get("error_code") in ("AI_PROVIDER_ERROR", "AI_TIMEOUT")]


def test_server_check_says_what_llama_cpp_python_takes_and_the_settings_to_use(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    conf = tmp_path / "config.toml"
    conf.write_text(
        f'[daemon]\ndata_dir = "{data}"\n'
        f'[ai]\nengine = "openai"\nbase_url = "http://127.0.0.1:{llama_server.port}/v1"\n'
        'model = "smollm2-135m"\ncontext_tokens = 8192\n'
    )
    env = {**os.environ, "READDOD_CONFIG": str(conf)}
    argv = [sys.executable, "-m", "readdod", "server", "check"]
    text = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    print("\n" + text.stdout + text.stderr)
    assert text.returncode == 0, text.stderr
    assert "two streams at once: cut" in text.stdout
    assert "concurrency = 1" in text.stdout
    assert "context_tokens = 4096" in text.stdout
    learned = json.loads((data / "model-servers.json").read_text())
    (entry,) = learned.values()
    # llama-cpp-python refuses json_schema and takes json_object with a schema.
    assert entry == {"format": "json_object_schema", "context_tokens": 4096, "concurrency": 1}
    as_json = subprocess.run(
        [*argv, "--json", "--no-remember"], capture_output=True, text=True, env=env, timeout=600
    )
    report = json.loads(as_json.stdout)
    assert report["formats"]["json_schema"].startswith("refused: HTTP 500")
    assert report["formats"]["json_object_schema"] == "accepted"
    assert report["context_source"] == "probe" and report["context_tokens"] == 4096
    assert report["tokens_per_s"] > 0
    assert report["two_streams"] == "cut"
    assert report["settings"]["ai.concurrency"] == 1
