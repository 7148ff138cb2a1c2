"""The local engine's todos: the text's own instructions, else a few honest ones."""

from __future__ import annotations

import re

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readdod.engines.base import EngineInput
from readdod.engines.local import LocalEngine
from readdod.engines.local.instructions import TITLE_MAX, clean, find_instructions
from readdod.errors import AIError, ErrorCode
from readdod.evaluation.runner import load_golden, load_pairs
from readdod.extraction import extract
from readdod.items.models import Score, Summary, Todos
from readdod.steps import rubric


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        (
            "en",
            "Seedlings need care.\n\n1. Water deeply at the base twice a week.\n"
            "2. Pinch out the side shoots.\n\nYou should feed them once the flowers appear. "
            "If brown patches spread, remove the affected leaves at once.",
            [
                "Water deeply at the base twice a week.",
                "Pinch out the side shoots.",
                "Feed them once the flowers appear.",
                "If brown patches spread, remove the affected leaves at once.",
            ],
        ),
        (
            "de",
            "Der Teig braucht Zeit. Füttern Sie den Sauerteig am Vorabend mit Mehl und Wasser. "
            "Danach ruht er. Sie sollten den Ofen eine Stunde vorheizen. Backen Sie das Brot "
            "45 Minuten lang.",
            [
                "Füttern Sie den Sauerteig am Vorabend mit Mehl und Wasser.",
                "Sie sollten den Ofen eine Stunde vorheizen.",
                "Backen Sie das Brot 45 Minuten lang.",
            ],
        ),
        (
            "fr",
            "Le balcon suffit. Installez vos bacs du côté le plus ensoleillé. Un bac sèche vite. "
            "Arrosez le soir, au pied des plantes. Il faut aussi ajouter du compost.",
            [
                "Installez vos bacs du côté le plus ensoleillé.",
                "Arrosez le soir, au pied des plantes.",
                "Il faut aussi ajouter du compost.",
            ],
        ),
        (
            "es",
            "La moka es barata. Llena la base con agua caliente. Pon el café en el filtro sin "
            "apretarlo. Hay que retirar la cafetera del fuego a tiempo.",
            [
                "Llena la base con agua caliente.",
                "Pon el café en el filtro sin apretarlo.",
                "Hay que retirar la cafetera del fuego a tiempo.",
            ],
        ),
        (
            "ru",
            "Томаты любят тепло. Поливайте помидоры под корень тёплой водой. Листья сохнут. "
            "Высокие сорта нужно подвязывать к опорам. Удаляйте пасынки каждую неделю.",
            [
                "Поливайте помидоры под корень тёплой водой.",
                "Высокие сорта нужно подвязывать к опорам.",
                "Удаляйте пасынки каждую неделю.",
            ],
        ),
    ],
)
def test_instructions_in_five_languages(lang: str, text: str, expected: list[str]) -> None:
    assert find_instructions(text, lang, 7) == expected


def test_an_essays_occasional_imperative_is_rhetoric_not_a_step() -> None:
    essay = " ".join(
        f"People save article number {i} and forget why they saved it." for i in range(20)
    )
    essay += " Until then, write the sentence. The habit matters more than the tool."
    assert find_instructions(essay, "en", 7) == []
    # Advice with a modal counts wherever it stands.
    assert find_instructions(essay + " You should review the pile weekly.", "en", 7) == [
        "Review the pile weekly."
    ]


def test_questions_headings_and_unknown_languages_give_no_instructions() -> None:
    assert find_instructions("Install the tool?\n\nInstall the tool now?", "en", 7) == []
    assert find_instructions("Install the tool\n\nRun the command", "en", 7) == []
    assert find_instructions("Installa il pacchetto. Esegui il comando.", "it", 7) == []
    assert find_instructions("Install the tool. Run it.", None, 7) == []


def test_titles_are_whole_sentences_never_cut_with_an_ellipsis() -> None:
    long = "Remove the first directories from each path when extracting, " + ", ".join(
        f"which is handy for archive number {i}" for i in range(12)
    )
    title = clean(long, "en")
    assert title is not None and len(title) <= TITLE_MAX
    assert title.endswith(".") and "…" not in title
    assert long.startswith(title[:-1])
    assert clean("Run " + "x" * 300, "en") is None  # no clause to cut at: dropped
    assert clean("Step 1. Install the venv module:", "en") == "Install the venv module."
    assert clean("- you should rehearse out loud", "en") == "Rehearse out loud."


async def _todos(text: str, intent: str, title: str | None = None) -> tuple[Summary, Todos, int]:
    engine = LocalEngine()
    inp = EngineInput(text=text, intent=intent, title=title)
    summary = (await engine.summarize(inp)).payload
    score = (await engine.score(inp, summary)).payload
    todos = (await engine.todos(inp, summary, score)).payload
    return summary, todos, score.match_score


def _texts() -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = [
        (p.text, p.case.intent, p.text.split("\n", 1)[0]) for p in load_pairs()
    ]
    out += [(p.text, p.case.unrelated_intent, None) for p in load_pairs()]
    for page, html in load_golden():
        ext = extract(html, page.url)
        out.append((ext.text, page.intent, ext.title))
    return out


def test_every_todo_list_passes_the_rubric_without_filler() -> None:
    async def go() -> None:
        for text, intent, title in _texts():
            summary, todos, _ = await _todos(text, intent, title=title)
            assert rubric.check(todos) == []
            assert 3 <= len(todos.items) <= 7
            for t in todos.items:
                assert "…" not in t.title and "..." not in t.title, t.title
                # No pasted term lists ("Pick one idea about bigger, blight and cages").
                assert not re.search(r"\w+, \w+ and \w+ and", t.title), t.title
                assert not t.title.startswith(("Pick one idea", "Look further into")), t.title
            for p in summary.key_points:
                assert not p.startswith(("Numbers mentioned", "Most frequent terms")), p

    anyio.run(go)


def test_a_how_to_gets_its_own_steps_and_a_note_to_write() -> None:
    async def go() -> None:
        pair = next(p for p in load_pairs() if p.case.id == "tomatoes-en")
        _, todos, _ = await _todos(pair.text, pair.case.intent)
        titles = [t.title for t in todos.items]
        assert titles[:2] == [
            "Plant seedlings deeper than they sat in the pot, burying the stem up to the first "
            "leaves.",
            "Water deeply at the base twice a week rather than a little every day.",
        ]
        assert [t.kind for t in todos.items].count("output") == 1

    anyio.run(go)


def test_a_text_without_instructions_gets_fewer_plain_todos() -> None:
    async def go() -> None:
        pair = next(p for p in load_pairs() if p.case.id == "bus-budget-en")
        _, todos, _ = await _todos(pair.text, pair.case.intent)
        assert [t.kind for t in todos.items] == ["read", "output", "action"]
        assert todos.items[0].title.startswith(("Read", "Skim"))

    anyio.run(go)


BYLINED = """Council backs the new tram line

By Jane Doe

Photo: the old depot on Mill Street (Reuters)

Published 3 March 2024

The council voted on Tuesday to build a tram line from the station to the hospital. \
Construction is planned to take three years and will cost 120 million.

Residents along Mill Street asked for noise barriers. The council promised a study of the noise \
before building starts. Shops fear a long period of roadworks.

Why it matters

Buses on the route are full at rush hour. The tram would carry twice as many people.
"""


def test_key_points_skip_headings_bylines_and_captions() -> None:
    async def go() -> None:
        summary, _, _ = await _todos(BYLINED, "tram line to the hospital")
        everything = [summary.tl_dr, *summary.key_points]
        for furniture in ("By Jane Doe", "Photo:", "Published 3 March", "Why it matters"):
            assert not any(furniture in x for x in everything), furniture
        assert all(x.endswith(".") for x in summary.key_points)

    anyio.run(go)


def test_a_single_step_is_filled_up_to_the_rubrics_minimum() -> None:
    text = (
        "The archive holds every photo the club took since 1990. Most of them are scans of "
        "prints, some are slides. You should back up the folder before you rename anything. "
        "The names follow no pattern, and several albums share a year."
    )

    async def go() -> None:
        engine = LocalEngine()
        inp = EngineInput(text=text, intent="photo archive")
        summary = (await engine.summarize(inp)).payload
        for rec, score in (("skim", 50), ("read", 70), ("skip", 20)):
            verdict = Score(
                match_score=score,
                priority="P2",
                reasons=["a", "b", "c"],
                recommendation=rec,  # type: ignore[arg-type]
            )
            todos = (await engine.todos(inp, summary, verdict)).payload
            assert rubric.check(todos) == [], rec
            titles = [t.title for t in todos.items]
            assert len(titles) >= 3, rec
            if rec != "skip":
                assert titles[0] == "Back up the folder before you rename anything.", rec

    anyio.run(go)


_STEP = st.sampled_from(
    [
        "1. Water the plants at dawn.",
        "- Füttern Sie den Sauerteig am Abend.",
        "Arrosez le soir, au pied des plantes.",
        "Llena la base con agua caliente.",
        "Поливайте помидоры тёплой водой.",
        "You should " + "really " * 60 + "rest.",
        "Step 2: Remove the stem, the leaves, the roots, " * 8,
        "On 4 May 2031 the fair opens.",
        "It closed on 1 March 2001…",
        "Photo: Reuters",
        "By Jane Doe",
        "How to begin?",
    ]
)
_HOW_TOS = st.lists(st.one_of(_STEP, st.text(max_size=60)), min_size=6, max_size=40).map(
    lambda parts: "A guide to the garden and the kitchen for everyone.\n\n" + "\n\n".join(parts)
)


MARCH_2001 = 983_491_200_000  # 2001-03-02T00:00Z: the day after "1 March 2001"


@settings(max_examples=60, deadline=None)
@given(
    text=_HOW_TOS,
    intent=st.text(max_size=60),
    captured_at=st.none() | st.integers(min_value=0, max_value=4_102_444_800_000),
)
def test_todos_from_any_text_are_valid_whole_and_bounded(
    text: str, intent: str, captured_at: int | None
) -> None:
    async def go() -> None:
        engine = LocalEngine()
        inp = EngineInput(text=text, intent=intent, captured_at=captured_at)
        try:
            summary = (await engine.summarize(inp)).payload
        except AIError as exc:
            assert exc.code is ErrorCode.AI_INPUT_TOO_SHORT
            return
        score = (await engine.score(inp, summary)).payload
        todos = (await engine.todos(inp, summary, score)).payload
        payload, problems = rubric.validate("todos", msgspec.to_builtins(todos))
        assert payload is not None and problems == []
        for t in todos.items:
            assert "…" not in t.title and len(t.title) <= TITLE_MAX
            if "calendar" in t.title:
                # A date only when the capture is known and the date is still ahead of it.
                assert captured_at is not None
                if "2001" in t.title:
                    assert captured_at < MARCH_2001

    anyio.run(go)
