"""Todos handed to task managers: one pure renderer per format.

::

    document     a `get` answer turned into :class:`TaskTodo` rows, with stable ids
    ics          iCalendar VTODOs (RFC 5545), through the icalendar library
    taskwarrior  the JSON that `task import` reads
    todotxt      todo.txt lines

A todo's id (its UID, Taskwarrior uuid) is derived from the item's id and
the todo's key, so exporting again and importing again updates the task a
person already has instead of adding a second one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from readdod.tasks import ics, taskwarrior, todotxt
from readdod.tasks.document import TaskTodo, todo_uid, todos_of

#: Each format's renderer: the todos and the time of the export in, the file's bytes out.
RENDERERS: Final[dict[str, Callable[[Sequence[TaskTodo], datetime], bytes]]] = {
    "ics": ics.render,
    "taskwarrior": taskwarrior.render,
    "todotxt": todotxt.render,
}

__all__ = ["RENDERERS", "TaskTodo", "todo_uid", "todos_of"]
