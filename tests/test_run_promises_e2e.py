"""Smaller promises of seeds 002 and 004, through the real daemon and CLI.

- a run whose attempt ran out of time ends ``timeout`` (seed 002), not ``failed``;
- a succeeded attempt names the last step it reached;
- ``retry-failed`` puts a failed chunk back to ``pending`` at once (seed 004),
  not when a worker takes the item up;
- ``show`` tells who holds a PROCESSING item's lease, and until when.

(A killed worker's attempt ends ``cancelled``: tests/test_worker_lost.py. An
import's total counts the file's repeats: tests/test_import_state_e2e.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from readdod.engines import openai as oa
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config

CONTEXT_TOKENS = 1024
ARTICLE = "\n\n".join(
    " ".join(
        f"Paragraph {n} explains step {k} of tuning SQLite write-ahead logging in detail."
        for k in range(8)
    )
    for n in range(4)
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    # A hung request outlasts any test: only the client's timeout or a disconnect ends it.
    with FakeOpenAI(hang_s=120) as server:
        yield server


def daemon(
    daemons: list[DaemonProc],
    root: Path,
    fake: FakeOpenAI,
    store: dict[str, dict[str, Any]] | None = None,
    **ai: Any,
) -> DaemonProc:
    d = DaemonProc(
        root,
        ai=ai_config(fake.base_url, context_tokens=CONTEXT_TOKENS, **ai),
        daemon={"skip_below": 0},
        **NO_AUTO_RETRY,
        **(store or {}),
    )
    daemons.append(d)
    return d.start()


def show(d: DaemonProc, item_id: str, *extra: str) -> dict[str, Any]:
    out = run_cli(d, "show", item_id, "--json", *extra)
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def wait_for(d: DaemonProc, item_id: str, *statuses: str) -> None:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in statuses
        )
    )


def test_a_run_that_timed_out_ends_timeout_and_a_succeeded_attempt_names_its_last_step(
    tmp_path: Path,
    fake: FakeOpenAI,
    daemons: list[DaemonProc],
    store_sections: dict[str, dict[str, Any]],
) -> None:
    d = daemon(daemons, tmp_path, fake, store_sections, attempts=1, timeout_s=0.5)
    slow = d.call("capture", {"text": ARTICLE, "intent": "tune WAL fake:hang@summary#slow"})
    slow_id = slow["item"]["id"]
    wait_for(d, slow_id, "FAILED_AI", "READY")
    got = show(d, slow_id)
    assert got["item"]["failure"]["error_code"] == "AI_TIMEOUT"
    assert [(r["status"], r["error_code"]) for r in got["runs"]] == [("timeout", "AI_TIMEOUT")]
    assert [(a["status"], a["last_step"]) for a in got["attempts"]] == [("timeout", "summarize")]

    ok_id = d.call("capture", {"text": ARTICLE, "intent": "tune WAL mode"})["item"]["id"]
    wait_for(d, ok_id, "READY", "FAILED_AI")
    got = show(d, ok_id)
    assert got["item"]["status"] == "READY"
    assert [(a["status"], a["first_step"], a["last_step"]) for a in got["attempts"]] == [
        ("succeeded", "extract", "card")
    ]
    human = run_cli(d, "show", ok_id)
    assert "extract -> card" in human.stdout, human.stdout
    assert d.stop() == 0


def test_retry_failed_puts_a_failed_chunk_back_to_pending_at_once(
    tmp_path: Path,
    fake: FakeOpenAI,
    daemons: list[DaemonProc],
    store_sections: dict[str, dict[str, Any]],
) -> None:
    text = (
        ARTICLE
        + "\n\n"
        + " ".join(
            f"Paragraph 4 holds the marker fake:500@summary_chunk#bad and step {k} of the tuning."
            for k in range(6)
        )
    )
    assert len(oa.split_paragraphs(text, max(CONTEXT_TOKENS - oa.RESERVED_TOKENS, 256))) == 5
    d = daemon(daemons, tmp_path, fake, store_sections, attempts=1)
    item_id = d.call("capture", {"text": text, "intent": "tune WAL mode"})["item"]["id"]
    wait_for(d, item_id, "FAILED_AI", "READY")
    before = show(d, item_id, "--chunks")
    assert before["item"]["status"] == "FAILED_AI"
    assert [c["status"] for c in before["chunk_list"]] == ["done"] * 4 + ["error"]
    # Paused, no worker takes the item: what the retry itself did is all there is to see.
    assert run_cli(d, "pause").returncode == 0
    out = run_cli(d, "retry-failed", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["requeued"] == [item_id]
    after = show(d, item_id, "--chunks")
    assert after["item"]["status"] == "QUEUED"
    assert [c["status"] for c in after["chunk_list"]] == ["done"] * 4 + ["pending"]
    # The chunk keeps what went wrong last time, for people to read.
    assert after["chunk_list"][4]["last_error_code"] == "AI_PROVIDER_ERROR"
    assert after["chunks"]["summary"]["error"] == 0
    assert d.stop() == 0


def test_show_tells_who_holds_a_processing_items_lease_and_until_when(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = daemon(daemons, tmp_path, fake, timeout_s=60.0)
    item_id = d.call("capture", {"text": ARTICLE, "intent": "tune WAL fake:hang@summary#held"})[
        "item"
    ]["id"]
    fake.wait_until(lambda f: f.in_flight >= 1)
    got = show(d, item_id)
    item = got["item"]
    assert item["status"] == "PROCESSING"
    claimed = next(
        e
        for e in d.logs
        if e["event"] == "item.transition"
        and e.get("item_id") == item_id
        and e["to"] == "PROCESSING"
    )
    assert item["lease_owner"] == claimed["worker_id"]
    until = datetime.fromisoformat(item["lease_expires_at"])
    assert until > datetime.fromisoformat(item["updated_at"])
    human = run_cli(d, "show", item_id)
    assert f"Being processed by {claimed['worker_id']}" in human.stdout, human.stdout
    # Once the item leaves PROCESSING, it shows no lease.
    assert run_cli(d, "archive", item_id, "--cancel").returncode == 0
    wait_for(d, item_id, "ARCHIVED")
    item = show(d, item_id)["item"]
    assert (item["lease_owner"], item["lease_expires_at"]) == (None, None)
    assert d.stop() == 0
