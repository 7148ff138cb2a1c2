"""The pure parts of ticking and handing todos on: keys, which todos are shown, ticks
added to a view and taken off an edit, and what each task format makes of odd words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import icalendar
from hypothesis import given
from hypothesis import strategies as st

from readdod.items import todos
from readdod.items.models import Artifact, ArtifactMeta
from readdod.tasks import RENDERERS, TaskTodo, taskwarrior, todo_uid, todotxt


def art(kind: str, payload: dict[str, Any], version: int = 1) -> Artifact:
    return Artifact(
        item_id="01A",
        artifact_type=kind,  # type: ignore[arg-type]
        version=version,
        created_by="system",
        run_id="r1",
        meta=ArtifactMeta(run_id="r1"),
        payload=payload,
    )


def todo(title: str, kind: str = "action") -> dict[str, Any]:
    return {"title": title, "kind": kind, "estimate_min": 10}


def test_a_key_ignores_case_width_spacing_and_a_final_full_stop() -> None:
    same = [
        "Try WAL on a copy",
        "  try  wal on a COPY. ",
        "Try\tWAL on a copy!",
        "ＴＲＹ WAL on a copy",
    ]
    assert len(set(todos.keys(same[:1]) + [todos.keys([s])[0] for s in same])) == 1
    assert todos.keys(["Try WAL on a copy"]) != todos.keys(["Try WAL on a disk"])


def test_repeated_words_get_their_own_keys_in_order() -> None:
    found = todos.keys(["Read it", "Write it", "read it.", "READ IT"])
    assert found[0] != found[2] != found[3] and found[2] == f"{found[0]}-2"
    assert found[3] == f"{found[0]}-3"
    assert todos.keys(["Read it"]) == found[:1]


@given(st.lists(st.text(max_size=30), max_size=8))
def test_keys_are_one_per_todo_and_distinct(titles: list[str]) -> None:
    found = todos.keys(titles)
    assert len(found) == len(titles) == len(set(found))


def test_the_card_decides_which_todos_are_shown() -> None:
    items = art("todos", {"items": [todo("a"), todo("b"), todo("c")]})
    card = art("card", {"todos": [todo("b"), todo("a")]})
    assert todos.shown_list({"todos": items}) == items.payload["items"]
    assert todos.shown_list({"todos": items, "card": card}) == card.payload["todos"]
    # A person's card that lists no todos shows none, whatever the todos artifact holds.
    assert todos.shown_list({"todos": items, "card": art("card", {"todos": []})}) is None
    assert todos.shown_list({}) is None
    assert todos.shown_list({"todos": art("todos", {"items": ["not a todo"]})}) is None


def test_ticks_are_added_to_a_view_and_taken_off_an_edit() -> None:
    items = art("todos", {"items": [todo("a"), todo("b")]})
    card = art("card", {"todos": [todo("b"), todo("a")], "title": "t"})
    ticked = {todos.keys(["a"])[0]: "2026-01-01T00:00:00Z"}
    view = todos.with_ticks({"todos": items, "card": card}, ticked)
    assert [t["done"] for t in view["card"].payload["todos"]] == [False, True]
    assert [t["done"] for t in view["todos"].payload["items"]] == [True, False]
    assert "done" not in items.payload["items"][0]  # the stored version is not changed
    listed = todos.shown_todos({"todos": items, "card": card}, ticked)
    assert [(t.index, t.title, t.done, t.done_at) for t in listed] == [
        (1, "b", False, None),
        (2, "a", True, "2026-01-01T00:00:00Z"),
    ]
    assert todos.without_ticks("card", view["card"].payload) == card.payload
    assert todos.without_ticks("todos", view["todos"].payload) == items.payload
    assert todos.without_ticks("summary", {"done": 1}) == {"done": 1}
    assert todos.without_ticks("todos", "not an object") == "not an object"


def task_todo(**changes: Any) -> TaskTodo:
    fields: dict[str, Any] = {
        "uid": todo_uid("01A", "k"),
        "item_id": "01A",
        "key": "k",
        "index": 1,
        "title": "Try WAL, then; write it up",
        "kind": "output",
        "estimate_min": 25,
        "done": False,
        "done_at": None,
        "priority": "P0",
        "url": "https://example.org/a b?q=1",
        "intent": "decide, today",
        "one_liner": "WAL lets readers go on.",
        "card_title": "WAL: a guide",
        "tags": ["db", "two words"],
        "created_at": "2026-01-02T03:04:05.678Z",
        "updated_at": "2026-01-03T03:04:05.678Z",
    }
    return TaskTodo(**(fields | changes))


NOW = datetime(2026, 2, 1, tzinfo=UTC)


def test_a_uid_depends_on_the_item_and_the_key_only() -> None:
    assert todo_uid("01A", "k") == todo_uid("01A", "k")
    assert len({todo_uid("01A", "k"), todo_uid("01B", "k"), todo_uid("01A", "j")}) == 3


def test_ics_keeps_commas_semicolons_and_new_lines_and_marks_completion() -> None:
    odd = task_todo(title="Line one\nline two; with, commas", tags=["a,b"])
    done = task_todo(uid=todo_uid("01A", "j"), done=True, done_at="2026-01-04T00:00:00.5Z")
    cal = icalendar.Calendar.from_ical(RENDERERS["ics"]([odd, done], NOW))
    first, second = cal.walk("VTODO")
    assert str(first["SUMMARY"]) == "Line one\nline two; with, commas"
    categories = first["CATEGORIES"]
    assert isinstance(categories, icalendar.vCategory)
    assert "a,b" in [str(c) for c in categories.cats]
    assert first.decoded("DTSTAMP") == NOW and first.decoded("PRIORITY") == 1
    assert str(second["STATUS"]) == "COMPLETED"
    assert second.decoded("COMPLETED") == datetime(2026, 1, 4, tzinfo=UTC)
    assert second.decoded("PERCENT-COMPLETE") == 100


def test_taskwarrior_maps_priorities_and_completion() -> None:
    got = [
        json.loads(RENDERERS["taskwarrior"]([task_todo(priority=p)], NOW))[0].get("priority")
        for p in ("P0", "P1", "P2", "P3", None)
    ]
    assert got == ["H", "M", "L", None, None]
    done = taskwarrior.task(task_todo(done=True, done_at="2026-01-04T00:00:00Z"))
    assert (done["status"], done["end"]) == ("completed", "20260104T000000Z")
    assert done["tags"] == ["db", "output", "readdod", "two_words"]
    assert done["project"] == "readdod.wal-a-guide"
    notes = [a["description"] for a in done["annotations"]]
    assert notes[0] == "https://example.org/a b?q=1" and "estimate: ~25 min" in notes
    assert len({a["entry"] for a in done["annotations"]}) == len(notes)


def test_todotxt_keeps_one_line_per_todo_whatever_the_words() -> None:
    lines = (
        RENDERERS["todotxt"](
            [
                task_todo(title="x marks\nthe spot"),
                task_todo(title="(A) looks like a priority", priority=None, url=None),
                task_todo(done=True, done_at="2026-01-04T00:00:00Z", priority="P3"),
            ],
            NOW,
        )
        .decode()
        .splitlines()
    )
    assert len(lines) == 3
    assert lines[0].startswith("(A) 2026-01-02 x marks the spot +wal-a-guide @output +db")
    assert "url:https://example.org/a%20b?q=1" in lines[0].split(" ")
    assert lines[1].startswith("2026-01-02 (A) looks like a priority ")
    assert lines[2].startswith("x 2026-01-04 2026-01-02 Try WAL") and lines[2].endswith(" pri:D")
    assert todotxt.line(task_todo()) == lines[0].replace(
        "x marks the spot", "Try WAL, then; write it up"
    )
