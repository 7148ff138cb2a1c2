"""Ticking a todo done, or taking the tick back: one unit of work each.

A tick changes no status: it is a person's note on what the item shows,
kept by the todo's key (:mod:`readdod.items.todos`), logged as an event and told
to ``watch`` as ``todo.done`` or ``todo.undone``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from readdod.core.runs import shown_run
from readdod.core.unit import UnitOfWork, Units, Work, dumps
from readdod.errors import ErrorCode, InvalidTransition, ValidationFailed
from readdod.items import todos as ticks
from readdod.items.models import Artifact
from readdod.items.states import Status, Trigger, refusal_code
from readdod.runtime.clock import iso
from readdod.status.health import TodoCounts
from readdod.store.rows import ArtifactRow
from readdod.wire.views import item_view, shown_view


def marks_shown(marks: Mapping[str, int]) -> dict[str, str | None]:
    """A store's ticks (key -> ms) as views give them (key -> ISO time)."""
    return {key: iso(at) for key, at in marks.items()}


def ticked(rows: dict[str, ArtifactRow], marks: Mapping[str, int]) -> dict[str, Any]:
    """What an item shows, its todos ticked: the ``artifacts`` and ``todos`` of ``get``."""
    shown = shown_view(rows)
    return {
        "artifacts": ticks.with_ticks(shown, marks),
        "todos": ticks.shown_todos(shown, marks_shown(marks)),
    }


def ticked_counts(tx: UnitOfWork) -> TodoCounts:
    """The ticks on todos the items show now (a tick on words a regenerated card
    dropped is kept, in case they come back, but not counted)."""
    done = items = 0
    for item_id in tx.items_with_todo_marks():
        row = tx.item(item_id)
        if row is None:
            continue
        rows = tx.shown_artifacts(item_id, shown_run(row))
        # Only what decides the todos shown: the card and the todos it is composed from.
        parts: dict[str, ArtifactRow] = {k: rows[k] for k in ("card", "todos") if k in rows}
        listed = ticks.shown_list(shown_view(parts)) or []
        marks = tx.todo_marks(item_id)
        n = sum(key in marks for key in ticks.keys([str(t.get("title", "")) for t in listed]))
        done += n
        items += n > 0
    return TodoCounts(done=done, items=items)


class TodoTicks:
    """``todo done ID N`` and ``todo undo ID N``."""

    def __init__(self, units: Units) -> None:
        self.units = units
        self.clock = units.clock

    async def tick(self, item_id: str, index: int, done: bool) -> dict[str, Any]:
        """Mark the ``index``-th todo the item shows (1-based) done or open again;
        the item, what it shows and its ticked todos. Ticking twice changes nothing."""

        def unit(work: Work) -> dict[str, Any]:
            tx = work.tx
            row = work.row(item_id)
            run_id = shown_run(row)
            shown: dict[str, Artifact] = shown_view(tx.shown_artifacts(item_id, run_id))
            listed = ticks.shown_list(shown)
            if not listed:
                src = Status(row.status)
                raise InvalidTransition(
                    f"item {item_id} is {src} and shows no todos yet; tick them once it is"
                    f" READY (`readdod show {item_id}` tells how it goes)",
                    src=src,
                    dst=src,
                    code=ErrorCode(refusal_code(src)),
                )
            if not 1 <= index <= len(listed):
                raise ValidationFailed(
                    f"item {item_id} shows {len(listed)} todos, numbered 1 to {len(listed)};"
                    f" there is no todo {index}"
                )
            key = ticks.keys([str(t.get("title", "")) for t in listed])[index - 1]
            now = self.clock.now_ms()
            changed = tx.mark_todo(item_id, key, now) if done else tx.unmark_todo(item_id, key)
            if changed:
                detail = {"op": "todo", "index": index, "key": key, "done": done}
                tx.insert_event(now, item_id, None, "todo", None, None, Trigger.USER, dumps(detail))
                work.touch(row, updated_at=now)
                row = work.row(item_id)
                title = str(listed[index - 1].get("title", ""))
                if done:
                    work.note("todo.done", item_id=item_id, index=index, key=key, title=title)
                else:
                    work.note("todo.undone", item_id=item_id, index=index, key=key, title=title)
            marks = tx.todo_marks(item_id)
            return {"item": item_view(row), **ticked(tx.shown_artifacts(item_id, run_id), marks)}

        return await self.units.commit(unit)
