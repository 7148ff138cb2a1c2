"""A pipeline step is one module of ``readdod/steps/`` listed once in ``steps.STEPS``.

Every registered step declares each part (its names, its Structs, what it reads,
its check, where a failure leaves the item, how it runs), the actor's pipeline
runs each from the list, the rubric and the READY gate judge by it, and a step
written here, in one module's worth of code, runs through the same pipeline
with nothing else changed. The step's hooks reach the engine as an argument.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final, Protocol, get_args

import msgspec
import pytest

from readdod import steps
from readdod.engines.base import NO_HOOKS, EngineInput, EngineOutput, StepHooks
from readdod.engines.fixed import FixedEngine
from readdod.engines.local import LocalEngine
from readdod.extraction.fetch import make_client
from readdod.items.models import ArtifactMeta, ArtifactType, Extraction, Summary, WireStep
from readdod.items.states import Status
from readdod.processing.pipeline import Pipeline
from readdod.settings.config import FetchConfig
from readdod.steps import (
    STEPS,
    Step,
    StepContext,
    StepResult,
    card,
    extraction,
    rubric,
    score,
    summary,
)
from readdod.steps import todos as todos_step
from readdod.steps.base import Source
from readdod.wire import schemas

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
TEXT = "\n\n".join(
    f"Write-ahead logging keeps a database durable: part {n} says how checkpoints behave"
    " under load, why fsync matters and what a busy timeout protects." * 2
    for n in range(6)
)


@pytest.fixture
async def pipeline() -> AsyncIterator[Pipeline]:
    async with make_client(FetchConfig()) as http:
        yield Pipeline(LocalEngine(), http, FetchConfig())


def _context(html: str | None = None, text: str | None = TEXT, **kw: Any) -> StepContext:
    async def source() -> Source:
        return html, text, None

    return StepContext(
        item_id="item-1",
        url="https://example.org/wal",
        intent="tune SQLite WAL for a busy service",
        title=None,
        tags=("db",),
        source=source,
        **kw,
    )


def test_every_registered_step_declares_each_part() -> None:
    names = [s.name for s in STEPS]
    assert len(set(names)) == len(names) == len(STEPS)
    # The stored artifact types and the wire's step names are the contract's.
    assert set(names) == set(get_args(ArtifactType))
    assert {s.wire for s in STEPS} <= set(get_args(WireStep))
    assert len({s.wire for s in STEPS}) == len(STEPS)
    for i, step in enumerate(STEPS):
        assert isinstance(step, Step)
        assert set(step.needs) <= set(names[:i]), f"{step.name} reads a later step"
        assert issubclass(step.payload, msgspec.Struct)
        assert issubclass(step.user_payload, msgspec.Struct)
        assert step.fails_as in (Status.FAILED_EXTRACTION, Status.FAILED_AI)
        # Its Struct is published (tests/test_schemas.py keeps the file and Struct in step).
        assert (ROOT / "schemas" / schemas.filename(step.name)).is_file()
        assert steps.step(step.name) is step
        assert steps.wire_step(step.name) == step.wire
    # What the tables everything else reads are made of: the list, in its order.
    assert tuple(names) == steps.NAMES
    assert {s.name: s.payload for s in STEPS} == steps.PAYLOAD_TYPES
    assert tuple(s.name for s in STEPS if s.gated) == steps.GATED
    assert [steps.next_step(n) for n in names] == [*names[1:], "gate"]
    assert steps.WIRE_STEPS["gate"] == STEPS[-1].wire


def test_the_gate_requires_the_gated_steps_of_the_list_and_judges_with_their_checks() -> None:
    code, problems = rubric.gate("run-1", {})
    assert code == "RUN_INCONSISTENT"
    assert problems == [f"{name} is missing for run run-1" for name in steps.GATED]
    # A summary whose points repeat passes its Struct but not its step's check.
    bad = Summary(
        tl_dr="WAL in short.",
        key_points=["Same point.", "same point.", "Another point."],
        intent_relevance="It tunes WAL.",
        reading_time_min=2,
    )
    assert summary.check(bad) == ["summary.key_points repeats a point"]
    assert rubric.check(bad) == summary.check(bad)
    raw = msgspec.to_builtins(bad)
    assert rubric.validate("summary", raw)[1] == ["summary.key_points repeats a point"]
    runs = dict.fromkeys(steps.GATED, ("run-1", raw))
    assert rubric.gate("run-1", runs)[0] == "AI_SCHEMA_INVALID"
    assert rubric.gate_fault("run-1", runs) == "summary"
    # A person's version is judged by its step's user_check: structure and words only.
    mine = {"tl_dr": "x", "key_points": [" "], "intent_relevance": "", "reading_time_min": 1}
    assert rubric.validate_user("summary", mine)[1] == ["summary has a blank entry"]


@pytest.mark.parametrize("html", [None, "<html><body><article><p>{}</p></article></body></html>"])
async def test_the_pipeline_runs_every_registered_step_from_the_list(
    pipeline: Pipeline, html: str | None
) -> None:
    ctx = _context(html=html.format(TEXT) if html else None, text=None if html else TEXT, done={})
    for step in STEPS:
        result = await pipeline.run(step, ctx)
        assert isinstance(result.payload, step.payload), step.name
        assert step.check(result.payload) == [], step.name
        assert rubric.validate(step.name, msgspec.to_builtins(result.payload))[1] == []
        ctx.done[step.name] = result.payload
    assert isinstance(ctx.done["extraction"], Extraction)
    assert ctx.done["extraction"].source == ("provided_html" if html else "provided_text")
    payloads = {n: ("run-1", msgspec.to_builtins(ctx.done[n])) for n in steps.GATED}
    assert rubric.gate("run-1", payloads) == (None, [])


class _Heard(FixedEngine):
    """An engine that keeps the hooks each step gave it."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: dict[str, StepHooks] = {}

    async def summarize(
        self, inp: EngineInput, *, hooks: StepHooks = NO_HOOKS
    ) -> EngineOutput[Summary]:
        self.heard["summary"] = hooks
        if hooks.stop_reason is not None and hooks.stop_reason() is not None:
            raise RuntimeError("told to stop")
        return await super().summarize(inp, hooks=hooks)


async def test_each_step_hands_the_runs_hooks_to_its_engine_as_an_argument() -> None:
    engine = _Heard()
    async with make_client(FetchConfig()) as http:
        pipe = Pipeline(engine, http, FetchConfig())
        hooks = StepHooks(stop_reason=lambda: None)
        ctx = _context(hooks=hooks, done={})
        ctx.done["extraction"] = (await pipe.run(extraction.STEP, ctx)).payload
        await pipe.run(summary.STEP, ctx)
        assert engine.heard["summary"] is hooks
        # Nothing else carries them: a step run without hooks gives the engine none.
        await pipe.run(summary.STEP, _context(done=dict(ctx.done)))
        assert engine.heard["summary"] is NO_HOOKS
        stopping = _context(hooks=StepHooks(stop_reason=lambda: "pause"), done=dict(ctx.done))
        with pytest.raises(RuntimeError, match="told to stop"):
            await pipe.run(summary.STEP, stopping)


# --- a step written here: one module's worth, and its entry in a list ------------------


class Reading(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How long the text takes to read, and how many paragraphs it has."""

    minutes: int
    paragraphs: int


class _Tools(Protocol):
    @property
    def engine(self) -> summary.Summarizer: ...


def _check_reading(p: Reading) -> list[str]:
    return [] if p.minutes >= 1 and p.paragraphs >= 1 else ["reading needs a paragraph"]


async def _run_reading(ctx: StepContext, tools: _Tools) -> StepResult:
    text = ctx.get("extraction", Extraction).text
    got = ctx.get("summary", Summary)
    payload = Reading(minutes=got.reading_time_min, paragraphs=len(text.split("\n\n")))
    meta = ArtifactMeta(run_id=None, engine=tools.engine.name, template_version="reading.v1")
    return StepResult(payload=payload, meta=meta)


READING: Final = Step[_Tools](
    name="reading",
    wire="summarize",
    payload=Reading,
    user_payload=Reading,
    needs=("extraction", "summary"),
    gated=False,
    fails_as=Status.FAILED_AI,
    check=_check_reading,
    user_check=_check_reading,
    run=_run_reading,
)


async def test_a_step_written_in_one_module_runs_with_the_pipeline(pipeline: Pipeline) -> None:
    listed = (*STEPS[:2], READING, *STEPS[2:])
    ctx = _context(done={})
    for step in listed:
        assert set(step.needs) <= set(ctx.done), step.name
        result = await pipeline.run(step, ctx)
        assert step.check(result.payload) == [], step.name
        ctx.done[step.name] = result.payload
    reading = ctx.done["reading"]
    assert isinstance(reading, Reading)
    assert reading.paragraphs == 6
    assert reading.minutes == ctx.get("summary", Summary).reading_time_min >= 1
    # Stored and resumed as any artifact: its bytes decode to its Struct.
    assert msgspec.json.decode(msgspec.json.encode(reading), type=READING.payload) == reading
    assert READING.check(Reading(minutes=0, paragraphs=0)) == ["reading needs a paragraph"]
    _tools_fit_every_step(pipeline)


def _tools_fit_every_step(p: Pipeline) -> None:
    """Type-checked (mypy runs on tests): the pipeline is the tools each step asks for."""
    _e: extraction.Fetcher = p
    _s: summary.Tools = p
    _c: score.Tools = p
    _t: todos_step.Tools = p
    _d: card.Tools = p
    _r: _Tools = p


def test_the_engine_seam_is_what_the_steps_ask_of_an_engine() -> None:
    from readdod.engines import base

    asked = {summary.Summarizer, score.Scorer, todos_step.TodoMaker, card.CardMaker}
    assert asked <= set(base.Engine.__mro__)
