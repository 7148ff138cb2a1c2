"""The ``openai`` engine in-process against the fake server: formats, keys, templates, chunks."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from readdod.engines import openai as oa
from readdod.engines.base import EngineInput, StepHooks
from readdod.errors import AIError, ConfigError, ErrorCode, Spent, StepError
from readdod.settings.config import AIConfig
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.anyio

TEXT = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database.\n\n"
    "Group commit batches many small transactions into one fsync."
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _cfg(base_url: str, **kw: Any) -> AIConfig:
    base: dict[str, Any] = {
        "engine": "openai",
        "base_url": base_url,
        "model": "m",
        "attempts": 2,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.02,
        "timeout_s": 2.0,
        "circuit_failures": 0,
    }
    return AIConfig(**{**base, **kw})


@pytest.fixture
async def engine(fake: FakeOpenAI) -> AsyncIterator[oa.OpenAIEngine]:
    eng = oa.OpenAIEngine(_cfg(fake.base_url), environ={})
    yield eng
    await eng.aclose()


async def test_json_schema_falls_back_to_json_mode_when_the_server_lacks_it() -> None:
    with FakeOpenAI(structured_output=False) as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url), environ={})
        try:
            out = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
            again = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        formats = [r["body"]["response_format"] for r in fake.steps()]
        assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
        # The schema goes with JSON mode, for servers that make a grammar of it.
        assert "key_points" in formats[1]["schema"]["properties"]
        assert out.payload.tl_dr in TEXT and again.payload == out.payload
        # ...and it is in the prompt as well, for servers that ignore it.
        assert '"key_points"' in fake.steps()[1]["body"]["messages"][-1]["content"]

        strict = oa.OpenAIEngine(_cfg(fake.base_url, structured_output="json_schema"), environ={})
        try:
            with pytest.raises(AIError) as exc:
                await strict.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await strict.aclose()
        assert exc.value.code is ErrorCode.AI_PROVIDER_ERROR and not exc.value.retryable
        assert "structured_output" in exc.value.message


async def test_the_api_key_comes_from_the_env_or_a_systemd_credential(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    assert oa.read_api_key("K", {"K": " sk-env \n"}) == "sk-env"
    (tmp_path / "K").write_text("sk-cred\n")
    assert oa.read_api_key("K", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) == "sk-cred"
    assert oa.read_api_key("K", {"K": "sk-env", "CREDENTIALS_DIRECTORY": str(tmp_path)}) == (
        "sk-env"
    )
    assert oa.read_api_key("OTHER", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) is None
    (tmp_path / "BLANK").write_text(" ")  # systemd's SetCredential= fallback when no file
    assert oa.read_api_key("BLANK", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) is None
    eng = oa.OpenAIEngine(
        _cfg(fake.base_url, api_key_env="K"), environ={"CREDENTIALS_DIRECTORY": str(tmp_path)}
    )
    try:
        await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
    finally:
        await eng.aclose()
    assert fake.steps()[0]["headers"]["authorization"] == "Bearer sk-cred"


def test_the_rate_limiter_counts_requests_and_tokens_per_minute() -> None:
    rpm = oa.RateLimiter(rpm=2, tpm=0)
    assert rpm.wait_s(100.0, 10) == 0 and rpm.wait_s(101.0, 10) == 0
    assert rpm.wait_s(102.0, 10) == pytest.approx(58.0)
    assert rpm.wait_s(160.5, 10) == 0  # the first request left the window
    tpm = oa.RateLimiter(rpm=0, tpm=1000)
    assert tpm.wait_s(0.0, 600) == 0
    assert tpm.wait_s(1.0, 600) == pytest.approx(59.0)
    assert tpm.wait_s(60.0, 600) == 0
    huge = oa.RateLimiter(rpm=0, tpm=100)
    assert huge.wait_s(0.0, 5000) == 0  # a request bigger than the budget still goes, alone


async def test_a_held_back_request_names_its_limit_and_gives_up_when_told() -> None:
    seen: list[tuple[str, float]] = []

    async def on_wait(limit: str, wait_s: float) -> None:
        seen.append((limit, wait_s))

    tpm = oa.RateLimiter(rpm=0, tpm=1000)
    assert await tpm.acquire(800, on_wait=on_wait)
    assert not await tpm.acquire(300, on_wait=on_wait, give_up=lambda: bool(seen))
    assert [limit for limit, _ in seen] == ["ai.tpm"] and 59 < seen[0][1] <= 60
    rpm = oa.RateLimiter(rpm=1, tpm=1000)
    assert await rpm.acquire(10)
    assert not await rpm.acquire(10, on_wait=on_wait, give_up=lambda: True)
    assert seen[-1][0] == "ai.rpm"


def test_templates_are_versioned_and_profiles_fall_back_to_default() -> None:
    assert oa.load_template("summary", "default").version == "summary.v3"
    assert oa.load_template("summary", "research").version == "summary.research.v3"
    assert oa.load_template("card", "research").version == "card.v3"
    with pytest.raises(ConfigError):
        oa.load_template("nonexistent", "default")


def test_long_text_splits_on_paragraph_boundaries_within_the_budget() -> None:
    paragraphs = [f"Paragraph {n}. " + "word " * (20 + n * 3) for n in range(30)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    chunks = oa.split_paragraphs(text, 200)
    assert len(chunks) > 3
    assert all(oa.estimate_tokens(c) <= 200 for c in chunks)
    assert [p for c in chunks for p in c.split("\n\n")] == [p.strip() for p in paragraphs]
    giant = "A sentence that goes on. " * 400
    pieces = oa.split_paragraphs(giant, 100)
    assert all(oa.estimate_tokens(c) <= 100 for c in pieces)
    assert "".join("".join(pieces).split()) == "".join(giant.split())


@pytest.mark.parametrize("budget", [0, -5])
def test_a_budget_gone_to_nothing_cuts_small_and_ends(budget: int) -> None:
    text = "Short one. Another short sentence here.\n\nA second paragraph."
    pieces = oa.split_paragraphs(text, budget)
    assert pieces and "".join("".join(pieces).split()) == "".join(text.split())


class _Ledger:
    """An in-memory ledger, standing in for the core's lease book (which the e2e test uses)."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[str, str | None]] = {}
        self.moves: list[tuple[int, str]] = []

    async def begin(self, step: str, total: int, model: str | None) -> dict[int, str]:
        if len(self.rows) != total:
            self.rows = dict.fromkeys(range(total), ("pending", None))
        return {i: out for i, (st, out) in self.rows.items() if st == "done" and out}

    async def update(
        self,
        step: str,
        idx: int,
        status: Any,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
        spent: Spent | None = None,
    ) -> None:
        self.rows[idx] = (status, output)
        self.moves.append((idx, status))


async def test_summary_maps_chunks_and_reuses_the_done_ones(fake: FakeOpenAI) -> None:
    text = "\n\n".join(
        f"Part {n} tells how WAL checkpoints behave under load number {n}. " * 6 for n in range(10)
    )
    eng = oa.OpenAIEngine(_cfg(fake.base_url, context_tokens=1024), environ={})
    ledger = _Ledger()
    try:
        hooks = StepHooks(chunks=ledger)
        first = await eng.summarize(EngineInput(text=text, intent="tune WAL"), hooks=hooks)
        total = len(ledger.rows)
        assert total > 2 and all(st == "done" for st, _ in ledger.rows.values())
        sent = len(fake.steps())
        assert sent == total + 1  # map + reduce
        # The same run again: every chunk is done, only the reduce is asked.
        await eng.summarize(EngineInput(text=text, intent="tune WAL"), hooks=hooks)
        assert len(fake.steps()) == sent + 1
    finally:
        await eng.aclose()
    assert first.template_version == "summary_chunk.v2+summary_reduce.v3"
    assert first.attempts == total + 1
    assert first.payload.reading_time_min == oa.reading_minutes(text)


def test_circuit_failures_may_not_exceed_attempts() -> None:
    with pytest.raises(ConfigError, match="circuit_failures"):
        oa.OpenAIEngine(_cfg("http://127.0.0.1:9/v1", attempts=2, circuit_failures=3))


async def test_no_more_requests_in_flight_than_ai_concurrency() -> None:
    with FakeOpenAI(hang_s=0.2) as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url, concurrency=2), environ={})
        try:
            async with anyio.create_task_group() as tg:
                for n in range(5):
                    inp = EngineInput(text=TEXT, intent=f"learn WAL fake:hang#{n}")
                    tg.start_soon(eng.summarize, inp)
        finally:
            await eng.aclose()
        assert len(fake.steps()) == 5
        assert fake.max_in_flight == 2


async def test_every_written_part_names_the_texts_language() -> None:
    """A small model told "the language of the text" writes English all the same: the
    summary, todos and card prompts name the language readdod reads from the text, or
    from the page's lang."""
    texts = {
        "Japanese, the text's language": (
            "ローカル線は来年の春からバスに転換される。運行本数は一日八本になる。"
        ),
        "German, the text's language": (
            "Die Kette wird mit einem Lappen gereinigt und danach dünn geölt. Das ist nicht schwer."
        ),
    }
    inputs = [
        *(EngineInput(text=text, intent="know what changes") for text in texts.values()),
        EngineInput(text="12 34 56", intent="x", lang="pt-BR"),
        EngineInput(text="12 34 56", intent="x"),
    ]
    with FakeOpenAI() as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url), environ={})
        try:
            asked: list[dict[str, str]] = []
            for inp in inputs:
                summary = await eng.summarize(inp)
                score = await eng.score(inp, summary.payload)
                todos = await eng.todos(inp, summary.payload, score.payload)
                await eng.card(inp, summary.payload, score.payload, todos.payload)
                prompts = [r["body"]["messages"][-1]["content"] for r in fake.steps()[-5:]]
                asked.append(
                    {m[1]: p for p in prompts if (m := re.search(r'Write the "(\w+)" part', p))}
                )
        finally:
            await eng.aclose()
    named = [*texts, "Portuguese, the text's language", "the text's language"]
    assert len(asked) == len(named)
    for language, parts in zip(named, asked, strict=True):
        assert f"intent_relevance in {language}." in parts["summary"]
        assert f"Write the titles in {language}." in parts["todos"]
        assert f"Write title and one_liner in {language}." in parts["card_text"]
