"""Every token a model server reported is counted once: on the attempt that spent it, in
its run's totals, in the summary's meta and in the daemon's ``stats``, through pauses,
crashes, retries and pruning; checked against the fake OpenAI server's own count."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests import invariants
from tests.aging import DAY_MS, age_everything
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config
from tests.test_chunks_e2e import CONTEXT_TOKENS, TERMINAL, capture, chunk_requests, long_text

MARK = "tokmark"
#: The opening of the repair prompt: a second request inside one step.
REPAIR = "Your answer could not be used"
#: The requests that make the summary: the chunks' and the one over their notes.
SUMMARY = ("summary_chunk", "summary")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(hang_s=120) as server:
        yield server


def start(made: list[DaemonProc], root: Path, fake: FakeOpenAI, **daemon: Any) -> DaemonProc:
    d = DaemonProc(
        root,
        ai=ai_config(fake.base_url, context_tokens=CONTEXT_TOKENS, timeout_s=60.0),
        daemon={"skip_below": 0, "shutdown_grace_s": 0.2, **daemon},
        # `prune` below is the one that prunes, not the daemon's own at start.
        retention={"enabled": False},
        **NO_AUTO_RETRY,
    )
    made.append(d)
    return d.start()


def finished(d: DaemonProc, item_id: str, count: int = 1) -> dict[str, Any]:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in TERMINAL
        ),
        count=count,
    )
    got: dict[str, Any] = d.call("get", {"id": item_id})
    return got


def run_tokens(got: dict[str, Any]) -> tuple[int, int]:
    return (
        sum(r["prompt_tokens"] for r in got["runs"]),
        sum(r["completion_tokens"] for r in got["runs"]),
    )


def attempt_tokens(got: dict[str, Any]) -> tuple[int, int]:
    attempts = got["attempts"]
    return (
        sum(a["prompt_tokens"] for a in attempts),
        sum(a["completion_tokens"] for a in attempts),
    )


def stats_tokens(d: DaemonProc) -> tuple[int, int]:
    tokens = d.call("stats")["tokens"]
    return tokens["prompt"], tokens["completion"]


def asked(fake: FakeOpenAI, needle: str) -> int:
    """Requests whose messages hold ``needle``."""
    return sum(
        any(needle in str(m.get("content")) for m in r["body"].get("messages") or [])
        for r in fake.completions()
    )


def check_counted(d: DaemonProc, fake: FakeOpenAI, got: dict[str, Any], mark: str) -> None:
    """The item's runs and attempts count what the server reported for it, the daemon's
    totals all it reported, and the summary's meta all of its chunks, whichever attempt
    of the run asked them."""
    reported = fake.tokens_reported(mark)
    print(
        f"{mark}: server reported {reported}, runs {run_tokens(got)},"
        f" attempts {attempt_tokens(got)}; daemon {stats_tokens(d)},"
        f" server in all {fake.tokens_reported()}"
    )
    assert reported[0] > 0
    assert run_tokens(got) == reported
    assert attempt_tokens(got) == reported
    assert stats_tokens(d) == fake.tokens_reported()
    summary = got["artifacts"]["summary"]["meta"]
    if len(got["runs"]) == 1:
        assert (summary["prompt_tokens"], summary["completion_tokens"]) == fake.tokens_reported(
            mark, SUMMARY
        )
    else:  # the run shown made the summary; an earlier one may have asked for chunks too
        assert summary["prompt_tokens"] <= got["runs"][-1]["prompt_tokens"]


def test_an_uninterrupted_chunked_run_counts_every_answer(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, fake)
    item = capture(d, f"tune WAL {MARK}", long_text({}, paragraphs=8))
    got = finished(d, item)
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    assert chunk_requests(fake) == 8
    check_counted(d, fake, got, MARK)
    assert d.stop() == 0


def test_pauses_lose_no_token_of_chunks_done_before_or_of_a_step_they_cut(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, fake)
    # Chunk 3 waits for an answer that does not come; the first score answer breaks the
    # schema, and its repair waits in turn: each wait ended by a pause.
    fake.fault("holdchunk", "hang", step="summary_chunk")
    item = capture(
        d, f"tune WAL {MARK} fake:invalidx1@score#p", long_text({3: "holdchunk"}, paragraphs=6)
    )
    fake.wait_until(lambda f: f.in_flight == 1 and chunk_requests(f, "holdchunk") == 1)
    assert d.call("pause") == {"paused": True}
    fake.wait_until(lambda f: f.disconnects == 1, timeout=10)
    fake.fault("holdchunk", None)
    fake.fault(REPAIR, "hang", step="score")
    assert d.call("resume") == {"paused": False}
    fake.wait_until(lambda f: f.in_flight == 1 and asked(f, REPAIR) == 1)
    # The score's first answer was reported (and paid for) before the pause cut its step.
    assert d.call("pause") == {"paused": True}
    fake.wait_until(lambda f: f.disconnects == 2, timeout=10)
    fake.fault(REPAIR, None)
    assert d.call("resume") == {"paused": False}
    got = finished(d, item)
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    assert len(got["runs"]) == 1 and len(got["attempts"]) == 3
    check_counted(d, fake, got, MARK)
    assert d.stop() == 0


def test_a_crash_a_retry_and_pruning_lose_no_token(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, fake)
    # kill -9 while chunk 3 waits: chunks 0-2 were finished by the attempt that died.
    fake.fault("holdchunk", "hang", step="summary_chunk")
    crashed = capture(d, "tune WAL crashmark", long_text({3: "holdchunk"}, paragraphs=6))
    fake.wait_until(lambda f: f.in_flight == 1 and chunk_requests(f, "holdchunk") == 1)
    d.kill9()
    fake.fault("holdchunk", None)
    d = start(daemons, tmp_path, fake)
    got = finished(d, crashed)
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    assert len(got["attempts"]) == 2
    check_counted(d, fake, got, "crashmark")

    # A chunk that fails the run after chunks before it were done, and a step whose
    # answers break the schema twice: both runs fail having spent tokens; retries finish.
    fake.fault("failchunk", "500", step="summary_chunk")
    chunky = capture(d, "tune WAL chunkmark", long_text({4: "failchunk"}, paragraphs=6))
    invalid = capture(d, "tune WAL scoremark fake:invalidx2@score#r", long_text({}, paragraphs=2))
    for item in (chunky, invalid):
        assert finished(d, item)["item"]["status"] == "FAILED_AI"
    fake.fault("failchunk", None)
    for item, mark in ((chunky, "chunkmark"), (invalid, "scoremark")):
        d.call("process", {"id": item})
        got = finished(d, item, count=2)
        assert got["item"]["status"] == "READY", got["item"]["failure"]
        # The retry is the run's second attempt; the first spent tokens before failing.
        assert [a["status"] for a in got["attempts"]] == ["failed", "succeeded"]
        assert got["attempts"][0]["prompt_tokens"] > 0
        check_counted(d, fake, got, mark)
    # A regenerate: a second run, the first one superseded.
    d.call("process", {"id": crashed, "regenerate": True})
    got = finished(d, crashed, count=2)
    assert [r["status"] for r in got["runs"]] == ["succeeded", "succeeded"]
    check_counted(d, fake, got, "crashmark")
    before = stats_tokens(d)
    assert before == fake.tokens_reported()
    assert d.stop() == 0

    # Sixty days on, retention removes the superseded run and old events; the totals stay.
    with closing(sqlite3.connect(d.db_path)) as db, db:
        age_everything(db, 60 * DAY_MS)
    d = start(daemons, tmp_path, fake)
    pruned = json.loads(run_cli(d, "prune", "--json").stdout)
    assert pruned["removed"]["runs"] == 1 and pruned["removed"]["events"] > 0
    assert stats_tokens(d) == before == fake.tokens_reported()
    assert len(d.call("get", {"id": crashed})["runs"]) == 1
    assert d.stop() == 0
    assert invariants.check(d.db_path, pruned=True) == []
