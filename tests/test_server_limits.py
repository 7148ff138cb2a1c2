"""How many requests a model server takes at once, learned from how it answers.

The arithmetic (:class:`Aimd`) on its own, then the ``openai`` engine against
the fake server playing a stream cut short (llama-cpp-python's
``interrupt_requests``), a dropped connection, a 429 and a 503: the limit
falls, sustained success raises it back to ``ai.concurrency``, a cut stream
is sent again without counting against the circuit or the item, and what was
learned is kept across a restart of the real daemon.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from readdod.config import AIConfig
from readdod.engines import openai as oa
from readdod.engines.base import EngineInput, StepHooks, step_hooks
from readdod.engines.openai.concurrency import MAX_BACKOFF, RAISE_AFTER, AdaptiveSlots, Aimd
from readdod.errors import StepError
from readdod.models import Summary
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI, ai_config

TEXT = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file."
)
SUMMARY = Summary(
    tl_dr="WAL lets readers and a writer work at once.",
    key_points=["Run PRAGMA journal_mode=WAL once.", "The setting persists."],
    intent_relevance="It shows how to turn WAL on.",
    reading_time_min=1,
    lang="en",
)


# --- the arithmetic -----------------------------------------------------------


def test_aimd_halves_once_per_burst_and_climbs_back_one_at_a_time() -> None:
    a = Aimd.start(8, None)
    assert a.limit == 8
    out_before = a.epoch
    assert a.lower(out_before) and a.limit == 4
    # The other requests that were out at 8 were cut by the same burst: no new news.
    assert not a.lower(out_before) and a.limit == 4
    assert a.lower(a.epoch) and a.limit == 2
    assert a.lower(a.epoch) and a.limit == 1
    assert not a.lower(a.epoch) and a.limit == 1  # never below one
    raises = [n for n in range(1, 1000) if a.succeed()]
    assert a.limit == 8
    # Each step up takes RAISE_AFTER successes per request the limit allows.
    steps = [raises[0]] + [b - a for a, b in itertools.pairwise(raises)]
    assert steps == [RAISE_AFTER * n for n in range(1, 8)]
    assert not a.succeed() and a.limit == 8


def test_a_raise_that_is_cut_again_makes_the_next_raise_wait_longer() -> None:
    a = Aimd.start(2, 1)  # learned before: one at a time
    waits = []
    for _ in range(MAX_BACKOFF + 2):
        n = 1
        while not a.succeed():
            n += 1
        waits.append(n)
        assert a.limit == 2
        assert a.lower(a.epoch) and a.limit == 1  # the server cut the second stream again
    assert waits == [RAISE_AFTER * 2 ** min(i, MAX_BACKOFF) for i in range(MAX_BACKOFF + 2)]


def test_a_learned_limit_starts_where_it_was_but_never_above_the_ceiling() -> None:
    assert Aimd.start(4, 2).limit == 2
    assert Aimd.start(4, 9).limit == 4
    assert Aimd.start(4, 0).limit == 1


@pytest.mark.anyio
async def test_slots_hold_requests_beyond_the_limit_and_let_them_go_as_it_rises() -> None:
    moves: list[tuple[int, str]] = []
    slots = AdaptiveSlots(2, 1, lambda limit, why: moves.append((limit, why)))
    first = slots.slot()
    held = await first.__aenter__()
    entered = anyio.Event()

    async def second() -> None:
        async with slots.slot():
            entered.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert not entered.is_set() and slots.in_flight == 1
        for _ in range(RAISE_AFTER):
            slots.succeed()
        await entered.wait()  # the raise let the waiting request in
    assert moves == [(2, "sustained success")]
    slots.lower(held, "stream cut short")
    assert slots.limit == 1 and moves[-1] == (1, "stream cut short")
    await first.__aexit__(None, None, None)
    assert slots.in_flight == 0


# --- the engine against the fake server -----------------------------------------


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
        "concurrency": 4,
    }
    return msgspec.convert({**base, **kw}, type=AIConfig)


async def _score(eng: oa.OpenAIEngine, intent: str, retries: list[str] | None = None) -> None:
    async def on_retry(attempt: int, error: StepError, wait_s: float) -> None:
        if retries is not None:
            retries.append(error.error_code)

    with step_hooks(StepHooks(on_retry=on_retry)):
        await eng.score(EngineInput(text=TEXT, intent=intent), SUMMARY)


def _streamed(fake: FakeOpenAI) -> list[bool]:
    return [bool(r["body"].get("stream")) for r in fake.completions()]


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["cut", "drop"])
async def test_a_stream_cut_short_is_sent_again_and_is_not_the_server_failing(
    tmp_path: Path, how: str
) -> None:
    with FakeOpenAI() as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url), environ={}, state_dir=tmp_path)
        retries: list[str] = []
        try:
            await _score(eng, f"learn WAL fake:{how}x1", retries)
            # One failure would open this circuit (circuit_failures = 1): it stays closed.
            assert eng.circuit_state() == "closed"
            assert eng.transport.circuit.consecutive_failures == 0
            assert eng.model_usage().errors == {}
            assert retries == []  # not one of the step's attempts either
            assert eng.transport.cuts == 1
            assert eng.transport.slots("m").limit == 2
        finally:
            await eng.aclose()
        # The cut request, then the same request again, streamed (the limit is 2, not 1).
        assert _streamed(fake) == [True, True]
        bodies = [r["body"]["messages"] for r in fake.completions()]
        assert bodies[0] == bodies[1]
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned[f"{fake.base_url} m"]["concurrency"] == 2


@pytest.mark.anyio
async def test_cuts_at_one_request_in_flight_ask_the_answer_whole() -> None:
    with FakeOpenAI() as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url, concurrency=1), environ={})
        try:
            await _score(eng, "learn WAL fake:cutx1")
            assert eng.model_usage().errors == {}
        finally:
            await eng.aclose()
        # Someone else cuts the streams (the limit was already one): no stream is cut
        # when none is asked for.
        assert _streamed(fake) == [True, False]


@pytest.mark.anyio
async def test_the_limit_falls_on_cuts_429_and_503_and_climbs_back_to_ai_concurrency(
    tmp_path: Path,
) -> None:
    with FakeOpenAI(retry_after="0") as fake:
        eng = oa.OpenAIEngine(
            _cfg(fake.base_url, circuit_failures=0, attempts=3), environ={}, state_dir=tmp_path
        )
        slots = eng.transport.slots("m")
        limits = []
        try:
            for fault in ("cut", "429", "503"):
                await _score(eng, f"learn WAL fake:{fault}x1#{fault}")
                limits.append(slots.limit)
            # Sustained success brings it back up, one step at a time.
            seen = [slots.limit]
            n = 0
            while slots.limit < 4:
                await _score(eng, f"learn WAL {n}")
                n += 1
                if slots.limit != seen[-1]:
                    seen.append(slots.limit)
        finally:
            await eng.aclose()
        assert limits == [2, 1, 1]  # 4 halved by the cut, then by the 429; never below 1
        assert seen == [1, 2, 3, 4]
        # The answer after the 503 was the first success at 1.
        assert n == RAISE_AFTER * (1 + 2 + 3) - 1
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned[f"{fake.base_url} m"]["concurrency"] == 4


@pytest.mark.anyio
async def test_a_lowered_limit_holds_the_next_requests_back() -> None:
    """Eight steps at once against a server that cut one stream: at most two are out
    together afterwards, as the lowered limit says."""
    with FakeOpenAI() as fake:
        eng = oa.OpenAIEngine(_cfg(fake.base_url), environ={})
        try:
            await _score(eng, "learn WAL fake:cutx1")
            assert eng.transport.slots("m").limit == 2
            fake.max_in_flight = 0
            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(_score, eng, f"learn WAL {i}")
        finally:
            await eng.aclose()
        assert 1 <= fake.max_in_flight <= 2


def _finished(item: str, e: dict[str, Any]) -> bool:
    return bool(
        e["event"] == "item.transition"
        and e.get("item_id") == item
        and e["to"] in ("READY", "FAILED_AI", "FAILED_EXTRACTION")
    )


def test_what_a_daemon_learned_of_a_server_is_kept_across_its_restart(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """Format, context and concurrency, learned by one daemon, used by the next at once."""
    llama_like = {"accepts": ("json_object_schema", "json_object", "prompt")}
    with FakeOpenAI(context_tokens=6_000, **llama_like) as fake:  # type: ignore[arg-type]
        sections: dict[str, dict[str, Any]] = {
            "ai": ai_config(fake.base_url, concurrency=4, context_tokens=8_192),
            "daemon": {"skip_below": 0},
            **NO_AUTO_RETRY,
        }
        d = DaemonProc(tmp_path, **sections)
        daemons.append(d)
        d.start()
        # A long text, so the server says its context; one stream cut short.
        long_text = " ".join(f"Sentence {i} says WAL keeps readers going." for i in range(900))
        item = d.call("capture", {"text": long_text, "intent": "learn WAL fake:cutx1"})
        d.wait_log(functools.partial(_finished, item["item"]["id"]), timeout=120)
        got = d.call("get", {"id": item["item"]["id"]})["item"]
        assert got["status"] == "READY", got.get("failure")
        cuts = [e for e in d.logs if e["event"] == "ai.stream_cut"]
        assert len(cuts) == 1 and cuts[0]["limit"] == 2
        d.stop()
        learned = json.loads((d.data / "model-servers.json").read_text())
        assert learned == {
            f"{fake.base_url} fake-small": {
                "format": "json_object_schema",
                "context_tokens": 6_000,
                "concurrency": 2,
            }
        }

        asked_before = len(fake.completions())
        d.start()
        item = d.call("capture", {"text": long_text, "intent": "learn WAL again"})
        d.wait_log(functools.partial(_finished, item["item"]["id"]), timeout=120)
        assert d.call("get", {"id": item["item"]["id"]})["item"]["status"] == "READY"
        d.stop()
        after = fake.completions()[asked_before:]
        # Asked at once in the learned format, each request within the learned context
        # (none refused), and at the learned concurrency.
        assert after and all(
            (r["body"].get("response_format") or {}).get("type") == "json_object" for r in after
        )
        restarted = [e for e in d.logs if e["event"] == "ai.request"]  # this run's log only
        assert len(restarted) == len(after)
        assert all(e["answered"] for e in restarted)
        assert {e["concurrency"] for e in restarted} == {2}
        assert not [e for e in d.logs if e["event"] == "ai.context_exceeded"]
