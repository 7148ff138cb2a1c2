"""The ``openai`` engine against the behaviours of the model servers people run.

Each behaviour is one a real server has (llama-cpp-python's HTTP 500 for
``json_schema``, a small model echoing the schema, answers cut at
``max_tokens``, raw control characters, integers beyond their range, a
context smaller than ``ai.context_tokens``, a stream that breaks off after
its 200), played by the fake server on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod import cli
from readdod.engines import openai as oa
from readdod.engines.base import EngineInput
from readdod.engines.openai import formats
from readdod.errors import AIError, ErrorCode
from readdod.items.models import Score, Summary
from readdod.settings.config import AIConfig
from tests.fake_openai import LLAMA_CPP_PYTHON_REFUSAL, FakeOpenAI

pytestmark = pytest.mark.anyio

TEXT = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database.\n\n"
    "Group commit batches many small transactions into one fsync."
)
SUMMARY = Summary(
    tl_dr="WAL lets readers and a writer work at once.",
    key_points=["Run PRAGMA journal_mode=WAL once.", "Checkpoints move pages back."],
    intent_relevance="It shows how to turn WAL on.",
    reading_time_min=1,
    lang="en",
)
SCORE = Score(
    match_score=90,
    priority="P1",
    reasons=["It shows the PRAGMA.", "It explains checkpoints.", "It is short."],
    recommendation="read",
)


def _cfg(base_url: str, **kw: Any) -> AIConfig:
    base: dict[str, Any] = {
        "engine": "openai",
        "base_url": base_url,
        "model": "m",
        "attempts": 2,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.02,
        "timeout_s": 5.0,
        "circuit_failures": 1,
    }
    return msgspec.convert({**base, **kw}, type=AIConfig)


def _engine(fake: FakeOpenAI, state: Path | None = None, **kw: Any) -> oa.OpenAIEngine:
    return oa.OpenAIEngine(_cfg(fake.base_url, **kw), environ={}, state_dir=state)


def _formats(fake: FakeOpenAI) -> list[str]:
    out = []
    for r in fake.steps():
        fmt = r["body"].get("response_format") or {}
        kind = fmt.get("type") or "prompt"
        out.append("json_object_schema" if kind == "json_object" and fmt.get("schema") else kind)
    return out


def _user(request: dict[str, Any]) -> str:
    return str(request["body"]["messages"][-1]["content"])


async def test_a_500_naming_the_format_steps_down_once_without_opening_the_circuit(
    tmp_path: Path,
) -> None:
    llama = {
        "accepts": ("json_object_schema", "json_object", "prompt"),
        "format_status": 500,
        "format_message": LLAMA_CPP_PYTHON_REFUSAL,
    }
    with FakeOpenAI(**llama) as fake:  # type: ignore[arg-type]
        eng = _engine(fake, tmp_path)  # one 500 would open this circuit
        try:
            out = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
            await eng.score(EngineInput(text=TEXT, intent="learn WAL"), out.payload)
            assert eng.circuit_state() == "closed"
            assert eng.transport.circuit.consecutive_failures == 0
        finally:
            await eng.aclose()
        assert _formats(fake) == ["json_schema", "json_object_schema", "json_object_schema"]
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned == {f"{fake.base_url} m": {"format": "json_object_schema"}}

        # A restarted engine asks in the learned format at once.
        again = _engine(fake, tmp_path)
        try:
            await again.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await again.aclose()
        assert _formats(fake)[3:] == ["json_object_schema"]

        # ai.structured_output overrides what was learned.
        forced = _engine(fake, tmp_path, structured_output="prompt")
        try:
            await forced.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await forced.aclose()
        assert _formats(fake)[4:] == ["prompt"]
        assert "JSON Schema" in _user(fake.steps()[-1])


async def test_the_ladder_goes_down_to_the_prompt_and_a_fixed_format_fails_with_advice() -> None:
    with FakeOpenAI(accepts=("prompt",), format_message="response_format is not supported") as fake:
        eng = _engine(fake)
        try:
            await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert _formats(fake) == ["json_schema", "json_object_schema", "json_object", "prompt"]

        fixed = _engine(fake, structured_output="json_object")
        try:
            with pytest.raises(AIError) as exc:
                await fixed.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await fixed.aclose()
        assert not exc.value.retryable
        assert "response_format is not supported" in exc.value.message
        assert 'ai.structured_output to "auto"' in exc.value.message


async def test_a_400_not_about_the_format_never_switches_it_and_shows_the_servers_words() -> None:
    with FakeOpenAI() as fake:
        fake.fault("learn WAL", "400")
        eng = _engine(fake)
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
            fake.fault("learn WAL", None)
            await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert exc.value.code is ErrorCode.AI_PROVIDER_ERROR and not exc.value.retryable
        assert "temperature must be at most 2" in exc.value.message
        assert _formats(fake) == ["json_schema", "json_schema"]


async def test_a_5xx_shows_the_servers_own_message() -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake, circuit_failures=0, attempts=1)
        fake.fault("learn WAL", "500")
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert 'HTTP 500): "the model crashed"' in exc.value.message


async def test_json_mode_carries_the_schema_so_the_model_does_not_echo_it() -> None:
    # A server that ignores a schema next to json_object, and a model that then echoes it.
    echoing = {"accepts": ("json_object", "prompt"), "echo_without_schema": True}
    with FakeOpenAI(**echoing) as fake:  # type: ignore[arg-type]
        eng = _engine(fake, structured_output="json_object")
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert exc.value.code is ErrorCode.AI_SCHEMA_INVALID
        assert "repeats the JSON Schema" in exc.value.message
    # A server that makes a grammar of the schema (llama-cpp-python) answers well.
    with FakeOpenAI(
        accepts=("json_object_schema", "json_object"), echo_without_schema=True
    ) as fake:
        eng = _engine(fake, structured_output="json_object_schema")
        try:
            out = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert out.payload.tl_dr in TEXT


async def test_every_request_carries_max_tokens_and_a_cut_answer_is_not_sent_back() -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake, max_tokens={"summary": 500, "score": 300})
        try:
            out = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL fake:lengthx1"))
            await eng.score(EngineInput(text=TEXT, intent="learn WAL"), out.payload)
        finally:
            await eng.aclose()
        sent = fake.steps()
        assert [r["body"]["max_tokens"] for r in sent] == [500, 500, 300]
        assert all(r["body"]["stream"] is True for r in sent)
        cut, again = sent[0]["body"]["messages"], sent[1]["body"]["messages"]
        # Asked again from the start, with a request to be brief; the cut answer is not in it.
        assert [m["role"] for m in again] == ["system", "user"]
        assert again[1]["content"].startswith(cut[1]["content"])
        assert "cut off after 500 tokens" in again[1]["content"]
        assert out.template_version == "summary.v3+truncated.v1"


async def test_answers_always_cut_fail_naming_the_setting_to_raise() -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake, max_tokens={"summary": 16})
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert exc.value.code is ErrorCode.AI_PARSE_ERROR
        assert "raise ai.max_tokens.summary" in exc.value.message
        assert len(fake.steps()) == 2


async def test_loose_answers_are_read_and_unbounded_numbers_are_clamped() -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake)
        try:
            loose = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL fake:ctrl"))
            wild = await eng.todos(
                EngineInput(text=TEXT, intent="learn WAL fake:bigint"), SUMMARY, SCORE
            )
            big = await eng.summarize(EngineInput(text=TEXT, intent="learn WAL fake:bigint#s"))
        finally:
            await eng.aclose()
        assert len(fake.steps()) == 3  # no repair was needed
        assert "Line one.\nLine two: " in loose.payload.tl_dr
        assert {t.estimate_min for t in wild.payload.items} == {600}
        # readdod computes the reading time: it is not asked for, and the model's is ignored.
        asked = fake.steps()[0]["body"]["response_format"]["json_schema"]["schema"]
        assert "reading_time_min" not in asked["properties"]
        assert big.payload.reading_time_min == oa.reading_minutes(TEXT)


@pytest.mark.parametrize("stream_errors", [False, True], ids=["400", "broken-stream"])
async def test_a_context_overflow_splits_the_text_again_and_remembers_the_context(
    tmp_path: Path, stream_errors: bool
) -> None:
    long = "\n\n".join(f"Paragraph {n}: " + "WAL keeps readers going. " * 40 for n in range(8))
    with FakeOpenAI(context_tokens=2_000, stream_errors=stream_errors) as fake:
        eng = _engine(fake, tmp_path, context_tokens=8_192, max_tokens={"summary_chunk": 200})
        try:
            out = await eng.summarize(EngineInput(text=long, intent="tune WAL"))
        finally:
            await eng.aclose()
        first = fake.steps()[0]["body"]
        assert first["stream"] is True  # the whole text, refused
        # Asked whole, refused; then in chunks that fit, and their notes reduced.
        assert out.template_version == "summary.v3+summary_chunk.v2+summary_reduce.v3"
        assert eng.context_of("m") == 2_000
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned[f"{fake.base_url} m"]["context_tokens"] == 2_000


async def test_a_context_too_small_for_any_split_says_which_setting_to_change() -> None:
    with FakeOpenAI(context_tokens=300) as fake:
        eng = _engine(fake, context_tokens=1_024)
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert "maximum context length is 300 tokens" in exc.value.message
        assert "ai.context_tokens" in exc.value.message


async def test_the_article_is_the_shared_prefix_of_a_runs_prompts() -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake)
        try:
            inp = EngineInput(text=TEXT, intent="learn WAL")
            summary = await eng.summarize(inp)
            score = await eng.score(inp, summary.payload)
            todos = await eng.todos(inp, summary.payload, score.payload)
        finally:
            await eng.aclose()
        prompts = [_user(r) for r in fake.steps()]
        shared = prompts[0].split("\n---\n")[0]
        assert TEXT in shared
        assert all(p.startswith(shared + "\n---\n") for p in prompts)
        assert fake.steps()[0]["body"]["messages"][0] == (fake.steps()[2]["body"]["messages"][0])
        # The server's prompt cache count is recorded with the step.
        assert summary.cached_tokens is not None and score.cached_tokens is not None
        assert score.cached_tokens >= len(shared) // 4 > 0
        # The score's short relevance question, asked between the score's judgements and
        # the todos, holds no article: a server that caches only its last prompt (as this
        # one does) reads the article again for the todos.
        assert todos.cached_tokens == 0


def test_error_messages_are_told_apart() -> None:
    assert formats.names_format(LLAMA_CPP_PYTHON_REFUSAL)
    assert formats.names_format("'response_format.type' must be 'json_schema' or 'text'")
    assert not formats.names_format("temperature must be at most 2")
    overflow = (
        "This model's maximum context length is 4096 tokens. However, you requested 4411"
        " tokens (4411 in the messages, None in the completion)."
    )
    assert formats.context_overflow(overflow) and not formats.names_format(overflow)
    assert formats.context_size(overflow) == 4096
    llama_server = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    }
    assert formats.context_overflow(formats.error_text(llama_server))
    assert formats.context_size(str(llama_server)) == 4096
    assert formats.error_text({"error": {"message": "a\n  b"}}) == "a b"
    assert formats.error_text({"detail": "gone"}) == "gone"


def test_eval_gives_up_at_its_deadline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with FakeOpenAI(hang_s=60) as fake:
        fake.fault("", "hang")
        path = tmp_path / "config.toml"
        path.write_text(
            f'[ai]\nengine = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n'
            "timeout_s = 30\n",
            encoding="utf-8",
        )
        started = time.monotonic()
        code = cli.main(["eval", "--config", str(path), "--deadline", "1"])
        took = time.monotonic() - started
    assert code == cli.EXIT_ERROR
    assert "gave up after 1 s (--deadline)" in capsys.readouterr().err
    assert took < 20


def test_token_counts_come_from_usage_or_llama_cpp_timings() -> None:
    from openai.types.chat import ChatCompletionChunk

    from readdod.engines.openai.transport import Answer

    base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    answer = Answer()
    for event in [
        {**base, "choices": [{"index": 0, "delta": {"content": '{"a": '}}]},
        {**base, "choices": [{"index": 0, "delta": {"content": "1}"}, "finish_reason": "stop"}]},
        # llama.cpp's llama-server: evaluated and cached prompt tokens in its timings.
        {**base, "choices": [], "timings": {"prompt_n": 40, "cache_n": 600, "predicted_n": 9}},
    ]:
        answer.add(ChatCompletionChunk.model_validate(event))
    assert (answer.content, answer.finish_reason) == ('{"a": 1}', "stop")
    assert (answer.prompt_tokens, answer.cached_tokens) == (640, 600)

    openai_style = Answer()
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 50,
        "total_tokens": 2050,
        "prompt_tokens_details": {"cached_tokens": 1792},
    }
    openai_style.add(ChatCompletionChunk.model_validate({**base, "choices": [], "usage": usage}))
    assert (openai_style.prompt_tokens, openai_style.cached_tokens) == (2000, 1792)


async def test_a_refused_parameter_is_replaced_from_then_on() -> None:
    with FakeOpenAI(refuses=("max_tokens", "stream_options")) as fake:
        eng = _engine(fake, circuit_failures=1)
        try:
            inp = EngineInput(text=TEXT, intent="learn WAL")
            out = await eng.summarize(inp)
            await eng.score(inp, out.payload)
        finally:
            await eng.aclose()
        sent = [r["body"] for r in fake.steps()]
        assert [("max_tokens" in b, "stream_options" in b) for b in sent] == [
            (True, True),
            (False, True),
            (False, False),
            (False, False),
        ]
        assert sent[-1]["max_completion_tokens"] == 700 and sent[-1]["stream"] is True
        assert eng.circuit_state() == "closed"


def test_clamping_follows_the_schema() -> None:
    from readdod.engines.openai.answers import clamp
    from readdod.wire import schemas

    schema = schemas.json_schema("score")
    raw = {
        "match_score": "85",
        "priority": "P1",
        "reasons": [f"reason {n}" for n in range(14)],
        "recommendation": "read",
    }
    got = clamp(raw, schema)
    assert got["match_score"] == 85 and isinstance(got["match_score"], int)
    assert len(got["reasons"]) == schema["properties"]["reasons"]["maxItems"]
    assert clamp({"match_score": -3.6}, schema)["match_score"] == 0
    assert clamp({"match_score": "many"}, schema)["match_score"] == "many"  # left to the check
    assert math.isnan(clamp({"match_score": "NaN"}, schema)["match_score"])
    long = "word " * 200
    cut = clamp({"tl_dr": long}, schemas.json_schema("summary"))["tl_dr"]
    assert len(cut) <= 280 and cut.endswith("word")


async def test_a_parameter_refused_again_after_the_change_fails_with_the_servers_words() -> None:
    with FakeOpenAI(refuses=("max_tokens", "max_completion_tokens")) as fake:
        eng = _engine(fake)
        try:
            with pytest.raises(AIError) as exc:
                await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert len(fake.steps()) == 2
        assert exc.value.code is ErrorCode.AI_PROVIDER_ERROR and not exc.value.retryable
        assert "'max_completion_tokens' is not supported" in exc.value.message


async def test_an_unreadable_memory_is_learned_again_and_rewritten(tmp_path: Path) -> None:
    (tmp_path / "model-servers.json").write_text("{not json", encoding="utf-8")
    with FakeOpenAI(structured_output=False) as fake:
        eng = _engine(fake, tmp_path)
        try:
            await eng.summarize(EngineInput(text=TEXT, intent="learn WAL"))
        finally:
            await eng.aclose()
        assert _formats(fake) == ["json_schema", "json_object_schema"]
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned == {f"{fake.base_url} m": {"format": "json_object_schema"}}


# --- the score's short relevance question -------------------------------------------


async def _scores(fake: FakeOpenAI, **kw: Any) -> tuple[int, int, oa.OpenAIEngine]:
    eng = _engine(fake, **kw)
    try:
        about = await eng.score(EngineInput(text=TEXT, intent="turn on WAL in SQLite"), SUMMARY)
        other = await eng.score(
            EngineInput(text=TEXT, intent="knit a scarf for my grandmother"), SUMMARY
        )
    finally:
        await eng.aclose()
    return about.payload.match_score, other.payload.match_score, eng


async def test_the_relevance_questions_go_without_the_article_and_set_the_score() -> None:
    """Two short questions per intent, each about the text's lead and about an empty
    text; the answers about the empty text are kept for the next item with that intent."""
    with FakeOpenAI() as fake:
        about, other, eng = await _scores(fake)
        asked = [r["body"] for r in fake.completions() if r not in fake.steps()]
        eng = _engine(fake)
        try:
            await eng.score(EngineInput(text=TEXT, intent="turn on WAL in SQLite"), SUMMARY)
            again = await eng.score(EngineInput(text=TEXT, intent="turn on WAL in SQLite"), SUMMARY)
        finally:
            await eng.aclose()
        repeated = [r["body"] for r in fake.completions() if r not in fake.steps()][len(asked) :]
    assert about >= 60 > 40 > other
    assert len(asked) == 2 * 2 * 2  # intents, questions, with and without the text
    prompts = [body["messages"][0]["content"] for body in asked]
    assert sum('"N/A"' in p for p in prompts) == 4
    assert sum("Would reading this text help" in p for p in prompts) == 4
    for body in asked:
        assert body["logprobs"] is True and body["top_logprobs"] > 1
        assert "response_format" not in body and not body.get("stream")
        assert len(body["messages"]) == 1 and TEXT not in body["messages"][0]["content"]
    # A new engine asks all four; the same intent again, not the empty text's answers.
    assert len(repeated) == 4 + 2
    assert again.payload.match_score == about
    assert again.template_version.endswith("relevance.v1+helps.v1")
    assert any("log-odds over the same questions" in r for r in again.payload.reasons)


async def test_a_server_that_refuses_logprobs_is_asked_for_the_word() -> None:
    with FakeOpenAI(refuses=("logprobs",)) as fake:
        about, other, eng = await _scores(fake)
        bodies = [r["body"] for r in fake.completions() if r not in fake.steps()]
    assert not eng.transport.logprobs
    assert "logprobs" in bodies[0] and all("logprobs" not in b for b in bodies[1:])
    assert about >= 60 > 40 > other


async def test_a_server_that_refuses_the_question_leaves_the_score_to_the_judgements(
    tmp_path: Path,
) -> None:
    """A question in no response format that the server refuses says nothing of the formats
    the steps use: they stay where they were."""
    with FakeOpenAI(accepts=("json_schema",)) as fake:
        about, other, eng = await _scores(fake, structured_output="auto")
        formats_used = _formats(fake)
    assert eng.transport.mode("m") == "json_schema"
    assert set(formats_used) == {"json_schema"}
    assert about > other
