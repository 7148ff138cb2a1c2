"""A small model's near misses in the todos step, mended by ``rubric.mend_todos``.

The answers below are the shapes Qwen2.5-Coder-1.5B-Instruct gave on readdod's demo
pages: a list with no todo of kind ``output``, and a Spanish list with every todo of
kind ``output``.
"""

from __future__ import annotations

import json

from readdod.engines.openai.answers import judge
from readdod.items.models import Todo, Todos
from readdod.steps import rubric

OWN = "Write a short note on what this text means for “switch the queue to WAL”"


def _todos(*items: tuple[str, str]) -> Todos:
    return Todos(items=[Todo(title=t, kind=k, estimate_min=5) for t, k in items])  # type: ignore[arg-type]


def test_no_output_kind_the_todo_that_makes_something_becomes_the_output() -> None:
    got = rubric.mend_todos(
        _todos(
            ("Run PRAGMA journal_mode=WAL on the queue database", "action"),
            ("Write down the busy_timeout the workers need", "action"),
            ("Read the section on checkpoints", "read"),
        ),
        OWN,
    )
    assert [t.kind for t in got.items] == ["action", "output", "read"]
    assert rubric.check(got) == []


def test_no_output_kind_and_nothing_made_readdods_own_output_todo_is_added() -> None:
    got = rubric.mend_todos(
        _todos(
            ("Run PRAGMA journal_mode=WAL", "action"),
            ("Set synchronous=FULL", "action"),
            ("Read the section on checkpoints", "read"),
        ),
        OWN,
    )
    assert [t.title for t in got.items][:3] == [
        "Run PRAGMA journal_mode=WAL",
        "Set synchronous=FULL",
        "Read the section on checkpoints",
    ]
    assert (got.items[-1].title, got.items[-1].kind) == (OWN, "output")
    assert rubric.check(got) == []


def test_seven_todos_and_no_output_the_last_gives_way_to_readdods_own() -> None:
    seven = _todos(*((f"Run step {i} of the migration", "action") for i in range(7)))
    got = rubric.mend_todos(seven, OWN)
    assert len(got.items) == 7
    assert got.items[-1].title == OWN
    assert rubric.check(got) == []


def test_every_todo_of_kind_output_each_takes_the_kind_its_verb_names() -> None:
    got = rubric.mend_todos(
        _todos(
            ("Elige una maceta de 20 litros con agujeros", "output"),
            ("Lee la sección sobre el riego", "output"),
            ("Estudia qué aromáticas aguantan el sol de la tarde", "output"),
            ("Anota en un calendario cuándo sembrar los tomates", "output"),
            ("Planta los tomates después de las heladas", "output"),
        ),
        "Anotar brevemente qué aporta el texto a «huerto»",
    )
    assert [t.kind for t in got.items] == ["action", "read", "learn", "output", "action"]
    assert rubric.check(got) == []


def test_every_todo_output_and_none_makes_anything_readdods_own_is_added() -> None:
    own = "Anotar brevemente qué aporta el texto a «huerto»"
    got = rubric.mend_todos(
        _todos(
            ("Compra sustrato", "output"),
            ("Riega dos veces por semana", "output"),
            ("Pon tutores a las tomateras", "output"),
        ),
        own,
    )
    assert [t.kind for t in got.items] == ["action", "action", "action", "output"]
    assert got.items[-1].title == own


def test_a_repeated_title_is_dropped_while_three_remain() -> None:
    got = rubric.mend_todos(
        _todos(
            ("Write the plan", "output"),
            ("Run the test", "action"),
            ("write the plan", "output"),
            ("Read the notes", "read"),
        ),
        OWN,
    )
    assert [t.title for t in got.items] == ["Write the plan", "Run the test", "Read the notes"]


def test_a_right_list_is_left_as_it_is() -> None:
    right = _todos(("Run the test", "action"), ("Write the plan", "output"), ("Read it", "read"))
    assert rubric.mend_todos(right, OWN) == right


def test_the_engines_judge_mends_before_the_rubric_judges() -> None:
    """Without the mend, a list with no output kind is a schema failure of the step."""
    answer = json.dumps(
        {
            "items": [
                {"title": "Run PRAGMA journal_mode=WAL", "kind": "action", "estimate_min": 5},
                {"title": "Set synchronous=FULL", "kind": "action", "estimate_min": 5},
                {"title": "Read the checkpoint section", "kind": "read", "estimate_min": 10},
            ]
        }
    )
    _, problems, _ = judge("todos", Todos, answer)
    assert problems == ["todos need at least one todo of kind 'output'"]
    payload, problems, _ = judge("todos", Todos, answer, mend=lambda t: rubric.mend_todos(t, OWN))
    assert problems == []
    assert isinstance(payload, Todos) and payload.items[-1].title == OWN
