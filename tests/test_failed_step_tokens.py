"""A step that fails after the model server answered was still paid for, through the real
daemon and the fake OpenAI server: its tokens reach the run's totals, the failure it left,
`show` and `stats`, so what a model server cost is never undercounted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config
from tests.test_openai_e2e import ARTICLE


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _failed(d: DaemonProc, item_id: str) -> dict[str, Any]:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == item_id
            and e["to"] in ("READY", "FAILED_AI")
        ),
        timeout=60,
    )
    got: dict[str, Any] = d.call("get", {"id": item_id})
    return got


def test_a_step_that_fails_after_the_answer_counts_its_tokens(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"skip_below": 0}, ai=ai_config(fake.base_url), **NO_AUTO_RETRY)
    daemons.append(d)
    d.start()
    # The score's answer is not JSON, and neither is the answer to the repair: the step
    # fails with AI_PARSE_ERROR after two answers that each reported their usage.
    fake.fault("tag-spent", "badjson", step="score")
    item_id = d.call("capture", {"text": ARTICLE, "intent": "WAL tag-spent"})["item"]["id"]
    got = _failed(d, item_id)
    assert got["item"]["status"] == "FAILED_AI"
    assert got["item"]["failure"]["error_code"] == "AI_PARSE_ERROR"

    prompt, completion = fake.tokens_reported("tag-spent")
    summary_meta = got["artifacts"]["summary"]["meta"]
    assert summary_meta["prompt_tokens"] < prompt  # the summary alone is not all it cost

    [run] = got["runs"]
    # Everything the server reported for this item: the summary's artifact and the failure.
    assert (run["prompt_tokens"], run["completion_tokens"]) == (prompt, completion)
    [failed] = run["failures"]
    assert failed["step"] == "score" and failed["error_code"] == "AI_PARSE_ERROR"
    assert failed["model"] == "fake-small"
    assert failed["prompt_tokens"] == prompt - summary_meta["prompt_tokens"] > 0
    assert failed["completion_tokens"] == completion - summary_meta["completion_tokens"] > 0
    assert "fake-small" in run["models"]

    tokens = d.call("stats")["tokens"]
    assert (tokens["prompt"], tokens["completion"]) == fake.tokens_reported()

    shown = run_cli(d, "show", item_id)
    assert shown.returncode == 0, shown.stderr
    spent = f"spent before failing: tokens {failed['prompt_tokens']}+{failed['completion_tokens']}"
    assert spent in shown.stdout
    assert f"tokens {prompt}+{completion}" in shown.stdout
    assert d.stop() == 0


def test_a_step_refused_before_any_answer_records_no_tokens(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"skip_below": 0}, ai=ai_config(fake.base_url), **NO_AUTO_RETRY)
    daemons.append(d)
    d.start()
    # A request error is answered without usage: nothing was spent on the failed step.
    fake.fault("tag-refused", "400", step="score")
    item_id = d.call("capture", {"text": ARTICLE, "intent": "WAL tag-refused"})["item"]["id"]
    got = _failed(d, item_id)
    assert got["item"]["status"] == "FAILED_AI"
    [run] = got["runs"]
    [failed] = run["failures"]
    assert failed["prompt_tokens"] == failed["completion_tokens"] == 0
    assert (run["prompt_tokens"], run["completion_tokens"]) == fake.tokens_reported("tag-refused")
    assert d.stop() == 0
