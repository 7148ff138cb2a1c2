"""The ``openai`` engine through the real daemon, against a fake model server on 127.0.0.1.

Every misbehaviour of a model server (429, 5xx, hangs, bad JSON, schema-invalid
JSON, refusals, being down) is asked of the fake by a directive in the item's
intent, so one daemon runs many items, each with its own trouble.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI, ai_config

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database. "
    "With synchronous=FULL every commit is durable, even after a power loss.\n\n"
    "Group commit batches many small transactions into one fsync, which keeps "
    "throughput high while every acknowledged write stays durable."
)
TERMINAL = ("READY", "FAILED_AI", "FAILED_EXTRACTION")
SECRET = "fk-live-7f3a9c1e5b2d4086aa"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def start(
    made: list[DaemonProc],
    root: Path,
    ai: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    **sections: dict[str, Any],
) -> DaemonProc:
    d = DaemonProc(root, ai=ai, daemon={"skip_below": 0}, **sections)
    made.append(d)
    return d.start(env=env)


def capture(d: DaemonProc, intent: str, text: str = ARTICLE) -> str:
    return str(d.call("capture", {"text": text, "intent": intent})["item"]["id"])


def wait_done(d: DaemonProc, item_id: str, timeout: float = 60) -> dict[str, Any]:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in TERMINAL
        ),
        timeout=timeout,
    )
    got: dict[str, Any] = d.call("get", {"id": item_id, "history": True})
    return got


def first_outcome(d: DaemonProc, item_id: str) -> tuple[str, str | None, int]:
    """(status, error code, in-step retries) of the item's first run, from the log."""
    retries = 0
    code = None
    for e in d.logs:
        if e.get("item_id") != item_id:
            continue
        if e["event"] == "step.retrying":
            retries += 1
        elif e["event"] == "step.failed":
            code = e["error_code"]
        elif e["event"] == "item.transition" and e["to"] in TERMINAL:
            return e["to"], code, retries
    raise AssertionError(f"item {item_id} never finished")


def current_run(got: dict[str, Any]) -> dict[str, Any]:
    run_id = got["item"]["current_run_id"]
    run: dict[str, Any] = next(r for r in got["runs"] if r["run_id"] == run_id)
    return run


def test_items_become_ready_with_provenance_and_the_key_stays_secret(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(
        daemons,
        tmp_path,
        ai_config(fake.base_url, model_card="fake-tiny", profile="research"),
        env={"FAKE_LLM_KEY": SECRET},
    )
    item = capture(d, "learn how WAL mode works")
    got = wait_done(d, item)
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    arts = got["artifacts"]
    summary = arts["summary"]
    assert summary["meta"]["engine"] == "openai"
    assert summary["meta"]["model"] == "fake-small"
    assert summary["meta"]["template_version"] == "summary.research.v3"
    assert summary["meta"]["prompt_tokens"] > 0 and summary["meta"]["completion_tokens"] > 0
    assert summary["meta"]["latency_ms"] >= 0
    assert arts["card"]["meta"]["model"] == "fake-tiny"
    assert summary["payload"]["tl_dr"] in ARTICLE
    assert arts["card"]["payload"]["todos"] == arts["todos"]["payload"]["items"]
    # The steps after the summary share its prompt's prefix, which the server's cache serves.
    assert arts["score"]["meta"]["cached_tokens"] > 0
    run = current_run(got)
    assert run["cached_tokens"] == sum(a["meta"].get("cached_tokens", 0) for a in arts.values())
    assert run["prompt_tokens"] > run["cached_tokens"] > 0

    sent = fake.steps()
    assert {r["body"]["model"] for r in sent} == {"fake-small", "fake-tiny"}
    assert all(r["headers"].get("authorization") == f"Bearer {SECRET}" for r in sent)
    assert all(r["body"]["response_format"]["type"] == "json_schema" for r in sent)
    assert d.stop() == 0
    logs = json.dumps(d.logs) + d.stderr.decode(errors="replace")
    assert SECRET not in logs
    assert SECRET.encode() not in d.db_path.read_bytes()


def test_every_kind_of_server_trouble_ends_in_the_right_state(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, ai_config(fake.base_url), **NO_AUTO_RETRY)
    cases = {
        # intent directive: (status, error code, in-step retries of the run)
        "fake:429x2@summary#a": ("READY", None, 2),
        "fake:503x1@score#b fake:500x1@todos#b": ("READY", None, 2),
        "fake:invalidx1@summary#f": ("READY", None, 0),
        "fake:hang@score#c": ("FAILED_AI", "AI_TIMEOUT", 2),
        "fake:badjson@todos#d": ("FAILED_AI", "AI_PARSE_ERROR", 0),
        "fake:invalid@score#e": ("FAILED_AI", "AI_SCHEMA_INVALID", 0),
        "fake:refuse@card_text#g": ("FAILED_AI", "AI_REFUSED", 0),
        "fake:500@summary#h": ("FAILED_AI", "AI_PROVIDER_ERROR", 2),
        "fake:429@summary#i": ("FAILED_AI", "AI_RATE_LIMITED", 2),
        "fake:garbage@todos#j": ("FAILED_AI", "AI_PROVIDER_ERROR", 2),
    }
    ids = {directive: capture(d, f"learn how WAL works {directive}") for directive in cases}
    for directive, (status, code, retries) in cases.items():
        wait_done(d, ids[directive])
        # Judge the first run's outcome from the log, in order.
        assert first_outcome(d, ids[directive]) == (status, code, retries), directive
        if status == "READY":
            run = current_run(d.call("get", {"id": ids[directive]}))
            assert run["retries"] == retries
            if retries:
                assert run["last_error_code"] in ("AI_RATE_LIMITED", "AI_PROVIDER_ERROR")
    failed = d.call("get", {"id": ids["fake:hang@score#c"]})
    assert failed["item"]["failure"]["failed_step"] == "score"
    assert "ai.timeout_s" in failed["item"]["failure"]["message"]
    # The server's own words are in the failure, not only its status.
    crashed = d.call("get", {"id": ids["fake:500@summary#h"]})["item"]["failure"]
    assert 'failed (HTTP 500): "the model crashed"' in crashed["message"]
    # The repaired item's summary records the repair; 429s waited what Retry-After said.
    repaired = d.call("get", {"id": ids["fake:invalidx1@summary#f"]})["artifacts"]["summary"]
    assert repaired["meta"]["template_version"] == "summary.v3+repair.v1"
    assert repaired["meta"]["attempts"] == 2
    waits = [
        e["delay_s"]
        for e in d.logs
        if e["event"] == "step.retrying" and e["item_id"] == ids["fake:429x2@summary#a"]
    ]
    assert waits == [0.2, 0.2]
    repair_turns = [
        r["body"]["messages"]
        for r in fake.steps()
        if "fake:invalid@score#e" in r["body"]["messages"][1]["content"]
        and r["body"]["response_format"]["json_schema"]["name"] == "score"
    ]
    assert len(repair_turns) == 2 and "unknown field `unexpected`" in repair_turns[1][-1]["content"]
    # Nothing lost: every captured item is there, once, in a final state.
    listed = d.call("list", {"limit": 100})["items"]
    assert sorted(i["id"] for i in listed) == sorted(ids.values())
    assert all(i["status"] in TERMINAL for i in listed)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_outage_parks_items_until_it_is_back(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    server = FakeOpenAI(_free_port())  # not started: connections are refused
    d = start(
        daemons,
        tmp_path,
        ai_config(server.base_url, circuit_failures=2, attempts=3, circuit_probe_s=0.3),
    )
    try:
        ids = [capture(d, f"learn how WAL works #{n}") for n in range(3)]
        d.wait_log(lambda e: e["event"] == "circuit.opened")
        d.wait_log(lambda e: e["event"] == "step.waiting", count=3)
        health = d.call("health")
        assert health["checks"]["ai_circuit"]["value"] in ("open", "half_open")
        assert all(d.call("get", {"id": i})["item"]["status"] == "PROCESSING" for i in ids)
        d.wait_log(lambda e: e["event"] == "circuit.reopened")
        # A pause does not wait for the server: parked items go back to QUEUED at once.
        d.call("pause")
        d.wait_log(
            lambda e: (
                e["event"] == "item.transition"
                and e["to"] == "QUEUED"
                and e.get("reason") == "pause"
            ),
            count=3,
        )
        assert all(d.call("get", {"id": i})["item"]["status"] == "QUEUED" for i in ids)
        server.start()
        d.call("resume")
        for i in ids:
            assert wait_done(d, i)["item"]["status"] == "READY"
        d.wait_log(lambda e: e["event"] == "circuit.closed")
        assert d.call("health")["checks"]["ai_circuit"]["value"] == "closed"
        failed = [e for e in d.logs if e["event"] == "item.transition" and e["to"] == "FAILED_AI"]
        assert failed == []
    finally:
        server.stop()


def _long_text(paragraphs: int, marker_at: int, marker: str) -> str:
    out = []
    for n in range(paragraphs):
        body = " ".join(
            f"Paragraph {n} explains step {k} of tuning SQLite write-ahead logging in detail."
            for k in range(8)
        )
        if n == marker_at:
            body += f" {marker}"
        out.append(body)
    return "\n\n".join(out)


def _chunk_requests(fake: FakeOpenAI) -> int:
    return sum(
        r["body"]["response_format"]["json_schema"]["name"] == "summary_chunk" for r in fake.steps()
    )


def test_a_long_text_is_summarised_in_chunks_and_a_retry_redoes_only_the_failed_one(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, ai_config(fake.base_url, context_tokens=1024))
    marker = "fake:500x3@summary_chunk#k"
    item = capture(d, "tune WAL mode", _long_text(12, 5, marker))
    got = wait_done(d, item)
    assert got["item"]["status"] == "FAILED_AI"
    assert got["item"]["failure"]["error_code"] == "AI_PROVIDER_ERROR"
    progress = got["chunks"]["summary"]
    total = progress["total"]
    assert total >= 4 and progress["error"] == 1 and progress["done"] < total
    assert progress["retries"] == 2  # the failed chunk's in-step retries (ai.attempts = 3)
    before = _chunk_requests(fake)

    d.call("process", {"id": item})
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item and e["to"] == "READY"
        )
    )
    got = d.call("get", {"id": item})
    assert got["chunks"]["summary"]["done"] == total
    assert _chunk_requests(fake) - before == total - progress["done"]
    assert got["artifacts"]["summary"]["meta"]["template_version"] == (
        "summary_chunk.v2+summary_reduce.v3"
    )
    shown = subprocess.run(
        [sys.executable, "-m", "readdod", "show", item, "--socket", str(d.sock)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"Chunks (summary): {total}/{total} done" in shown.stdout, shown.stdout
    # Progress went out as events, for `watch` and the log.
    states = [
        (e["chunk"], e["state"])
        for e in d.logs
        if e["event"] == "chunk.progress" and e["item_id"] == item
    ]
    errored = [c for c, st in states if st == "error"]
    assert len(errored) == 1 and (errored[0], "retrying") in states and (0, "done") in states


def test_after_a_crash_between_chunks_only_the_unfinished_chunks_are_asked_again(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, ai=ai_config(fake.base_url, context_tokens=1024))
    daemons.append(d)
    d.start(env={"READDOD_CRASH_AT": "chunk:summary:1"})
    item = capture(d, "tune WAL mode", _long_text(12, -1, ""))
    assert d.proc is not None and d.proc.wait(timeout=60) == 86
    assert _chunk_requests(fake) == 2
    d.close()
    d.start()
    got = wait_done(d, item)
    assert got["item"]["status"] in ("READY", "ARCHIVED"), got["item"]["failure"]
    total = got["chunks"]["summary"]["total"]
    assert got["chunks"]["summary"]["done"] == total
    assert _chunk_requests(fake) == total  # chunks 0 and 1 were not asked again
    assert len(got["runs"]) == 1


def test_a_systemd_credential_holds_the_key_and_shutdown_closes_the_client(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "FAKE_LLM_KEY").write_text(SECRET + "\n")
    d = start(
        daemons, tmp_path, ai_config(fake.base_url), env={"CREDENTIALS_DIRECTORY": str(creds)}
    )
    assert wait_done(d, capture(d, "learn how WAL works"))["item"]["status"] == "READY"
    sent = fake.steps()
    assert sent and all(r["headers"]["authorization"] == f"Bearer {SECRET}" for r in sent)
    assert not [e for e in d.logs if e["event"] == "ai.no_api_key"]
    assert d.stop() == 0
    events = [e["event"] for e in d.logs]
    assert "ai.closed" in events and events.index("ai.closed") < events.index("daemon.stopped")
    assert SECRET not in json.dumps(d.logs) + d.stderr.decode(errors="replace")


def test_a_requests_per_minute_limit_holds_requests_back_and_a_pause_releases_them(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, ai_config(fake.base_url, rpm=2))
    item = capture(d, "learn how WAL works")
    waiting = d.wait_log(
        lambda e: e["event"] == "step.waiting" and e.get("reason") == "rate_limit"
    )[0]
    # The summary and the score's judgements went out; its relevance question waits
    # for the minute to pass.
    assert waiting["item_id"] == item and waiting["step"] == "score"
    assert "ai.rpm" in waiting["message"]
    assert len(fake.completions()) == len(fake.steps()) == 2
    assert d.call("get", {"id": item})["item"]["status"] == "PROCESSING"
    d.call("pause")
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == item
            and e["to"] == "QUEUED"
            and e.get("reason") == "pause"
        ),
        timeout=10,
    )
    got = d.call("get", {"id": item})
    assert got["item"]["status"] == "QUEUED" and got["item"]["failure"] is None
    assert sorted(got["artifacts"]) == ["extraction", "summary"]
    assert len(fake.completions()) == 2
