"""The real daemon as a subprocess, over its real socket, on a real SQLite file."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from readdod.cli import render_card
from readdod.control.client import Client, RpcError
from tests.daemon_proc import DaemonProc, run_cli

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database. "
    "With synchronous=FULL every commit is durable, even after a power loss.\n\n"
    "Group commit batches many small transactions into one fsync, which keeps "
    "throughput high while every acknowledged write stays durable."
)


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _err(exc: pytest.ExceptionInfo[RpcError]) -> tuple[int, str, dict[str, Any]]:
    return exc.value.rpc_code, exc.value.error_code, exc.value.data


def test_new_user_flow_through_the_cli(
    tmp_path: Path, daemons: list[DaemonProc], store_sections: dict[str, dict[str, Any]]
) -> None:
    d = _daemon(daemons, tmp_path, **store_sections).start()
    src = tmp_path / "article.txt"
    src.write_text(ARTICLE)

    out = run_cli(
        d, "capture", "--text", str(src), "--intent", "learn how WAL mode works", "--wait"
    )
    assert out.returncode == 0, out.stderr
    assert "Todos:" in out.stdout and "[ ]" in out.stdout

    listed = run_cli(d, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    items = __import__("json").loads(listed.stdout)["items"]
    assert len(items) == 1 and items[0]["status"] == "READY"
    item_id = items[0]["id"]

    shown = run_cli(d, "show", item_id, "--history")
    assert (
        shown.returncode == 0 and "READY" in shown.stdout and "QUEUED -> PROCESSING" in shown.stdout
    )

    # HTML capture from stdin: extraction runs, no network needed.
    html = (
        "<html><head><title>Notes | Blog</title></head><body><nav>Home About</nav>"
        + "".join(f"<article><p>{p}</p></article>" for p in ARTICLE.split("\n\n"))
        + "</body></html>"
    )
    out = run_cli(
        d,
        "capture",
        "https://blog.example.org/wal",
        "--html",
        "-",
        "--intent",
        "decide on WAL",
        "--wait",
        "--json",
        stdin=html,
    )
    assert out.returncode == 0, out.stderr

    # Text given where a file name belongs: a short, helpful error, not the text echoed back.
    pasted = run_cli(d, "capture", "--text", ARTICLE, "--intent", "learn")
    assert pasted.returncode == 1
    assert "take a file name, or - for standard input" in pasted.stderr
    assert len(pasted.stderr) < 400

    assert run_cli(d, "ship", item_id).returncode == 0
    assert run_cli(d, "archive", item_id).returncode == 0
    un = run_cli(d, "unarchive", item_id, "--json")
    assert un.returncode == 0 and '"READY"' in un.stdout  # a complete run exists

    regen = run_cli(d, "process", item_id, "--regenerate", "--json")
    assert regen.returncode == 0, regen.stderr
    d.wait_status("READY", count=4)  # text item, html item, unarchive, regenerate
    got = d.call("get", {"id": item_id})
    assert got["item"]["status"] == "READY"
    assert [r["status"] for r in got["runs"]] == ["succeeded", "succeeded"]
    new_run = got["runs"][1]["run_id"]
    for kind in ("summary", "score", "todos", "card"):
        art = got["artifacts"][kind]
        assert art["version"] == 2 and art["meta"]["run_id"] == new_run
    # The regenerate reused the extraction instead of making a second one.
    assert got["artifacts"]["extraction"]["version"] == 1

    assert d.stop() == 0


def test_refused_transitions_answer_409(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, daemon={"auto_process": False}, ai={"engine": "fixed"}).start()
    with d.client() as c:
        captured = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        assert c.call("get", {"id": captured})["item"]["status"] == "CAPTURED"

        empty_page = "<html><body><nav><a href='/'>Home</a></nav></body></html>"
        failing = c.call("capture", {"html": empty_page, "intent": "x"})["item"]["id"]
        ready = c.call("capture", {"text": ARTICLE, "intent": "y"})["item"]["id"]
        shipped = c.call("capture", {"text": ARTICLE, "intent": "z"})["item"]["id"]
        archived = c.call("capture", {"text": ARTICLE, "intent": "w"})["item"]["id"]
        for i in (failing, ready, shipped, archived):
            c.call("process", {"id": i})
        d.wait_status("READY", count=3)
        d.wait_status("FAILED_EXTRACTION", count=1)
        c.call("ship", {"id": shipped})
        c.call("archive", {"id": archived})
        c.call("pause")
        queued = c.call("capture", {"text": ARTICLE, "intent": "q"})["item"]["id"]
        c.call("process", {"id": queued})

        fail = c.call("get", {"id": failing})["item"]
        assert fail["status"] == "FAILED_EXTRACTION"
        assert fail["failure"]["error_code"] == "EXTRACTION_EMPTY"
        assert fail["failure"]["failed_step"] == "extract"

        refused: list[tuple[str, str, dict[str, Any], str, str]] = [
            (captured, "ship", {}, "CAPTURED", "SHIPPED"),
            (captured, "unarchive", {}, "CAPTURED", "READY"),
            (queued, "ship", {}, "QUEUED", "SHIPPED"),
            (queued, "process", {}, "QUEUED", "QUEUED"),
            (ready, "unarchive", {}, "READY", "READY"),
            (ready, "process", {}, "READY", "QUEUED"),
            (shipped, "process", {}, "SHIPPED", "QUEUED"),
            (shipped, "unarchive", {}, "SHIPPED", "READY"),
            (archived, "archive", {}, "ARCHIVED", "ARCHIVED"),
            (archived, "ship", {}, "ARCHIVED", "SHIPPED"),
            (failing, "ship", {}, "FAILED_EXTRACTION", "SHIPPED"),
            (failing, "unarchive", {}, "FAILED_EXTRACTION", "READY"),
        ]
        for item_id, method, extra, src, dst in refused:
            with pytest.raises(RpcError) as exc:
                c.call(method, {"id": item_id, **extra})
            code, error_code, data = _err(exc)
            assert (code, error_code) == (409, "INVALID_TRANSITION"), (method, src)
            assert data["from"] == src and data["to"] == dst and data["status"] == 409
            assert c.call("get", {"id": item_id})["item"]["status"] == src  # nothing changed

        with pytest.raises(RpcError) as exc:
            c.call("ship", {"id": "01NOTANITEM"})
        assert _err(exc)[:2] == (404, "NOT_FOUND")

        # Allowed moves from the same states still work.
        assert c.call("archive", {"id": failing})["item"]["archive_reason"] == "FAILURE_ARCHIVE"
        assert c.call("archive", {"id": captured})["item"]["status"] == "ARCHIVED"
    assert d.stop() == 0


def test_processing_item_is_busy_and_sigterm_requeues(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(
        daemons,
        tmp_path,
        daemon={"concurrency": 1, "shutdown_grace_s": 0.2},
        ai={"engine": "fixed", "fixed_delay_ms": 600_000},
    ).start()
    with d.client() as c:
        item_id = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        d.wait_status("PROCESSING", count=1)
        for method, dst in [
            ("archive", "ARCHIVED"),
            ("process", "QUEUED"),
            ("ship", "SHIPPED"),
            ("unarchive", "READY"),
        ]:
            with pytest.raises(RpcError) as exc:
                c.call(method, {"id": item_id})
            code, error_code, data = _err(exc)
            assert (code, error_code) == (409, "PROCESSING_IN_PROGRESS"), method
            assert data["from"] == "PROCESSING" and data["to"] == dst
    started = time.monotonic()
    assert d.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 20
    with d.db() as db:
        status, owner = db.execute("SELECT status, lease_owner FROM items").fetchone()
        run_status = db.execute("SELECT status FROM runs").fetchone()[0]
        reasons = [
            r[0]
            for r in db.execute(
                "SELECT json_extract(detail, '$.reason') FROM events WHERE to_status = 'QUEUED'"
            )
        ]
    assert (status, owner, run_status) == ("QUEUED", None, "queued")
    assert "shutdown" in reasons


def test_second_daemon_on_the_same_database_exits_at_once(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    first = _daemon(daemons, tmp_path).start()
    second = _daemon(daemons, tmp_path)
    second.start(wait=False)
    assert second.proc is not None
    code = second.proc.wait(timeout=30)
    for t in second._threads:
        t.join(timeout=10)
    assert code == 3
    assert b"another readdod daemon is already running" in second.stderr
    assert first.proc is not None and first.call("ping")["pid"] == first.proc.pid
    assert first.stop() == 0


def test_bad_lines_get_errors_and_the_connection_survives(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    import json

    d = _daemon(daemons, tmp_path, daemon={"auto_process": False}).start()
    with Client(d.sock) as c:

        def send(raw: bytes) -> Any:
            c.send_raw(raw)
            return json.loads(c.read_raw())

        assert send(b"{not json\n")["error"]["code"] == -32700
        assert send(b"[]\n")["error"]["code"] == -32600
        assert send(b'"hello"\n')["error"]["code"] == -32600
        assert send(b'{"jsonrpc":"1.0","id":1,"method":"ping"}\n')["error"]["code"] == -32600
        r = send(b'{"jsonrpc":"2.0","id":7,"method":"nope"}\n')
        assert r["error"]["code"] == -32601 and r["id"] == 7
        r = send(b'{"jsonrpc":"2.0","id":8,"method":"capture","params":{"intent":5}}\n')
        assert r["error"]["code"] == -32602 and r["id"] == 8
        r = send(b'{"jsonrpc":"2.0","id":9,"method":"capture","params":{"intent":"x","bogus":1}}\n')
        assert r["error"]["code"] == -32602
        r = send(b'{"jsonrpc":"2.0","id":14,"method":"get","params":["X"]}\n')
        assert r["error"]["code"] == -32602 and "object" in r["error"]["message"]
        long_intent = b'{"jsonrpc":"2.0","id":15,"method":"capture","params":{"text":"t","intent":"'
        r = send(long_intent + b"i" * 5000 + b'"}}\n')
        assert r["error"]["code"] == -32602 and "intent" in r["error"]["message"]
        r = send(b'{"jsonrpc":"2.0","id":10,"method":"capture","params":{"intent":"x"}}\n')
        assert r["error"]["code"] == 422 and r["error"]["data"]["error_code"] == "VALIDATION_ERROR"
        r = send(
            b'{"jsonrpc":"2.0","id":11,"method":"capture","params":{"intent":"x","url":"ftp://a"}}\n'
        )
        assert r["error"]["data"]["error_code"] == "VALIDATION_ERROR"
        r = send(b'{"jsonrpc":"2.0","id":12,"method":"get","params":{"id":"X"}}\n')
        assert r["error"]["code"] == 404 and r["error"]["data"]["error_code"] == "NOT_FOUND"
        r = send(b"[" * 100_000 + b"\n")
        assert r["error"]["code"] == -32700
        r = send(b'{"jsonrpc":"2.0","id":99999999999999999999999999,"method":"ping"}\n')
        assert "error" in r or "result" in r
        # A line over 1 MiB is skipped with 413; the connection stays usable. (Only a
        # capture's line may be longer: it carries a page of up to fetch.max_bytes.)
        r = send(
            b'{"jsonrpc":"2.0","id":13,"method":"get","params":{"id":"'
            + b"a" * (1024 * 1024)
            + b'"}}\n'
        )
        assert r["error"]["code"] == 413
        assert r["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
        # A batch, with a notification that gets no answer.
        c.send_raw(
            b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"ping"}]\n'
        )
        batch = json.loads(c.read_raw())
        assert len(batch) == 1 and batch[0]["id"] == 1 and "result" in batch[0]
        assert c.call("ping")["version"]
    # Half a line, then a disconnect: the daemon does not notice beyond closing it.
    with Client(d.sock) as c:
        c.send_raw(b'{"jsonrpc":"2.0","id":1,"meth')
    assert d.call("ping")["paused"] is False
    assert d.stop() == 0


def test_pause_survives_restart(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, ai={"engine": "fixed"}).start()
    assert d.call("pause") == {"paused": True}
    assert d.stop() == 0
    d.start()
    assert d.call("ping")["paused"] is True
    item_id = d.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
    assert d.call("get", {"id": item_id})["item"]["status"] == "QUEUED"
    assert d.call("resume") == {"paused": False}
    d.wait_status("READY", count=1)
    assert d.stop() == 0


def test_capture_id_is_idempotent(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, daemon={"auto_process": False}).start()
    with d.client() as c:
        a = c.call("capture", {"text": ARTICLE, "intent": "x", "capture_id": "c-1"})
        b = c.call("capture", {"text": ARTICLE, "intent": "x", "capture_id": "c-1"})
        assert a["created"] is True and b["created"] is False
        assert a["item"]["id"] == b["item"]["id"]
        with pytest.raises(RpcError) as exc:
            c.call("capture", {"text": "other", "intent": "x", "capture_id": "c-1"})
        assert _err(exc)[:2] == (409, "IDEMPOTENCY_CONFLICT")
        assert len(c.call("list")["items"]) == 1
    assert d.stop() == 0


def test_cli_says_when_no_daemon_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "ls", "--socket", str(tmp_path / "none.sock")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 4
    assert "not running" in out.stderr and "readdod serve" in out.stderr


def test_url_capture_fetches_from_a_loopback_server(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    import http.server
    import threading

    page = (
        "<html><head><title>WAL notes - Example</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article><h1>WAL notes</h1>"
        + "".join(f"<p>{p}</p>" for p in ARTICLE.split("\n\n"))
        + "</article><footer>Copyright footer text</footer></body></html>"
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/gone":
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        d = _daemon(
            daemons, tmp_path, ai={"engine": "fixed"}, fetch={"allow_private": True}
        ).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with d.client() as c:
            ok = c.call("capture", {"url": f"{base}/post", "intent": "learn"})["item"]["id"]
            gone = c.call("capture", {"url": f"{base}/gone", "intent": "learn"})["item"]["id"]
            d.wait_status("READY", count=1)
            d.wait_status("FAILED_EXTRACTION", count=1)
            got = c.call("get", {"id": ok})
            assert got["item"]["title"] == "WAL notes"
            ext = got["artifacts"]["extraction"]["payload"]
            assert ext["source"] == "fetched" and ext["http_status"] == 200
            assert "Group commit" in ext["text"] and "Copyright" not in ext["text"]
            failure = c.call("get", {"id": gone})["item"]["failure"]
            assert failure["error_code"] == "EXTRACTION_FETCH_FAILED"
            assert "404" in failure["message"] and failure["retryable"] is False
        assert d.stop() == 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_demo_runs_offline_and_exits_zero() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "demo"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "4/4 cards READY" in out.stdout
    assert "daemon stopped (exit code 0)" in out.stdout
    assert out.stdout.count("Todos:") == 4


def test_serve_will_not_replace_a_file_at_the_socket_path(tmp_path: Path) -> None:
    d = DaemonProc(tmp_path)
    d.sock.write_text("precious")
    d.start(wait=False)
    assert d.proc is not None
    assert d.proc.wait(timeout=60) == 2
    d.close()
    assert b"is not a socket" in d.stderr
    assert d.sock.read_text() == "precious"


def test_systemd_notify_ready_after_recovery_and_stopping(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    import socket

    addr = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(addr))
        notify.settimeout(60)
        d = _daemon(daemons, tmp_path)
        d.start(env={"NOTIFY_SOCKET": str(addr)})
        assert notify.recv(4096) == b"READY=1"
        events = [e["event"] for e in d.logs]
        assert events.index("recovery.done") < events.index("daemon.ready")
        assert d.proc is not None
        d.proc.send_signal(signal.SIGTERM)
        message = notify.recv(4096)
        while message.startswith(b"STATUS="):  # progress lines may come in between
            message = notify.recv(4096)
        assert message == b"STOPPING=1"
        assert d.proc.wait(timeout=60) == 0


def test_running_out_of_file_descriptors_does_not_kill_the_daemon(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    import socket

    d = _daemon(daemons, tmp_path)
    d.start(max_open_files=64)
    held = []
    try:
        for _ in range(100):  # more clients than the daemon has descriptors
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.sock))
            held.append(s)
        d.wait_log(lambda e: e["event"] == "control.accept_failed")
    finally:
        for s in held:
            s.close()
    assert d.call("ping")["version"]
    assert d.stop() == 0


def test_a_card_without_a_page_title_is_headed_by_the_cards_title() -> None:
    item = {"id": "01ABC", "status": "READY", "intent": "learn", "title": None, "url": None}
    card = {
        "title": "Write-ahead logging",
        "priority": "P1",
        "match_score": 70,
        "one_liner": "o",
        "key_points": [],
        "todos": [],
        "source": {},
    }
    shown = render_card(item, {"card": {"payload": card}})
    assert shown.splitlines()[0] == "Write-ahead logging"
    assert render_card(item, {}).splitlines()[0] == "01ABC"
