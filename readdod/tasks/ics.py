"""Todos as an iCalendar file of VTODOs (RFC 5545), written by the icalendar library.

Pure: no I/O. Each VTODO's UID is the todo's stable id, so a calendar that
imports the file again updates its tasks; LAST-MODIFIED and SEQUENCE move
when a tick does, so a client that compares them takes the newer one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

import icalendar

from readdod.tasks.document import TaskTodo, description, when

PRODID: Final = "-//readdod//todos//EN"
#: RFC 5545 §3.8.1.9: 1 is the highest, 9 the lowest, 0 undefined.
PRIORITY: Final = {"P0": 1, "P1": 3, "P2": 5, "P3": 9}


def vtodo(todo: TaskTodo, now: datetime) -> icalendar.Todo:
    """One todo as a VTODO."""
    created = when(todo.created_at)
    done_at = when(todo.done_at) if todo.done and todo.done_at else None
    modified = max(filter(None, (when(todo.updated_at), done_at)))
    out = icalendar.Todo()
    out.add("uid", todo.uid)
    out.add("dtstamp", now)
    out.add("created", created)
    out.add("last-modified", modified)
    # Seconds since the item was made: grows with each change a client should prefer.
    out.add("sequence", max(0, int((modified - created).total_seconds())))
    out.add("summary", todo.title)
    out.add("description", description(todo))
    out.add("priority", PRIORITY.get(todo.priority or "", 0))
    if todo.url:
        out.add("url", todo.url)
    out.add("categories", ["readdod", todo.kind, *todo.tags])
    if done_at is not None:
        out.add("status", "COMPLETED")
        out.add("completed", done_at)
        out.add("percent-complete", 100)
    else:
        out.add("status", "NEEDS-ACTION")
    return out


def render(todos: Sequence[TaskTodo], now: datetime) -> bytes:
    """The calendar: every todo, in the order given."""
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("x-wr-calname", "readdod todos")
    for todo in todos:
        cal.add_component(vtodo(todo, now))
    return bytes(cal.to_ical())
