"""Todos as the JSON array `task import` reads (Taskwarrior 2.6 and 3).

Pure: no I/O. The uuid is the todo's stable id, so importing again updates
the task instead of adding one; a ticked todo is ``completed`` with its
``end``. The URL and the estimate ride as annotations, which every
Taskwarrior shows without configuration (a UDA would need one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import msgspec

from readdod.export.naming import slugify
from readdod.tasks.document import TaskTodo, when

#: Taskwarrior has three priorities; a P3 card's todos have none.
PRIORITY: Final = {"P0": "H", "P1": "M", "P2": "L"}
#: The project every todo sits under; each card is a sub-project of it.
PROJECT: Final = "readdod"
_NOT_TAG = re.compile(r"[^\w.-]+")


def stamp(at: datetime) -> str:
    """Taskwarrior's date form: 20261127T080511Z."""
    return at.strftime("%Y%m%dT%H%M%SZ")


def _tag(text: str) -> str:
    return _NOT_TAG.sub("_", text).strip("_")


def task(todo: TaskTodo) -> dict[str, Any]:
    """One todo as a Taskwarrior task."""
    entry = stamp(when(todo.created_at))
    out: dict[str, Any] = {
        "uuid": todo.uid,
        "description": " ".join(todo.title.split()),
        "entry": entry,
        "modified": stamp(when(todo.updated_at)),
        "project": f"{PROJECT}.{slugify(todo.card_title, 40)}",
        "tags": sorted({t for t in (_tag(x) for x in ["readdod", todo.kind, *todo.tags]) if t}),
        "status": "completed" if todo.done else "pending",
    }
    if todo.priority in PRIORITY:
        out["priority"] = PRIORITY[todo.priority]
    if todo.done:
        out["end"] = stamp(when(todo.done_at or todo.updated_at))
    notes = [f"estimate: ~{todo.estimate_min} min"]
    if todo.url:
        notes.insert(0, todo.url)
    if todo.intent:
        notes.append(f"intent: {' '.join(todo.intent.split())}")
    notes.append(f"readdod {todo.item_id} todo {todo.index}")
    # One second apart: Taskwarrior keys annotations by their entry time.
    base = when(todo.created_at).timestamp()
    out["annotations"] = [
        {
            "entry": stamp(datetime.fromtimestamp(base + n, when(todo.created_at).tzinfo)),
            "description": note,
        }
        for n, note in enumerate(notes)
    ]
    return out


def render(todos: Sequence[TaskTodo], now: datetime) -> bytes:
    """A JSON array of tasks, one todo each (``now`` is not needed: the tasks carry
    their own times, so the same todos give the same file)."""
    del now
    return msgspec.json.format(msgspec.json.encode([task(t) for t in todos]), indent=2) + b"\n"
