"""Every token a model server reported is counted once: on the attempt that spent it, in
its run's totals, in the summary's meta and in the daemon's ``stats``, through pauses,
crashes, retries and pruning; checked against the fake OpenAI server's own count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI, ai_config
from tests.test_chunks_e2e import CONTEXT_TOKENS, TERMINAL, capture, chunk_requests, long_text

MARK = "tokmark"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(hang_s=120) as server:
        yield server


def start(made: list[DaemonProc], root: Path, fake: FakeOpenAI, **daemon: Any) -> DaemonProc:
    d = DaemonProc(
        root,
        ai=ai_config(fake.base_url, context_tokens=CONTEXT_TOKENS, timeout_s=60.0),
        daemon={"skip_below": 0, "shutdown_grace_s": 0.2, **daemon},
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


def test_an_uninterrupted_chunked_run_counts_every_answer(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, fake)
    item = capture(d, f"tune WAL {MARK}", long_text({}, paragraphs=8))
    got = finished(d, item)
    assert got["item"]["status"] == "READY", got["item"]["failure"]
    reported = fake.tokens_reported(MARK)
    assert reported[0] > 0 and chunk_requests(fake) == 8
    assert run_tokens(got) == reported
    assert attempt_tokens(got) == reported
    assert stats_tokens(d) == fake.tokens_reported()
    summary = got["artifacts"]["summary"]["meta"]
    asked = [
        u for p, u in fake.usages if MARK in p and "summary" in p.split("\n---\n", 1)[-1][:400]
    ]
    assert summary["prompt_tokens"] > sum(u["prompt_tokens"] for u in asked[-1:])
    assert d.stop() == 0
