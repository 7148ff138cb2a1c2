"""Capture at its edges, through the real daemon: the same page through other
spellings of its URL, pages up to fetch.max_bytes, binary input, and clients
that send half a line and stall."""

from __future__ import annotations

import hashlib
import json
import random
import socket
import sqlite3
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod.control import protocol as p
from readdod.control.client import Client, RpcError
from tests.daemon_proc import DaemonProc, run_cli

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time. "
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database."
)
PAGE = (
    '<html><head><title>WAL notes</title></head><body><article class="post">'
    f'<h1>WAL notes</h1><p class="lead">{ARTICLE}</p></article></body></html>'
)
URL = "https://news.example.com/story/42"
#: Other spellings of URL: a tracking parameter, a fragment, the host's case and its default port.
URL_VARIANTS = [
    f"{URL}?utm_source=x",
    f"{URL}#comments",
    "https://NEWS.example.com:443/story/42",
    "HTTPS://news.example.com/story/42?utm_medium=mail&utm_source=x#top",
]


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, daemon={"auto_process": False}, **sections)
    made.append(d)
    return d


def _refused(c: Client, params: dict[str, Any]) -> tuple[int, str, str]:
    with pytest.raises(RpcError) as info:
        c.call("capture", params)
    return info.value.rpc_code, info.value.error_code, info.value.message


def _count(d: DaemonProc) -> int:
    with d.db() as db:
        count: int = db.execute("SELECT count(*) FROM items").fetchone()[0]
    return count


# --- (a) the same capture ---------------------------------------------------------------


def test_a_page_with_its_html_through_other_spellings_of_its_url_is_one_item(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path).start()
    intent = "Decide whether we adopt WAL"
    with d.client() as c:
        first = c.call("capture", {"url": URL, "html": PAGE, "intent": intent})
        assert first["created"] is True
        item_id = first["item"]["id"]
        for url in URL_VARIANTS:
            again = c.call("capture", {"url": url, "html": PAGE, "intent": intent})
            assert (again["created"], again["item"]["id"]) == (False, item_id), url
        # The intent as people retype it: spacing and letter case do not matter.
        again = c.call(
            "capture",
            {"url": URL_VARIANTS[0], "html": PAGE, "intent": " decide  whether WE adopt wal"},
        )
        assert (again["created"], again["item"]["id"]) == (False, item_id)
        # Other content, or another intent, is another capture.
        other_html = c.call("capture", {"url": URL, "html": PAGE + "<p>v2</p>", "intent": intent})
        other_intent = c.call("capture", {"url": URL, "html": PAGE, "intent": "learn WAL"})
        assert other_html["created"] is True and other_intent["created"] is True

        # A capture_id repeated through another spelling of the URL is the same capture...
        body = {"url": URL, "html": PAGE, "intent": "share it", "capture_id": "tab-7"}
        made = c.call("capture", body)["item"]["id"]
        for url in URL_VARIANTS:
            again = c.call("capture", {**body, "url": url, "intent": "Share  it"})
            assert (again["created"], again["item"]["id"]) == (False, made), url
        # ...and really different content under it still conflicts.
        changes: list[dict[str, str]] = [
            {"html": PAGE + "<p>v2</p>"},
            {"intent": "share it later"},
            {"url": "https://news.example.com/story/43"},
            {"title": "Mine"},
        ]
        for change in changes:
            code, error_code, message = _refused(c, {**body, **change})
            assert (code, error_code) == (409, "IDEMPOTENCY_CONFLICT"), change
            assert "tab-7" in message and made in message
    assert _count(d) == 4

    page = tmp_path / "story.html"
    page.write_text(PAGE)
    out = run_cli(d, "capture", URL_VARIANTS[2], "--html", str(page), "--intent", intent)
    assert out.returncode == 0 and out.stdout.startswith(f"already captured {item_id}"), out


def _legacy_hash(params: dict[str, Any]) -> str:
    """How captures were hashed before: the raw fields as sent."""
    h = hashlib.sha256()
    for key in ("url", "intent", "html", "text", "title"):
        part = params.get(key)
        h.update(b"\x00" if part is None else b"\x01" + part.encode())
    return h.hexdigest()[:32]


def test_items_captured_before_keep_their_capture_id(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """An item whose hash was made the old way still answers its capture_id repeats."""
    d = _daemon(daemons, tmp_path).start()
    body = {"url": URL_VARIANTS[0], "html": PAGE, "intent": "keep it", "capture_id": "old-1"}
    made = d.call("capture", body)["item"]["id"]
    assert d.stop() == 0
    with sqlite3.connect(d.db_path) as db:
        db.execute("UPDATE items SET capture_hash = ? WHERE id = ?", (_legacy_hash(body), made))
    d.start()
    with d.client() as c:
        again = c.call("capture", body)
        assert (again["created"], again["item"]["id"]) == (False, made)
        assert _refused(c, {**body, "html": PAGE + " "})[:2] == (409, "IDEMPOTENCY_CONFLICT")


# --- (b) pages up to fetch.max_bytes ----------------------------------------------------


def _page_of(size: int) -> str:
    """An HTML page of about ``size`` UTF-8 bytes, with quotes and accents to escape."""
    para = '<p class="para" data-x="1">Ünïcödé «quotes» and "more" of them, über naïve.</p>\n'
    head = "<html><head><title>Big page</title></head><body><article>"
    tail = "</article></body></html>"
    count = (size - len(head) - len(tail)) // len(para.encode())
    return head + para * count + tail


def test_a_page_up_to_max_bytes_is_captured_over_the_socket(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    limit = 1 << 20
    d = _daemon(daemons, tmp_path, fetch={"max_bytes": limit}).start()
    page = _page_of(970 * 1024)
    assert 960 * 1024 < len(page.encode()) <= limit
    params = {"url": URL, "html": page, "intent": "read it"}
    request = {"jsonrpc": "2.0", "id": 1, "method": "capture", "params": params}
    # Escaped, the request is longer than the line limit of every other method.
    assert len(msgspec.json.encode(request)) > p.MAX_LINE
    big = tmp_path / "big.html"
    big.write_text(page)
    out = run_cli(d, "capture", URL, "--html", str(big), "--intent", "read it")
    assert out.returncode == 0 and out.stdout.startswith("captured "), out

    with d.client() as c:
        # Escaped by a client that writes only ASCII: \uXXXX for every accent.
        c.send_raw(json.dumps({**request, "params": {"html": page, "intent": "ascii"}}).encode())
        c.send_raw(b"\n")
        answer = json.loads(c.read_raw())
        assert answer["result"]["created"] is True, answer
        stored = c.call("get", {"id": answer["result"]["item"]["id"]})["item"]
        assert stored["source_type"] == "html"

        # Over fetch.max_bytes: refused with the limit, and the connection stays.
        code, error_code, message = _refused(c, {"html": page + "x" * 80_000, "intent": "x"})
        assert (code, error_code) == (413, "PAYLOAD_TOO_LARGE")
        assert "1.0 MB" in message and "fetch.max_bytes" in message
        # A line no capture of fetch.max_bytes can need is skipped, unread.
        c.send_raw(b" " * (p.capture_line_limit(limit) + 1) + b"\n")
        skipped = json.loads(c.read_raw())
        assert skipped["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
        # Other methods keep the 1 MiB line, batches too.
        ping = msgspec.json.encode({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {}})
        c.send_raw(ping[:-1] + b" " * p.MAX_LINE + b"}\n")
        assert json.loads(c.read_raw())["error"]["code"] == 413
        c.send_raw(b"[" + msgspec.json.encode(request) + b"]\n")
        assert json.loads(c.read_raw())["error"]["code"] == 413
        assert c.call("ping")["version"]
    assert _count(d) == 2


def test_the_cli_names_the_file_and_the_limit_when_a_page_is_too_big(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, fetch={"max_bytes": 1 << 20}).start()
    big = tmp_path / "big.html"
    big.write_text(_page_of(1_300_000))
    # With the daemon's config the CLI refuses before sending anything...
    out = run_cli(d, "capture", URL, "--html", str(big), "--intent", "x", "--config", str(d.config))
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"readdod: PAYLOAD_TOO_LARGE: {big} is 1.2 MB; readdod captures at most 1.0 MB of html"
        " (fetch.max_bytes)"
    )
    cli = ("capture", "--intent", "x", "--config", str(d.config))
    out = run_cli(d, *cli, "--text", "-", stdin="words " * 200_000)
    assert out.returncode == 1
    assert "standard input is over 1.0 MB" in out.stderr and "PAYLOAD_TOO_LARGE" in out.stderr
    # ...and with a config of its own (10 MB by default) the daemon's refusal names the file.
    own = tmp_path / "client.toml"
    own.write_text("")
    out = run_cli(d, "capture", URL, "--html", str(big), "--intent", "x", "--config", str(own))
    assert out.returncode == 1
    assert f"readdod: PAYLOAD_TOO_LARGE: {big}: the html is 1.2 MB" in out.stderr, out.stderr
    assert "at most 1.0 MB of html (fetch.max_bytes)" in out.stderr
    assert _count(d) == 0


# --- (c) binary input ---------------------------------------------------------------------


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    pixels = random.Random(3).randbytes(64 * (64 * 3 + 1))
    ihdr = struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


def _elf() -> bytes:
    data = Path(sys.executable).resolve().read_bytes()[:200_000]
    assert data.startswith(b"\x7fELF")
    return data


BINARIES: dict[str, Callable[[], bytes]] = {
    "an ELF executable": _elf,
    "a PNG image": _png,
    "binary data": lambda: random.Random(7).randbytes(50_000),
}


@pytest.mark.parametrize("kind", sorted(BINARIES))
def test_binary_input_is_refused_as_unsupported_content(
    tmp_path: Path, daemons: list[DaemonProc], kind: str
) -> None:
    d = _daemon(daemons, tmp_path).start()
    data = BINARIES[kind]()
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    for flag in ("--html", "--text"):
        out = run_cli(d, "capture", "--intent", "read it", flag, str(path), "--json")
        assert out.returncode == 1, out
        assert out.stderr.startswith(f"readdod: UNSUPPORTED_CONTENT: {path} looks like {kind}")
        error = json.loads(out.stdout)["error"]
        assert (error["code"], error["data"]["error_code"]) == (415, "UNSUPPORTED_CONTENT")
    with d.client() as c:
        # However a client turned the bytes into text.
        for decoded in (data.decode("utf-8", "replace"), data.decode("latin-1")):
            for field in ("html", "text"):
                params = {field: decoded, "intent": "read it", "url": URL}
                code, error_code, message = _refused(c, params)
                assert (code, error_code) == (415, "UNSUPPORTED_CONTENT")
                assert message.startswith(f"the {field} looks like {kind}"), message
    assert _count(d) == 0


def test_text_and_pages_in_other_encodings_are_not_binary(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path).start()
    page = tmp_path / "cp1251.html"
    page.write_bytes(
        '<html><head><meta charset="windows-1251"><title>Заметки</title></head>'
        "<body><p>Журнал упреждающей записи позволяет читать и писать одновременно.</p>"
        "</body></html>".encode("cp1251")
    )
    colours = tmp_path / "build.log"
    colours.write_text("\x1b[32mok\x1b[0m step one\n\tdone\f\n" * 50)
    for flag, path in (("--html", page), ("--text", colours)):
        out = run_cli(d, "capture", "--intent", "read it", flag, str(path))
        assert out.returncode == 0, out
    with d.db() as db:
        (html,) = db.execute("SELECT html FROM item_sources WHERE html IS NOT NULL").fetchone()
    assert "Журнал упреждающей записи" in html


# --- (d) half a line, then nothing ------------------------------------------------------------


def test_connections_that_send_half_a_line_and_stall_are_closed_after_read_timeout(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    connections = 8
    d = _daemon(
        daemons,
        tmp_path,
        control={"max_connections": connections + 1, "read_timeout_s": 0.5, "idle_timeout_s": 300},
    ).start()
    with d.client() as patient:
        # A client between requests is idle, not stalled: it keeps its connection.
        assert patient.call("ping")["version"]
        stalled = []
        for _ in range(connections):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.sock))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"pi')
            stalled.append(s)
        for s in stalled:
            with s:
                # Fails (times out) unless the daemon closes the connection.
                s.settimeout(20)
                assert s.recv(4096) == b""
        d.wait_log(lambda e: e["event"] == "control.read_timed_out", count=connections)
        assert all(
            e.get("read_timeout_s") == 0.5 for e in d.logs if e["event"] == "control.read_timed_out"
        )
        # Everyone else is served: the patient client and a new one.
        assert patient.call("ping")["version"]
        assert d.call("ping")["version"]
