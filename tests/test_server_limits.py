"""How many requests a model server takes at once, learned from its answers.

The arithmetic (:class:`~readdod.engines.openai.concurrency.Aimd`) on its own;
then the ``openai`` engine and the real daemon against the fake server
playing llama-cpp-python at its defaults (``interrupts``: one request at a
time, a running stream cut short as soon as another request waits), and
answering 429 and 503.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from readdod.engines import openai as oa
from readdod.engines.base import EngineInput
from readdod.engines.openai.concurrency import (
    MAX_BACKOFF,
    RAISE_AFTER,
    SHORT_ANSWER_TOKENS,
    AdaptiveSlots,
    Aimd,
)
from readdod.settings.config import AIConfig
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI

TEXT = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database."
)


def _engine(fake: FakeOpenAI, state: Path | None, **kw: Any) -> oa.OpenAIEngine:
    base: dict[str, Any] = {
        "engine": "openai",
        "base_url": fake.base_url,
        "model": "m",
        "attempts": 2,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.02,
        "timeout_s": 20.0,
        "circuit_failures": 1,
    }
    cfg = msgspec.convert({**base, **kw}, type=AIConfig)
    return oa.OpenAIEngine(cfg, environ={}, state_dir=state)


# -- the arithmetic ------------------------------------------------------------------------


def test_a_burst_of_cuts_halves_the_limit_once() -> None:
    aimd = Aimd.start(8, None)
    out_together = aimd.epoch
    assert aimd.lower(out_together) is True
    assert aimd.limit == 4
    # The other requests that were out with it say nothing new.
    assert [aimd.lower(out_together) for _ in range(3)] == [False, False, False]
    assert aimd.limit == 4
    assert aimd.lower(aimd.epoch) is True
    assert aimd.limit == 2
    assert aimd.lower(aimd.epoch) is True and aimd.limit == 1
    assert aimd.lower(aimd.epoch) is False and aimd.limit == 1  # never below one


def test_sustained_success_raises_it_back_to_the_ceiling_and_no_further() -> None:
    aimd = Aimd.start(3, 1)
    raises = 0
    for _ in range(RAISE_AFTER * (1 + 2) + 50):
        raises += aimd.succeed()
    assert (aimd.limit, raises) == (3, 2)


def test_a_raise_that_is_cut_again_waits_twice_as_long_before_the_next() -> None:
    aimd = Aimd.start(4, 1)
    waits = []
    for _ in range(3):
        n = 0
        while not aimd.succeed():
            n += 1
        waits.append(n + 1)
        assert aimd.limit == 2
        aimd.lower(aimd.epoch)  # the server cut the raise short again
        assert aimd.limit == 1
    assert waits == [RAISE_AFTER, 2 * RAISE_AFTER, 4 * RAISE_AFTER]
    for _ in range(10):
        aimd.lower(aimd.epoch)
        aimd.raised = True
    assert aimd.backoff == MAX_BACKOFF


def test_a_cut_stream_lowers_the_limit_to_one_and_a_429_halves_it() -> None:
    """A server that cuts a stream because another came runs one at a time whatever the
    limit: halving would cost another round of cuts."""
    aimd = Aimd.start(8, None)
    assert aimd.lower(aimd.epoch, cut=True) is True and aimd.limit == 1
    told = Aimd.start(8, None)
    assert told.lower(told.epoch) is True and told.limit == 4


def test_short_answers_do_not_earn_a_raise() -> None:
    """The score step's one-token questions finish while another request's prompt is read:
    a run of them says nothing of whether the server takes one more at once."""
    slots = AdaptiveSlots(2, learned=1)
    for _ in range(10 * RAISE_AFTER):
        slots.succeed(max_tokens=2)
        slots.succeed(max_tokens=SHORT_ANSWER_TOKENS)
    assert slots.limit == 1
    for _ in range(RAISE_AFTER):
        slots.succeed(max_tokens=SHORT_ANSWER_TOKENS + 1)
    assert slots.limit == 2


def test_a_learned_limit_starts_within_the_ceiling() -> None:
    assert Aimd.start(4, 9).limit == 4
    assert Aimd.start(4, 0).limit == 1
    assert Aimd.start(4, 2).limit == 2
    assert Aimd.start(4, None).limit == 4


# -- the engine ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cut_streams_are_sent_again_and_lower_the_limit_without_failing(
    tmp_path: Path,
) -> None:
    with FakeOpenAI(interrupts=True, event_s=0.01) as fake:
        eng = _engine(fake, tmp_path, concurrency=4)
        done: list[str] = []
        try:

            async def one(n: int) -> None:
                out = await eng.summarize(EngineInput(text=TEXT, intent=f"learn WAL {n}"))
                done.append(out.payload.tl_dr)

            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(one, n)
            slots = eng.transport.slots("m")
        finally:
            await eng.aclose()
        assert len(done) == 4
        assert fake.cuts >= 1
        assert eng.transport.cuts == fake.cuts
        assert slots.limit < 4
        # Cuts are not failures: the circuit stayed closed after one cut with
        # circuit_failures = 1.
        assert eng.transport.circuit.state.value == "closed"
        learned = json.loads((tmp_path / "model-servers.json").read_text())
        assert learned[f"{fake.base_url} m"]["concurrency"] == slots.limit


@pytest.mark.anyio
async def test_requests_queued_behind_a_cut_stream_wait_for_the_lowered_limit() -> None:
    """Three requests at a limit of two: the first is cut when the second reaches the
    server. The limit falls before the cut request frees its place, so the third waits
    instead of going out at the old limit and cutting the second in turn."""
    with FakeOpenAI(interrupts=True, event_s=0.01) as fake:
        eng = _engine(fake, None, concurrency=2)
        try:
            async with anyio.create_task_group() as tg:
                for n in range(3):
                    tg.start_soon(eng.summarize, EngineInput(text=TEXT, intent=f"learn WAL {n}"))
        finally:
            await eng.aclose()
        assert fake.cuts == 1
        assert eng.transport.slots("m").limit == 1


@pytest.mark.anyio
@pytest.mark.parametrize("status", ["429", "503"])
async def test_a_429_or_503_lowers_the_limit(tmp_path: Path, status: str) -> None:
    with FakeOpenAI() as fake:
        eng = _engine(fake, tmp_path, concurrency=4)
        try:
            out = await eng.summarize(EngineInput(text=TEXT, intent=f"learn WAL fake:{status}x1"))
            limit = eng.transport.slots("m").limit
        finally:
            await eng.aclose()
        assert out.payload.tl_dr
        assert limit == 2
        assert (
            json.loads((tmp_path / "model-servers.json").read_text())[f"{fake.base_url} m"][
                "concurrency"
            ]
            == 2
        )


@pytest.mark.anyio
async def test_a_restarted_engine_starts_at_the_limit_it_learned(tmp_path: Path) -> None:
    with FakeOpenAI(interrupts=True, event_s=0.01) as fake:
        first = _engine(fake, tmp_path, concurrency=4)
        try:
            async with anyio.create_task_group() as tg:
                for n in range(3):
                    tg.start_soon(
                        functools.partial(
                            first.summarize, EngineInput(text=TEXT, intent=f"learn WAL {n}")
                        )
                    )
            learned = first.transport.slots("m").limit
        finally:
            await first.aclose()
        assert learned < 4
        cuts = fake.cuts
        second = _engine(fake, tmp_path, concurrency=4)
        try:
            assert second.transport.slots("m").limit == learned
            if learned == 1:
                async with anyio.create_task_group() as tg:
                    for n in range(3):
                        tg.start_soon(
                            functools.partial(
                                second.summarize, EngineInput(text=TEXT, intent=f"again {n}")
                            )
                        )
                assert fake.cuts == cuts  # one at a time from the start: nothing cut
        finally:
            await second.aclose()


# -- the daemon ----------------------------------------------------------------------------


def _finished(item: str, e: dict[str, Any]) -> bool:
    return bool(
        e["event"] == "item.transition"
        and e.get("item_id") == item
        and e["to"] in ("READY", "FAILED_AI", "FAILED_EXTRACTION")
    )


def test_items_in_flight_at_the_defaults_all_end_ready_against_a_server_that_cuts_streams(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """The llama-cpp-python case at readdod's default ``ai.concurrency``: requests the
    server takes one at a time wait in readdod's queue, not the server's, so none
    waits out its ``ai.timeout_s`` behind the others (scaled down here: an answer
    takes about half a second to write, a request may take two)."""
    with FakeOpenAI(interrupts=True, event_s=0.04) as fake:
        ai = {
            "engine": "openai",
            "base_url": fake.base_url,
            "model": "m",
            "timeout_s": 2.0,
            "retry_initial_s": 0.01,
            "retry_max_s": 0.05,
        }
        assert "concurrency" not in ai  # readdod's default
        d = DaemonProc(tmp_path, ai=ai, daemon={"skip_below": 0}, **NO_AUTO_RETRY)
        daemons.append(d)
        d.start()
        items = [
            d.call("capture", {"text": TEXT, "intent": f"turn on WAL for service {n}"})["item"][
                "id"
            ]
            for n in range(4)
        ]
        for item in items:
            d.wait_log(functools.partial(_finished, item), timeout=120)
        statuses = [d.call("get", {"id": i})["item"]["status"] for i in items]
        assert statuses == ["READY"] * 4, [d.call("get", {"id": i})["item"] for i in items]
        cut = [e for e in d.logs if e["event"] == "ai.stream_cut"]
        assert cut and fake.cuts >= len(cut) > 0
        lowered = [e for e in d.logs if e["event"] == "ai.concurrency"]
        assert lowered and lowered[-1]["limit"] < lowered[-1]["ceiling"]
        assert not [e for e in d.logs if e.get("error_code") == "AI_PROVIDER_ERROR"]
        assert d.stop() == 0

        # What was learned survives the restart: the next items go one at a time from
        # the first request, and no stream is cut before sustained success raises the
        # limit again.
        learned = json.loads((d.data / "model-servers.json").read_text())
        assert learned[f"{fake.base_url} m"]["concurrency"] == 1
        cuts_before = fake.cuts
        d.start()
        more = [
            d.call("capture", {"text": TEXT, "intent": f"check WAL on host {n}"})["item"]["id"]
            for n in range(2)
        ]
        for item in more:
            d.wait_log(functools.partial(_finished, item), timeout=120)
        assert [d.call("get", {"id": i})["item"]["status"] for i in more] == ["READY"] * 2
        events = [e["event"] for e in d.logs if e["event"] in ("ai.concurrency", "ai.stream_cut")]
        assert events[:1] != ["ai.stream_cut"], events
        if fake.cuts > cuts_before:
            assert events[0] == "ai.concurrency", events
        assert d.stop() == 0
