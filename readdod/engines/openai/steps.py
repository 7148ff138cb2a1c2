"""What the four steps need besides a request: their prompt values, the map over a
long text's chunks, and the card assembled from the earlier steps.

The summary of a text beyond the context budget maps over its chunks (each
chunk's state kept in the step's :class:`~readdod.engines.base.ChunkLedger`,
so a retry or a restart asks only for the chunks not done) and reduces their
notes. The card's words come from the model; the rest of it from the run's
summary, score and todos, so the card cannot drift from what they decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import anyio
import msgspec

from readdod.engines.base import EngineInput, StepHooks
from readdod.engines.local.phrases import phrases_for
from readdod.engines.openai.answers import CardText, ChunkNotes, struct_schema
from readdod.engines.openai.asking import Asker
from readdod.engines.openai.budget import split_paragraphs
from readdod.engines.openai.tally import Tally
from readdod.errors import AIError, ErrorCode, StepError
from readdod.items.models import Card, CardSource, RenderSpec, Score, Summary, Todos
from readdod.runtime import retrying
from readdod.steps import rubric
from readdod.text.language import NAMES as LANGUAGE_NAMES
from readdod.text.language import detect_language

#: The longest todo title (``models.Todo.title``).
TODO_TITLE_MAX: Final = 200


def require_text(text: str) -> None:
    if not text.strip():
        raise AIError(
            "there is no text to summarise: the extraction found nothing readable",
            code=ErrorCode.AI_INPUT_EMPTY,
            retryable=False,
        )


def common_values(inp: EngineInput) -> dict[str, str]:
    """The prompt values every step's template has."""
    return {"intent": inp.intent, "title": inp.title or "(untitled)", "language": language(inp)}


def language(inp: EngineInput) -> str:
    """The text's language as a prompt names it: by name when readdod can tell it.

    Told only "the language of the text", a 1.5B model summarised a Japanese
    and a Russian page in another language; told "Japanese" and "Russian", it
    wrote theirs.
    """
    code = detect_language(inp.text) or (inp.lang or "").split("-")[0].lower()
    name = LANGUAGE_NAMES.get(code)
    return f"{name}, the text's language" if name else "the text's language"


def digest_values(inp: EngineInput, summary: Summary) -> dict[str, str]:
    """The prompt values of the steps after the summary."""
    return {
        **common_values(inp),
        "tl_dr": summary.tl_dr,
        "key_points": "\n".join(f"- {k}" for k in summary.key_points),
    }


def own_output_todo(inp: EngineInput, summary: Summary) -> str:
    """readdod's own todo of kind ``output``, in the text's language: a short note on what
    the text means for the intent (:func:`readdod.steps.rubric.mend_todos` adds it to a model's
    todos that have none)."""
    ph = phrases_for(inp.lang or summary.lang)
    title = ph.note_meaning.format(ref_subj=ph.this_text[1], goal=ph.goal(inp.intent))
    if len(title) > TODO_TITLE_MAX:
        title = ph.note_meaning.format(ref_subj=ph.this_text[1], goal=ph.your_goal)
    return title[:1].upper() + title[1:]


async def map_chunks(
    asker: Asker, inp: EngineInput, budget: int, tally: Tally, hooks: StepHooks
) -> list[ChunkNotes]:
    """The notes of each chunk of ``inp.text``, reusing those the ledger has."""
    chunks = split_paragraphs(inp.text, budget)
    ledger = hooks.chunks
    done = await ledger.begin("summary", len(chunks), tally.model) if ledger else {}
    schema = struct_schema(ChunkNotes)
    notes: list[ChunkNotes] = []
    for idx, piece in enumerate(chunks):
        if idx in done:
            try:
                notes.append(msgspec.json.decode(done[idx], type=ChunkNotes))
                continue
            except msgspec.DecodeError:
                pass
        if ledger is not None:
            tally.take()  # what came before this chunk is the step's, not the chunk's
            await ledger.update("summary", idx, "processing", model=tally.model)
        on_retry, on_attempt = chunk_retry(hooks, "summary", idx, tally.model)
        try:
            note = await asker.ask(
                "summary_chunk",
                ChunkNotes,
                schema,
                "summary_chunk",
                {**common_values(inp), "number": str(idx + 1), "total": str(len(chunks))},
                tally,
                hooks,
                on_retry,
                on_attempt,
                material=piece,
            )
        except StepError as exc:
            if ledger is not None:
                with anyio.CancelScope(shield=True):
                    await ledger.update("summary", idx, "error", error=exc, spent=tally.take())
            raise
        if ledger is not None:
            await ledger.update(
                "summary",
                idx,
                "done",
                output=msgspec.json.encode(note).decode(),
                spent=tally.take(),
            )
        notes.append(note)
    return notes


def render_notes(notes: Sequence[ChunkNotes]) -> str:
    parts = []
    for i, note in enumerate(notes, 1):
        points = "\n".join(f"  - {p}" for p in note.key_points)
        parts.append(f"Part {i}: {note.summary}\n{points}")
    return "\n\n".join(parts)


def chunk_retry(
    hooks: StepHooks, step: str, idx: int, model: str
) -> tuple[retrying.OnRetry | None, retrying.OnAttempt | None]:
    """Record a chunk's retries on the chunk row (and on the run): ``retrying`` while
    it waits, ``processing`` again when the next attempt starts."""
    ledger = hooks.chunks
    run_retry = hooks.on_retry
    if ledger is None:
        return run_retry, None

    async def on_retry(attempt: int, error: StepError, delay_s: float) -> None:
        await ledger.update(step, idx, "retrying", error=error)
        if run_retry is not None:
            await run_retry(attempt, error, delay_s)

    async def on_attempt(attempt: int) -> None:
        await ledger.update(step, idx, "processing", model=model)

    return on_retry, on_attempt


def assemble_card(
    words: CardText, inp: EngineInput, summary: Summary, score: Score, todos: Todos
) -> Card:
    """The card: the model's words around what the earlier steps decided, checked whole."""
    card = Card(
        title=words.title,
        one_liner=words.one_liner,
        summary=summary.tl_dr,
        key_points=list(summary.key_points),
        todos=list(todos.items),
        priority=score.priority,
        match_score=score.match_score,
        tags=list(inp.tags),
        source=CardSource(url=inp.url, title=inp.title, site_name=inp.site_name),
        render_spec=RenderSpec(
            template="card",
            version="card.v1",
            sections=["one_liner", "key_points", "todos", "source"],
        ),
    )
    _, problems = rubric.validate("card", msgspec.to_builtins(card))
    if problems:
        raise AIError(
            "the assembled card is invalid: " + "; ".join(problems),
            code=ErrorCode.AI_SCHEMA_INVALID,
            retryable=False,
        )
    return card
