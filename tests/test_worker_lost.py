"""WORKER_LOST is for an item that kills its worker, not for one that gets further.

Through the real daemon, killed with kill -9 again and again while a long
text's chunks finish one by one against a slow fake model server: each start
makes progress, so the crash count starts again and the item ends READY. An
item that did fail WORKER_LOST is queued again by itself once the daemon has
run cleanly for ``[retry] worker_lost`` seconds, within the policy's attempts
(the clean run is measured on an injected clock, in process, on a real
SQLite file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.core import Core
from readdod.engines import openai as oa
from readdod.items.models import CaptureRequest
from readdod.runtime.clock import ManualClock, iso
from readdod.settings.config import RetryConfig, RetryRule
from readdod.steps import decode_failure
from readdod.store import SqliteStore
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI, ai_config

CONTEXT_TOKENS = 1024
PARAGRAPHS = 10
MAX_ORPHANINGS = 3


@pytest.fixture
def slow_fake() -> Iterator[FakeOpenAI]:
    # Every answer takes a while, as a small local model's does: a kill lands between chunks.
    with FakeOpenAI(delay_s=0.4) as server:
        yield server


def long_text() -> str:
    """Ten paragraphs, one chunk each at the daemon's context size."""
    text = "\n\n".join(
        " ".join(
            f"Paragraph {n} explains step {k} of tuning SQLite write-ahead logging in detail."
            for k in range(8)
        )
        for n in range(PARAGRAPHS)
    )
    chunks = oa.split_paragraphs(text, max(CONTEXT_TOKENS - oa.RESERVED_TOKENS, 256))
    assert len(chunks) == PARAGRAPHS, "the test expects one chunk per paragraph"
    return text


def chunks_done(d: DaemonProc, item_id: str) -> int:
    return sum(
        1
        for e in d.logs
        if e["event"] == "chunk.progress" and e.get("item_id") == item_id and e["state"] == "done"
    )


def test_a_long_text_that_gets_further_at_every_start_is_never_worker_lost(
    tmp_path: Path,
    slow_fake: FakeOpenAI,
    daemons: list[DaemonProc],
    store_sections: dict[str, dict[str, Any]],
) -> None:
    d = DaemonProc(
        tmp_path,
        ai=ai_config(
            slow_fake.base_url, context_tokens=CONTEXT_TOKENS, concurrency=1, timeout_s=30.0
        ),
        daemon={"skip_below": 0, "max_orphanings": MAX_ORPHANINGS},
        **NO_AUTO_RETRY,
        **store_sections,
    )
    daemons.append(d)
    d.start()
    item_id = d.call("capture", {"text": long_text(), "intent": "tune WAL mode"})["item"]["id"]
    kills = 0
    # One more kill than the crash-loop limit, each after a chunk finished in that life.
    for _ in range(MAX_ORPHANINGS + 1):
        d.wait_log(
            lambda e: (
                e["event"] == "chunk.progress"
                and e.get("item_id") == item_id
                and e["state"] == "done"
            )
        )
        d.kill9()
        kills += 1
        d.start()
        rec = d.wait_log(lambda e: e["event"] == "recovery.done")[0]
        assert (rec["requeued"], rec["failed"]) == (1, 0), f"start after kill {kills}: {rec}"
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == item_id
            and e["to"] in ("READY", "FAILED_AI")
        ),
        timeout=120,
    )
    got = d.call("get", {"id": item_id, "include": ["chunks"]})
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    assert got["chunks"]["summary"]["done"] == PARAGRAPHS
    # The run was interrupted at every kill and resumed where it stopped.
    attempts = d.query(
        "SELECT status, error_code FROM attempts WHERE item_id = ? ORDER BY attempt_id",
        (item_id,),
    )
    assert attempts.count(("cancelled", "WORKER_LOST")) == kills
    assert attempts[-1] == ("succeeded", None)
    assert d.stop() == 0


def test_a_worker_lost_item_is_retried_by_itself_after_a_clean_start(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """Killed in its summary step at three starts, the item fails WORKER_LOST at the fourth;
    with ``[retry] worker_lost`` asking no wait, that daemon queues it again and it
    ends READY; once, as the policy says."""
    d = DaemonProc(
        tmp_path,
        daemon={"max_orphanings": MAX_ORPHANINGS},
        **{**NO_AUTO_RETRY, "retry.worker_lost": {"attempts": 1, "delays_s": [0.0]}},
    )
    daemons.append(d)
    crash = {"READDOD_CRASH_AT": "step:summary"}
    d.start(env=crash)
    text = "A page that kills the daemon.\n\n" + " ".join(
        f"Step {k} of tuning SQLite write-ahead logging keeps readers and writers apart."
        for k in range(12)
    )
    item_id = d.call("capture", {"text": text, "intent": "tune WAL mode"})["item"]["id"]
    for start in range(MAX_ORPHANINGS):
        assert d.proc is not None
        assert d.proc.wait(timeout=60) == 86, f"start {start + 1} should have crashed"
        d.close()
        d.start(env=crash if start + 1 < MAX_ORPHANINGS else None)
    rec = d.wait_log(lambda e: e["event"] == "recovery.done")[0]
    assert (rec["requeued"], rec["failed"]) == (0, 1)
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] == "READY"
        )
    )
    item = d.call("get", {"id": item_id})["item"]
    assert item["status"] == "READY"
    moves = d.query(
        "SELECT from_status, to_status, trigger FROM events WHERE item_id = ?"
        " AND kind = 'transition' ORDER BY seq",
        (item_id,),
    )
    assert ("FAILED_AI", "QUEUED", "system") in moves
    assert d.stop() == 0


@pytest.mark.anyio
async def test_worker_lost_waits_for_a_clean_run_counted_from_the_daemons_start(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    retry = RetryConfig(worker_lost=RetryRule(attempts=1, delays_s=(600.0,)))
    async with SqliteStore.open(tmp_path / "readdod.db") as store:
        core = Core(store, clock, max_orphanings=1, retry=retry)
        item, _ = await core.commands.capture(CaptureRequest(text="Body.", intent="x"))
        await core.leases.claim("w1", 10, 30_000)
        # The daemon dies; the next start recovers the lease: lost once, the limit.
        assert await core.leases.recover() == (0, 1)
        failed_at = clock.now_ms()
        row = await store.read(lambda tx: tx.item(item.id))
        assert row is not None and row.status == "FAILED_EXTRACTION"
        assert row.next_attempt_at == failed_at + 600_000
        # That daemon dies too; the next one starts 20 minutes after the failure: the
        # retry is due, but waits for this daemon's clean run.
        clock.advance(20 * 60_000)
        started = clock.now_ms()
        assert await core.commands.requeue_due(clean_since=started) == ([], started + 600_000)
        row = await store.read(lambda tx: tx.item(item.id))
        assert row is not None and row.failure is not None
        assert decode_failure(row.failure).next_attempt_at == iso(started + 600_000)
        clock.advance(599_999)
        assert (await core.commands.requeue_due(clean_since=started))[0] == []
        clock.advance(1)
        assert (await core.commands.requeue_due(clean_since=started))[0] == [item.id]
        # Within the policy: lost again, it is not retried a second time.
        await core.leases.claim("w2", 10, 30_000)
        assert await core.leases.recover() == (0, 1)
        row = await store.read(lambda tx: tx.item(item.id))
        assert row is not None and row.status == "FAILED_EXTRACTION" and row.next_attempt_at == 0
