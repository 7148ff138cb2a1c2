"""`readdod browser-host` as a browser runs it: a subprocess speaking the framing on its
stdin and stdout, in front of the real daemon."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec

from readdod.capture import native_messaging as nm
from readdod.capture.browser_install import EXTENSION_ID
from tests.daemon_proc import DaemonProc, toml

PAGE = (
    "<html><head><title>Tides</title></head><body><article><h1>Tides</h1>"
    + "".join(
        f"<p>Paragraph {i}: the moon pulls the sea, and the sea answers twice a day"
        " with a tide that sailors plan their passages around.</p>"
        for i in range(12)
    )
    + "</article></body></html>"
)


class Host:
    """The host process, with its stdout read frame by frame and stderr kept."""

    def __init__(self, sock: Path, config: Path) -> None:
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "readdod", "browser-host"),
                *("--socket", str(sock), "--config", str(config)),
                f"chrome-extension://{EXTENSION_ID}/",  # as a browser starts it
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if not k.startswith("READDOD_")},
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.reader = nm.FrameReader(self.proc.stdout, 1 << 30)
        self.stderr = b""
        self._err = threading.Thread(target=self._drain, daemon=True)
        self._err.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(nm.encode(message))

    def answer(self) -> Any:
        body = self.reader.next_frame()
        assert body is not None, self.stderr
        return msgspec.json.decode(body)

    def ask(self, message: Any) -> Any:
        self.send(message)
        return self.answer()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self.release()
        return code

    def release(self) -> None:
        """End the process if it still runs, and close every pipe."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._err.join(timeout=10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def host_config(root: Path, max_bytes: int) -> Path:
    path = root / "host.toml"
    path.write_text(toml({"fetch": {"max_bytes": max_bytes}}))
    return path


def test_the_host_forwards_captures_and_answers_errors_without_stopping(
    daemons: list[DaemonProc], tmp_path: Path
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"}, fetch={"max_bytes": 50_000})
    daemons.append(d)
    d.start()
    # The host reads its message limit from its config: a page of 100 kB, as a capture carries it.
    limit = 6 * 100_000 + 1024 * 1024
    host = Host(d.sock, host_config(tmp_path, 100_000))
    try:
        url = "https://example.org/tides"
        capture = {
            "method": "capture",
            "id": 1,
            "params": {
                "intent": "plan a sailing trip",
                "url": url,
                "title": "Tides",
                "html": PAGE,
                "capture_id": "tab-1",
            },
        }
        first = host.ask(capture)
        assert first["id"] == 1 and first["result"]["created"] is True
        item_id = first["result"]["item"]["id"]
        d.wait_status("READY", 1)
        got = host.ask({"method": "get", "id": "g", "params": {"id": item_id}})
        assert got["id"] == "g"
        assert got["result"]["item"]["status"] == "READY"
        assert got["result"]["artifacts"]["extraction"]["payload"]["source"] == "provided_html"
        assert "card" in got["result"]["artifacts"]
        listed = host.ask({"method": "list", "id": 2, "params": {"query": "tides"}})
        assert [i["id"] for i in listed["result"]["items"]] == [item_id]
        # The same capture again adds nothing.
        again = host.ask({**capture, "id": 3})
        assert again["result"]["created"] is False
        assert again["result"]["item"]["id"] == item_id

        # Bad messages, each answered; the host reads on.
        host.send_raw(struct.pack("=I", 9) + b"not json!")
        assert host.answer()["error"]["code"] == nm.PARSE_ERROR
        host.send_raw(struct.pack("=I", limit + 1) + b" " * (limit + 1))
        too_big = host.answer()
        assert too_big["id"] is None
        assert too_big["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
        assert str(limit) in too_big["error"]["message"]
        unknown = host.ask({"method": "archive", "id": 4, "params": {"id": item_id}})
        assert (unknown["id"], unknown["error"]["code"]) == (4, nm.METHOD_NOT_FOUND)
        # The daemon's own errors come back as it said them, with the message's id.
        missing = host.ask({"method": "get", "id": 5, "params": {"id": "nope"}})
        assert missing["id"] == 5
        assert missing["error"]["data"]["error_code"] == "NOT_FOUND"
        assert missing["error"]["code"] == 404
        no_intent = host.ask({"method": "capture", "id": 6, "params": {"url": url}})
        assert no_intent["id"] == 6 and no_intent["error"]["code"] == -32602
        assert "intent" in no_intent["error"]["message"]
        # A page under the host's limit but over the daemon's fetch.max_bytes: the daemon
        # refuses it, and says so.
        huge_page = "<html><body><p>" + "swell " * 10_000 + "</p></body></html>"
        refused = host.ask(
            {"method": "capture", "id": "h", "params": {"intent": "x", "html": huge_page}}
        )
        assert refused["id"] == "h"
        assert refused["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
        listed = host.ask({"method": "list", "id": 7})
        assert [i["id"] for i in listed["result"]["items"]] == [item_id]

        # The daemon goes away: an error that says so; it comes back: served again.
        assert d.stop() == 0
        down = host.ask({"method": "list", "id": 8})
        assert down["id"] == 8
        assert down["error"]["data"] == {
            "error_code": "DAEMON_UNAVAILABLE",
            "retryable": True,
            "status": 503,
        }
        assert "not running" in down["error"]["message"]
        d.start()
        back = host.ask({"method": "get", "id": 9, "params": {"id": item_id}})
        assert back["result"]["item"]["id"] == item_id

        # A stream cut inside a message: said, then the host ends (nothing more can come).
        host.send_raw(struct.pack("=I", 100) + b'{"method": ')
        assert host.proc.stdin is not None
        host.proc.stdin.close()
        cut = host.answer()
        assert cut["error"]["code"] == nm.PARSE_ERROR
        assert "11 of 100 bytes" in cut["error"]["message"]
        assert host.reader.next_frame() is None  # nothing but frames on stdout
        assert host.proc.wait(timeout=60) == 1
    finally:
        host.release()
    assert b"Traceback" not in host.stderr
    events = [msgspec.json.decode(line)["event"] for line in host.stderr.splitlines()]
    assert events[0] == "browser_host.started"
    assert {"browser_host.request", "browser_host.too_large", "browser_host.truncated"} <= set(
        events
    )


def test_an_answer_a_browser_would_refuse_is_replaced_by_an_error(
    daemons: list[DaemonProc], tmp_path: Path
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start()
    host = Host(d.sock, host_config(tmp_path, 2_000_000))
    try:
        words = io.StringIO()
        for i in range(40_000):
            words.write(f"Sentence {i} says the tide turns at noon. ")
        text = words.getvalue()
        assert 1_000_000 < len(text) < 2_000_000
        made = host.ask({"method": "capture", "id": 1, "params": {"intent": "tides", "text": text}})
        item_id = made["result"]["item"]["id"]
        d.wait_log(
            lambda e: (
                e["event"] == "item.transition"
                and e.get("from") == "PROCESSING"
                and e.get("item_id") == item_id
            ),
            timeout=120,
        )
        big = host.ask({"method": "get", "id": "big", "params": {"id": item_id}})
        assert big["id"] == "big"
        assert big["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
        assert "readdod show" in big["error"]["message"]
        # The host reads on after it.
        small = host.ask({"method": "list", "id": "next", "params": {"limit": 1}})
        assert small["result"]["items"][0]["id"] == item_id
        assert host.close() == 0
    finally:
        host.release()


def test_a_broken_config_is_said_in_every_answer(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[fetch]\nmax_bytes = -1\n")
    host = Host(tmp_path / "readdod.sock", bad)
    try:
        for req_id in (1, 2):
            answer = host.ask({"method": "list", "id": req_id})
            assert answer["id"] == req_id
            assert answer["error"]["data"]["error_code"] == "CONFIG_INVALID"
            assert "fetch.max_bytes" in answer["error"]["message"]
        assert host.close() == 0
    finally:
        host.release()
    assert b"browser_host.config_invalid" in host.stderr


def test_with_a_log_file_the_host_logs_there_and_nowhere_else(tmp_path: Path) -> None:
    log = tmp_path / "host.log"
    config = host_config(tmp_path, 1000)
    ran = subprocess.run(
        [
            *(sys.executable, "-m", "readdod", "browser-host"),
            *("--socket", str(tmp_path / "no.sock"), "--config", str(config)),
            *("--log-file", str(log)),
        ],
        input=nm.encode({"method": "list", "id": 1}),
        capture_output=True,
        timeout=60,
    )
    assert ran.returncode == 0
    assert ran.stderr == b""
    reader = nm.FrameReader(io.BytesIO(ran.stdout), nm.TO_BROWSER_MAX)
    answer = reader.next_frame()
    assert answer is not None and reader.next_frame() is None
    assert msgspec.json.decode(answer)["error"]["data"]["error_code"] == "DAEMON_UNAVAILABLE"
    lines = [msgspec.json.decode(line) for line in log.read_bytes().splitlines()]
    assert [e["event"] for e in lines] == [
        "browser_host.started",
        "browser_host.request",
        "browser_host.closed",
    ]
    assert lines[1]["error_code"] == "DAEMON_UNAVAILABLE"
