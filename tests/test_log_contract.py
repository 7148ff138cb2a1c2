"""The log contract: schemas/log-event.schema.json names every event and its fields.

Two checks keep it honest: a scan of the source finds every event name the
code can emit (and the fields it passes) and compares them with the schema;
a full flow through the real daemon validates every line it writes. The scan
also maintains the schema: ``python -m tests.test_log_contract --write`` adds
events and fields found in the source, keeping what is already documented.

jsonschema is a test dependency because it is the reference implementation
of draft 2020-12 (``unevaluatedProperties`` through ``if``/``then``/``$ref``):
validating with our own reading of the schema would prove nothing.
"""

from __future__ import annotations

import ast
import http.server
import json
import re
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from readdod.runtime import logging as rlog
from tests.daemon_proc import DaemonProc

ROOT = Path(__file__).parent.parent
SCHEMA_PATH = ROOT / "schemas" / "log-event.schema.json"
SOURCE = ROOT / "readdod"

EVENT_NAME = re.compile(r"^[a-z][a-z_]*(\.[a-z][a-z_]*)+$")
LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "msg"}
# Calls whose first argument is an event name and second a dict of fields.
NOTE_CALLS = {"_Note", "note", "note_step"}

# Types for fields that mean the same thing in every event (DESIGN §8).
FIELD_TYPES: dict[str, dict[str, Any]] = {
    "item_id": {"type": "string", "description": "the item (ULID)"},
    "run_id": {"type": ["string", "null"], "description": "the run (ULID)"},
    "step": {"type": "string", "description": "pipeline step: extraction, summary, ..."},
    "attempt": {"type": "integer", "minimum": 1},
    "duration_ms": {"type": "number", "minimum": 0},
    "error_code": {"type": ["string", "null"], "description": "a stable code (errors.py)"},
    "error": {"type": "string", "description": "what went wrong, for people"},
    "worker_id": {"type": "string", "description": "host:pid:random of the daemon"},
    "from": {"type": "string"},
    "to": {"type": "string"},
    "trigger": {"type": "string", "enum": ["user", "system"]},
    "reason": {"type": ["string", "null"]},
    "message": {"type": ["string", "null"]},
    "pid": {"type": "integer"},
    "version": {"type": "string"},
    "path": {"type": "string"},
    "bytes": {"type": "integer", "minimum": 0},
    "pages": {"type": "integer", "minimum": 0},
    "count": {"type": "integer", "minimum": 0},
    "dry_run": {"type": "boolean"},
    "paused": {"type": "boolean"},
    "signal": {"type": "string"},
    "uptime_s": {"type": "number", "minimum": 0},
    "delay_s": {"type": "number", "minimum": 0},
    "source_type": {"type": "string", "enum": ["url", "html", "text"]},
    "api_key_env": {"type": "string", "description": "the variable's name, never its value"},
    "base_url": {"type": "string"},
    "kind": {"type": "string"},
    "problems": {"type": "array"},
    "done": {"type": "integer", "minimum": 0},
    "total": {"type": "integer", "minimum": 0},
    "circuit": {"type": "string"},
    "consecutive_failures": {"type": "integer", "minimum": 0},
    "probe_in_s": {"type": "number", "minimum": 0},
    "probe_s": {"type": "number", "minimum": 0},
    "send_timeout_s": {"type": "number"},
    "idle_timeout_s": {"type": "number"},
    "read_timeout_s": {"type": "number"},
    "max_connections": {"type": "integer"},
    "uid": {"type": ["integer", "null"]},
    "method": {"type": "string"},
    "grace_s": {"type": "number"},
    "in_flight": {"type": "integer", "minimum": 0},
    "socket": {"type": "string"},
    "config": {"type": ["string", "null"], "description": "the config file read, if any"},
    "overrides": {
        "type": "array",
        "items": {"type": "string"},
        "description": "READDOD_* variables applied",
    },
    "export_key": {"type": "string"},
    "files": {"type": "array", "items": {"type": "string"}},
    "reused": {"type": "boolean"},
    "failed": {"type": "integer", "minimum": 0},
    "requeued": {"type": "integer", "minimum": 0},
    "retry": {"type": "integer", "minimum": 0},
    "last_seq": {"type": "integer", "minimum": 0},
    "watchers": {"type": "integer", "minimum": 0},
}


# --- the scan ------------------------------------------------------------------


def _names(node: ast.AST | None, consts: dict[str, set[str]]) -> set[str]:
    """Event names an expression can take: literals, either branch of ``a if c else b``."""
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} if EVENT_NAME.match(node.value) else set()
    if isinstance(node, ast.IfExp):
        return _names(node.body, consts) | _names(node.orelse, consts)
    if isinstance(node, ast.Name):
        return consts.get(node.id, set())
    return set()


def _dict_keys(node: ast.AST | None) -> set[str]:
    if isinstance(node, ast.Dict):
        return {
            k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        }
    return set()


def scan_source(root: Path = SOURCE) -> dict[str, set[str]]:
    """Every event name the code emits with a literal name, and the fields it passes."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        # Names assigned string event names (``event = "x.y"``) and bound loggers' fields.
        consts: dict[str, set[str]] = {}
        bound: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if not isinstance(target, ast.Name):
                    continue
                names = _names(node.value, {})
                if names:
                    consts.setdefault(target.id, set()).update(names)
                value = node.value
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Attribute)
                    and value.func.attr == "bind"
                ):
                    bound[target.id] = {k.arg for k in value.keywords if k.arg}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if isinstance(func, ast.Attribute) and name in LOG_METHODS:
                fields = {k.arg for k in node.keywords if k.arg}
                if isinstance(func.value, ast.Name):
                    fields |= bound.get(func.value.id, set())
                if name == "exception":
                    fields.add("exception")
            elif name in NOTE_CALLS:
                fields = _dict_keys(node.args[1] if len(node.args) > 1 else None)
            else:
                continue
            for event in _names(node.args[0], consts):
                found.setdefault(event, set()).update(fields)
    return found


# --- the schema ----------------------------------------------------------------


def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return schema


def schema_events(schema: dict[str, Any]) -> dict[str, set[str]]:
    events = schema["$defs"]["events"]
    return {name: set(spec.get("properties", {})) for name, spec in events.items()}


def update_schema(schema: dict[str, Any], found: dict[str, set[str]]) -> dict[str, Any]:
    """Add events and fields found in the source; keep everything already written."""
    common = set(schema["properties"])
    events = schema["$defs"]["events"]
    for event in sorted(found):
        spec = events.setdefault(
            event, {"description": "TODO: say when this is logged", "properties": {}}
        )
        for field in sorted(found[event] - common):
            if not spec["properties"].get(field):
                spec["properties"][field] = FIELD_TYPES.get(field, {})
    schema["$defs"]["events"] = dict(sorted(events.items()))
    names = sorted(schema["$defs"]["events"])
    schema["properties"]["event"]["enum"] = names
    schema["allOf"] = [
        {
            "if": {"properties": {"event": {"const": name}}, "required": ["event"]},
            "then": {"$ref": f"#/$defs/events/{name}"},
        }
        for name in names
    ]
    return schema


def validator() -> jsonschema.protocols.Validator:
    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    v: jsonschema.protocols.Validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return v


def test_the_schema_is_valid_and_self_consistent() -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    names = sorted(schema["$defs"]["events"])
    assert schema["properties"]["event"]["enum"] == names
    assert [b["if"]["properties"]["event"]["const"] for b in schema["allOf"]] == names
    for name, spec in schema["$defs"]["events"].items():
        assert spec.get("description") and "TODO" not in spec["description"], name


def test_every_event_in_the_source_is_in_the_schema() -> None:
    found = scan_source()
    assert len(found) > 20, "the scan must find the events the code emits"
    documented = schema_events(load_schema())
    common = set(load_schema()["properties"])
    missing = sorted(set(found) - set(documented))
    assert not missing, (
        f"events logged but not in {SCHEMA_PATH.name}: {missing};"
        " run `python -m tests.test_log_contract --write` and describe them"
    )
    undocumented = {
        e: sorted(fields - documented[e] - common)
        for e, fields in found.items()
        if fields - documented[e] - common
    }
    assert not undocumented, f"fields logged but not in the schema: {undocumented}"


def test_the_scan_sees_every_kind_of_call(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "log.info('a.one', x=1)\n"
        "bound = log.bind(item_id=1)\n"
        "bound.warning('a.two', y=2)\n"
        "notes.append(_Note('a.three' if p else 'a.four', {'z': 1}))\n"
        "event = 'a.five'\n"
        "log.exception(event)\n"
        "print('not.an_event')\n"
        "log.info('not an event')\n"
    )
    assert scan_source(tmp_path) == {
        "a.one": {"x"},
        "a.two": {"y", "item_id"},
        "a.three": {"z"},
        "a.four": {"z"},
        "a.five": {"exception"},
    }


def test_a_line_with_an_unknown_event_or_field_is_rejected() -> None:
    v = validator()
    good: dict[str, Any] = {
        "ts": "2026-01-01T00:00:00.000000Z",
        "level": "info",
        "event": "daemon.stopped",
        "logger_name": "readdod.daemon",
        "uptime_s": 1.5,
    }
    v.validate(good)
    assert not v.is_valid({**good, "event": "daemon.exploded"})
    assert not v.is_valid({**good, "surprise": 1})
    assert not v.is_valid({**good, "ts": "yesterday"})
    assert not v.is_valid({k: val for k, val in good.items() if k != "ts"})


# --- the real daemon ---------------------------------------------------------------

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database. "
    "With synchronous=FULL every commit is durable, even after a power loss."
)
PAGE = (
    "<html><head><title>WAL notes</title></head><body><article>"
    + "".join(f"<p>{p}</p>" for p in ARTICLE.split("\n\n"))
    + "</article></body></html>"
)
API_KEY = "sk-contract-0123456789abcdefSECRET"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.TOPSECRETSIG"
URL_PASSWORD = "hunter2pw"
URL_TOKEN = "tok3nQUERYsecret"


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/article"):
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
        else:
            body = b"gone"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def pages() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_full_flow_logs_only_documented_lines_and_no_secrets(tmp_path: Path, pages: str) -> None:
    d = DaemonProc(tmp_path, fetch={"allow_private": True})
    key_env = "READDOD_TEST_API_KEY"
    d.config.write_text(d.config.read_text() + f'[ai]\napi_key_env = "{key_env}"\n')
    try:
        d.start(env={key_env: API_KEY, "HTTP_AUTHORIZATION": BEARER})
        ok = d.call("capture", {"url": f"http://{pages}/article", "intent": "learn WAL"})
        d.call("capture", {"html": PAGE, "intent": "learn checkpoints"})
        d.call("capture", {"text": ARTICLE, "intent": "learn durability"})
        secret_url = f"http://reader:{URL_PASSWORD}@{pages}/missing?access_token={URL_TOKEN}"
        bad = d.call("capture", {"url": secret_url, "intent": f"Authorization: {BEARER}"})
        d.wait_status("READY", count=3)
        d.wait_status("FAILED_EXTRACTION", count=1)
        d.call("process", {"id": ok["item"]["id"], "regenerate": True})
        d.wait_status("READY", count=4)
        d.call("pause")
        d.call("resume")
        d.call("archive", {"id": bad["item"]["id"]})
        d.call("backup", {"path": str(tmp_path / "copy.db")})
        assert d.proc is not None
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log(lambda e: e["event"] == "log.reopened")
        assert d.stop() == 0
    finally:
        d.close()

    v = validator()
    problems = []
    for line in d.logs:
        errors = sorted(v.iter_errors(line), key=lambda e: list(e.path))
        if errors:
            problems.append(f"{line.get('event')}: {errors[0].message}")
    assert not problems, "\n".join(sorted(set(problems)))
    seen = {line["event"] for line in d.logs}
    for event in (
        "daemon.starting",
        "recovery.done",
        "daemon.ready",
        "item.captured",
        "item.transition",
        "step.started",
        "step.finished",
        "daemon.paused",
        "daemon.resumed",
        "backup.done",
        "log.reopened",
        "daemon.signal",
        "daemon.stopped",
    ):
        assert event in seen, event
    assert any(line.get("error_code") for line in d.logs), "the failure was logged"

    text = json.dumps(d.logs) + d.stderr.decode(errors="replace")
    # The failing URL is in the failure message: logged, with its secrets blanked.
    assert "reader:[redacted]@" in text and "access_token=[redacted]" in text
    for secret in (API_KEY, BEARER.split()[1], URL_PASSWORD, URL_TOKEN):
        assert secret not in text, f"a secret reached the logs: {secret[:6]}..."


def _file_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_file(path: Path, event: str, timeout: float = 30) -> list[dict[str, Any]]:
    """Wait until ``event`` is in the log file (the daemon writes it; we only read)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = _file_events(path)
        if any(e["event"] == event for e in lines):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"{event} not in {path}: {lines[-5:]}")
        time.sleep(0.02)


def test_log_file_is_reopened_on_sighup(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "readdod.log"
    d = DaemonProc(tmp_path, log={"file": str(log_file)})
    try:
        d.start(wait=False)
        _wait_file(log_file, "daemon.ready")
        assert d.logs == [], "with log.file nothing goes to stdout"
        rotated = log_file.with_name("readdod.log.1")
        log_file.rename(rotated)  # what logrotate does
        d.call("capture", {"text": ARTICLE, "intent": "before the signal"})
        _wait_file(rotated, "item.captured")
        assert d.proc is not None
        d.proc.send_signal(signal.SIGHUP)
        fresh = _wait_file(log_file, "log.reopened")
        assert fresh[0]["event"] == "log.reopened" and fresh[0]["file"] == str(log_file)
        d.call("capture", {"text": ARTICLE, "intent": "after the signal"})
        _wait_file(log_file, "item.captured")
        assert d.stop() == 0
    finally:
        d.close()
    old = _file_events(rotated)
    assert "log.reopened" not in {e["event"] for e in old}
    assert sum(e["event"] == "item.captured" for e in old) == 1
    new = _file_events(log_file)
    assert {"item.captured", "daemon.stopped"} <= {e["event"] for e in new}
    v = validator()
    for line in old + new:
        v.validate(line)


def test_console_format_is_for_people() -> None:
    out = StringIO()
    try:
        rlog.configure("info", out, fmt="console")
        rlog.get_logger("readdod.test").info(
            "item.captured", item_id="01ABC", source_type="text", api_key="sk-nope-12345678"
        )
    finally:
        rlog.configure("info")
    line = out.getvalue().strip()
    assert not line.startswith("{")
    assert "item.captured" in line and "item_id=01ABC" in line and "[info" in line
    assert "sk-nope" not in line


def test_lines_of_one_turn_of_the_loop_are_written_together_in_order() -> None:
    """On the loop a line waits for the end of its turn; off it, it is written at once."""
    import asyncio

    out = StringIO()
    log = rlog.get_logger("readdod.test")
    seen: list[str] = []

    async def turn() -> None:
        for i in range(3):
            log.info("item.captured", item_id=f"i{i}")
        seen.append(out.getvalue())  # still this turn: nothing written yet
        await asyncio.sleep(0)
        seen.append(out.getvalue())
        thread = threading.Thread(target=lambda: log.info("item.captured", item_id="t"))
        thread.start()
        thread.join()
        seen.append(out.getvalue())

    try:
        rlog.configure("info", out)
        asyncio.run(turn())
    finally:
        rlog.configure("info")
    assert seen[0] == ""
    assert [json.loads(x)["item_id"] for x in seen[1].splitlines()] == ["i0", "i1", "i2"]
    assert [json.loads(x)["item_id"] for x in seen[2].splitlines()] == ["i0", "i1", "i2", "t"]


def main() -> int:
    """Add events and fields found in the source to the schema file."""
    if "--write" not in sys.argv:
        found = scan_source()
        documented = schema_events(load_schema())
        for event in sorted(set(found) - set(documented)):
            print(f"missing: {event} {sorted(found[event])}")
        return 0
    schema = update_schema(load_schema(), scan_source())
    SCHEMA_PATH.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def test_a_line_is_what_the_configured_processor_renders() -> None:
    """Loggers skip structlog's generic chain and call the renderer's steps themselves:
    the line must be the one the processor makes, fields, order, scrubbing and all."""
    out = StringIO()
    fields: dict[str, Any] = {
        "url": "https://bob:hunter2@example.test/x?api_key=abc",
        "token": "t0k3n",
        "count": 3,
        "ratio": 1.5,
        "gone": None,
        "nested": {"password": "p", "list": ["Bearer abcdef", 2]},
        "error": ValueError("failed with sk-abcdefghijklmnop"),
    }
    with rlog.redirected("info", out):
        log = rlog.get_logger("readdod.test").bind(item_id="01ABC", run_id="01RUN")
        log.debug("item.captured", count=1)  # below the level: dropped
        log.info("item.captured", **fields)
        log.warning("item.captured", level="spoofed", ts="spoofed")
        log.info("item.captured", level="spoofed", ts="spoofed")
    quiet = StringIO()
    with rlog.redirected("warning", quiet):
        log.info("item.captured")  # below the level: dropped
        log.warning("item.captured")
    assert [json.loads(line)["level"] for line in quiet.getvalue().splitlines()] == ["warning"]
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    expected = json.loads(
        rlog._render(
            None,
            "info",
            {
                "logger_name": "readdod.test",
                "item_id": "01ABC",
                "run_id": "01RUN",
                **fields,
                "event": "item.captured",
            },
        )
    )
    assert len(lines) == 3
    assert lines[0].pop("ts") and expected.pop("ts")
    assert list(lines[0].items()) == list(expected.items())
    assert "hunter2" not in str(lines) and "t0k3n" not in str(lines) and "sk-abc" not in str(lines)
    assert lines[1]["level"] == "warning" and lines[1]["ts"] != "spoofed"
    assert lines[2]["level"] == "info" and lines[2]["ts"] != "spoofed"
