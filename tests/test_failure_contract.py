"""Failures as the contract puts them on the wire (seed 000 §6.1, seed 001 §5).

``failure.failed_step`` is one of extract, summarize, score, todos, card,
export; ``retryable`` is decided once per error code; an item as ``get``
answers it matches ``schemas/item.schema.json``. The real daemon, a real
SQLite file and a clock moved by hand where time matters.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from readdod.control.client import RpcError
from readdod.core import Core, retry_policy
from readdod.errors import RETRYABLE, ErrorCode, ExportFailed, is_retryable
from readdod.export.writer import Exporter
from readdod.items.models import CaptureRequest
from readdod.runtime.clock import ManualClock, iso
from readdod.settings.config import RetryConfig, RetryRule
from readdod.steps import WIRE_STEPS, decode_failure, wire_step
from readdod.store import SqliteStore
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS
from tests.test_openai_e2e import ARTICLE

ROOT = Path(__file__).resolve().parent.parent
ITEM_SCHEMA = json.loads((ROOT / "schemas" / "item.schema.json").read_text())
EMPTY_PAGE = "<html><body><nav><a href='/'>Home</a></nav></body></html>"
TERMINAL = ("READY", "FAILED_AI", "FAILED_EXTRACTION")
DAY_MS = 24 * 3_600_000

# Every error code: (failure.retryable: True, False, or None when the error itself
# says, per cause), and the [retry] class that retries it by itself, if any.
DECISIONS: dict[ErrorCode, tuple[bool | None, str | None]] = {
    ErrorCode.NOT_FOUND: (False, None),
    ErrorCode.INVALID_TRANSITION: (False, None),
    ErrorCode.PROCESSING_IN_PROGRESS: (True, None),
    ErrorCode.VALIDATION_ERROR: (False, None),
    ErrorCode.IDEMPOTENCY_CONFLICT: (False, None),
    ErrorCode.PAYLOAD_TOO_LARGE: (False, None),
    ErrorCode.UNSUPPORTED_CONTENT: (False, None),
    ErrorCode.FORBIDDEN: (False, None),
    ErrorCode.SHUTTING_DOWN: (True, None),
    ErrorCode.TOO_MANY_CONNECTIONS: (True, None),
    # a network failure, or a 404 / a bad certificate / a redirect loop
    ErrorCode.EXTRACTION_FETCH_FAILED: (None, "network"),
    ErrorCode.EXTRACTION_PARSE_FAILED: (False, None),
    ErrorCode.EXTRACTION_EMPTY: (False, None),
    ErrorCode.EXTRACTION_TOO_LARGE: (False, None),
    ErrorCode.EXTRACTION_UNSUPPORTED_TYPE: (False, None),
    ErrorCode.EXTRACTION_BLOCKED_ADDRESS: (False, None),
    ErrorCode.EXTRACTION_BLOCKED_BY_SITE: (False, None),
    ErrorCode.AI_TIMEOUT: (True, "timeout"),
    # a new run asks the model again; the engine's own repair was already tried
    ErrorCode.AI_SCHEMA_INVALID: (True, "schema"),
    ErrorCode.AI_PARSE_ERROR: (True, "schema"),
    # a rate limit, or an account out of quota
    ErrorCode.AI_RATE_LIMITED: (None, "rate_limit"),
    # a server error or an unreachable server, or a refused API key / a missing model
    ErrorCode.AI_PROVIDER_ERROR: (None, "provider"),
    ErrorCode.AI_INPUT_EMPTY: (False, None),
    ErrorCode.AI_INPUT_TOO_SHORT: (False, None),
    ErrorCode.AI_REFUSED: (False, None),
    ErrorCode.RUN_INCONSISTENT: (True, None),
    # exporting again is the retry; nothing re-exports by itself
    ErrorCode.EXPORT_RENDER_FAILED: (True, None),
    ErrorCode.EXPORT_WRITE_FAILED: (True, None),
    # a person retries, or the daemon once it has run cleanly a while ([retry] worker_lost):
    # a worker lost again and again must not become a crash loop
    ErrorCode.WORKER_LOST: (True, "worker_lost"),
    ErrorCode.INTERNAL_ERROR: (True, None),
    ErrorCode.CONFIG_INVALID: (False, None),
    ErrorCode.INSTANCE_LOCKED: (False, None),
    ErrorCode.STORE_BUSY: (True, None),
    ErrorCode.STORE_WRITE_FAILED: (True, None),
    # the same request fails the same way: the message names pg_dump
    ErrorCode.BACKUP_UNSUPPORTED: (False, None),
    ErrorCode.DAEMON_UNAVAILABLE: (True, None),
    # another user's directory or daemon stays so until a person fixes it
    ErrorCode.SOCKET_UNSAFE: (False, None),
    # a refused login is refused again until a person fixes the password or the role
    ErrorCode.STORE_AUTH_FAILED: (False, None),
}


# --- the decisions ---------------------------------------------------------------


def test_every_error_code_has_a_retryable_decision() -> None:
    assert set(DECISIONS) == set(ErrorCode), "decide whether the new code is retryable"
    assert set(RETRYABLE) == set(ErrorCode)
    for code, (retryable, cls) in DECISIONS.items():
        assert RETRYABLE[code] is retryable, code
        assert retry_policy.failure_class(code) == cls, code
        if retryable is not None:
            assert is_retryable(code, True) is is_retryable(code, False) is retryable, code
        else:
            assert is_retryable(code, True) and not is_retryable(code, False), code


@pytest.mark.parametrize("code", [c for c, (_, cls) in DECISIONS.items() if cls is None])
def test_a_code_without_a_retry_class_is_never_retried_by_itself(code: ErrorCode) -> None:
    """Even retryable, and even with every rule generous: only a person retries it."""
    rule = RetryRule(attempts=100, delays_s=(1.0,))
    generous = RetryConfig(network=rule, timeout=rule, rate_limit=rule, provider=rule, schema=rule)
    for done in (0, 1, 50):
        assert retry_policy.next_delay_s(generous, code, True, done) is None


def test_a_failure_stored_with_an_internal_step_name_reads_with_the_wire_name() -> None:
    for stored, wire in [("extraction", "extract"), ("summary", "summarize"), ("gate", "card")]:
        raw = json.dumps(
            {"failed_step": stored, "error_code": "AI_TIMEOUT", "message": "m", "retryable": True}
        )
        assert decode_failure(raw).failed_step == wire
    with pytest.raises(msgspec.ValidationError):
        decode_failure(json.dumps({"failed_step": "nope", "error_code": "X", "message": "m"}))


def test_wire_step_names() -> None:
    assert {wire_step(s) for s in WIRE_STEPS} == {
        "extract",
        "summarize",
        "score",
        "todos",
        "card",
        "export",
    }
    assert [wire_step(s) for s in ("extraction", "summary", "gate", "extract", "summarize")] == [
        "extract",
        "summarize",
        "card",
        "extract",
        "summarize",
    ]
    with pytest.raises(KeyError):
        wire_step("nope")


# --- retryable but never requeued by itself (a real SQLite file, a hand-moved clock)


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock(), max_orphanings=3, exporter=Exporter(None))


def _clock(o: Core) -> ManualClock:
    assert isinstance(o.clock, ManualClock)
    return o.clock


@pytest.mark.anyio
async def test_a_lost_worker_is_retried_once_after_a_clean_run_but_not_a_crash_loop(
    orch: Core,
) -> None:
    item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    for _ in range(3):
        await orch.leases.claim("w", 1, 30_000)
        await orch.leases.recover()
    failed_at = _clock(orch).now_ms()
    failure = (await orch.reads.get(item.id))["item"].failure
    assert failure is not None and failure.error_code == "WORKER_LOST"
    assert failure.failed_step == "extract" and failure.retryable
    # [retry] worker_lost: once, after the daemon has run 600 s without dying.
    assert failure.next_attempt_at == iso(failed_at + 600_000)
    _clock(orch).advance(DAY_MS)
    assert await orch.commands.requeue_due(clean_since=failed_at) == ([item.id], None)
    # Lost again: still at the crash-loop limit, it fails at once, and is not retried again.
    await orch.leases.claim("w", 1, 30_000)
    await orch.leases.recover()
    failure = (await orch.reads.get(item.id))["item"].failure
    assert failure is not None and failure.next_attempt_at is None
    _clock(orch).advance(DAY_MS)
    assert await orch.commands.requeue_due(clean_since=failed_at) == ([], None)
    assert (await orch.reads.get(item.id))["item"].status == "FAILED_EXTRACTION"
    # A person's retry is the way forward.
    assert await orch.commands.retry_failed(step="extract") == [item.id]


@pytest.mark.anyio
async def test_a_failed_export_is_retryable_but_not_requeued(orch: Core, tmp_path: Path) -> None:
    item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    [c] = await orch.leases.claim("w", 1, 30_000)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS)]:
        await orch.book.put_artifact(c.lease, step, msgspec.json.encode(payload), META)
    await orch.book.put_artifact(c.lease, "card", msgspec.json.encode(CARD), META, finish=True)
    blocker = tmp_path / "notes"
    blocker.write_text("a file where a folder should be\n")
    with pytest.raises(ExportFailed):
        await orch.exports.export(item.id, out_dir=str(blocker / "cards"))
    failure = (await orch.reads.get(item.id))["item"].failure
    assert failure is not None and failure.error_code == "EXPORT_WRITE_FAILED"
    assert failure.failed_step == "export" and failure.retryable
    assert failure.next_attempt_at is None
    _clock(orch).advance(DAY_MS)
    assert await orch.commands.requeue_due() == ([], None)
    assert await orch.commands.retry_failed() == []
    assert (await orch.reads.get(item.id))["item"].status == "FAILED_EXPORT"


@pytest.mark.anyio
async def test_a_gate_failure_names_the_step_at_fault(orch: Core) -> None:
    item, _ = await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    [c] = await orch.leases.claim("w", 1, 30_000)
    for step, payload in [("summary", SUMMARY), ("todos", TODOS), ("card", CARD)]:
        await orch.book.put_artifact(c.lease, step, msgspec.json.encode(payload), META)
    failed = await orch.book.complete(c.lease)
    assert failed is not None and failed.failure is not None
    assert (failed.failure.error_code, failed.failure.failed_step) == ("RUN_INCONSISTENT", "score")
    assert failed.failure.retryable
    # Inside, the gate keeps its name: the event says where the run stopped.
    history = (await orch.reads.get(item.id, history=True))["events"]
    assert [e.detail["step"] for e in history if e.to_status == "FAILED_AI"] == ["gate"]


# --- through the real daemon -------------------------------------------------------


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    sections["daemon"] = {"skip_below": 0, **sections.get("daemon", {})}
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _wait_done(d: DaemonProc, item_id: str) -> None:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in TERMINAL
        ),
        timeout=60,
    )


def _valid_item(got: dict[str, Any]) -> dict[str, Any]:
    """The ``item`` of a ``get`` answer, checked against schemas/item.schema.json."""
    jsonschema.Draft202012Validator(ITEM_SCHEMA).validate(got["item"])
    item: dict[str, Any] = got["item"]
    return item


def test_get_answers_in_every_state_match_the_item_schema(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path).start()
    blocker = tmp_path / "notes"
    blocker.write_text("a file where a folder should be\n")
    with d.client() as c:

        def capture(**params: str) -> str:
            item_id = str(c.call("capture", {"intent": "decide on WAL", **params})["item"]["id"])
            _wait_done(d, item_id)
            return item_id

        ready, shipped, archived, failed_export = (capture(text=ARTICLE) for _ in range(4))
        no_text = capture(html=EMPTY_PAGE)
        too_short = capture(text="Too short to say anything.")
        c.call("ship", {"id": shipped})
        c.call("archive", {"id": archived})
        with pytest.raises(RpcError) as refused_export:
            c.call("export", {"id": failed_export, "out_dir": str(blocker / "cards")})
        assert refused_export.value.error_code == "EXPORT_WRITE_FAILED"
        assert refused_export.value.data["retryable"] is True

        seen = {}
        for item_id in (ready, shipped, archived, failed_export, no_text, too_short):
            item = _valid_item(c.call("get", {"id": item_id}))
            seen[item["status"]] = item
        assert set(seen) == {
            "READY",
            "SHIPPED",
            "ARCHIVED",
            "FAILED_EXPORT",
            "FAILED_EXTRACTION",
            "FAILED_AI",
        }
        assert seen["READY"]["failure"] is None
        # The contract's step names, and retryable as decided per code.
        failures = {
            status: (f["failed_step"], f["error_code"], f["retryable"], "next_attempt_at" in f)
            for status, item in seen.items()
            if (f := item["failure"]) is not None
        }
        assert failures == {
            "FAILED_EXTRACTION": ("extract", "EXTRACTION_EMPTY", False, False),
            "FAILED_AI": ("summarize", "AI_INPUT_TOO_SHORT", False, False),
            "FAILED_EXPORT": ("export", "EXPORT_WRITE_FAILED", True, False),
        }
        # The extraction artifact names the extraction contract it follows.
        meta = c.call("get", {"id": ready})["artifacts"]["extraction"]["meta"]
        assert meta["template_version"] == "extraction.v1"

        # `list` sends the same item objects.
        for item in c.call("list", {"limit": 50})["items"]:
            jsonschema.Draft202012Validator(ITEM_SCHEMA).validate(item)

    # retry-failed takes the wire names, and the older names still.
    def dry(step: str) -> list[str]:
        out = run_cli(d, "retry-failed", "--step", step, "--dry-run", "--json")
        assert out.returncode == 0, out.stderr
        return list(json.loads(out.stdout)["requeued"])

    assert dry("extract") == dry("extraction") == [no_text]
    assert dry("summarize") == dry("summary") == [too_short]
    assert dry("card") == dry("gate") == []
    refused = run_cli(d, "retry-failed", "--step", "export", "--dry-run")
    assert refused.returncode != 0 and "invalid choice" in refused.stderr
    assert d.stop() == 0

    # A failure stored before the contract's names (a database of an older
    # readdod) is answered with them too.
    legacy = {"failed_step": "summary", "error_code": "AI_TIMEOUT", "message": "m"}
    with closing(sqlite3.connect(d.db_path)) as db, db:
        db.execute(
            "UPDATE items SET failure = ? WHERE id = ?",
            (json.dumps({**legacy, "retryable": True}), too_short),
        )
    d.start()
    item = _valid_item(d.call("get", {"id": too_short}))
    assert item["failure"]["failed_step"] == "summarize"
    assert dry("summarize") == [too_short]
    assert d.stop() == 0


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_ai_failures_name_the_step_and_say_whether_a_retry_can_help(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai=ai_config(fake.base_url), **NO_AUTO_RETRY).start()
    cases = {
        # intent directive: (failed_step, error_code, retryable)
        "fake:500@summary#a": ("summarize", "AI_PROVIDER_ERROR", True),
        "fake:invalid@score#b": ("score", "AI_SCHEMA_INVALID", True),
        "fake:refuse@card_text#c": ("card", "AI_REFUSED", False),
    }
    with d.client() as c:
        ids = {
            directive: c.call("capture", {"text": ARTICLE, "intent": f"learn WAL {directive}"})[
                "item"
            ]["id"]
            for directive in cases
        }
        for directive, want in cases.items():
            _wait_done(d, ids[directive])
            item = _valid_item(c.call("get", {"id": ids[directive]}))
            failure = item["failure"]
            assert item["status"] == "FAILED_AI", directive
            assert (failure["failed_step"], failure["error_code"], failure["retryable"]) == want
            # Retries by themselves are off here: nothing is promised.
            assert "next_attempt_at" not in failure
    assert d.stop() == 0


def test_error_answers_say_whether_to_retry(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, daemon={"auto_process": False}).start()
    with d.client() as c:
        with pytest.raises(RpcError) as missing:
            c.call("get", {"id": "01HF7YAT184XS1ZEE4F2NW01JW"})
        assert (missing.value.error_code, missing.value.data["retryable"]) == ("NOT_FOUND", False)
        c.call("pause")
        item_id = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        with pytest.raises(RpcError) as wrong:
            c.call("ship", {"id": item_id})
        assert (wrong.value.error_code, wrong.value.data["retryable"]) == (
            "INVALID_TRANSITION",
            False,
        )
    assert d.stop() == 0
