"""Todos as todo.txt lines (the format of todotxt.org).

Pure: no I/O. One line a todo: ``x`` and the completion date when ticked,
the priority ``(A)``-``(D)`` from P0-P3 while open, the creation date, the
todo's words, ``+project`` (the card), ``@context`` (the todo's kind), and
``key:value`` pairs for the URL, the item, the todo's stable id and the
estimate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Final
from urllib.parse import quote

from readdod.export.naming import slugify
from readdod.tasks.document import TaskTodo, when

PRIORITY: Final = {"P0": "A", "P1": "B", "P2": "C", "P3": "D"}


#: A word todo.txt would read as a ``key:value`` tag.
_TAG_LIKE: Final = re.compile(r"^([^\s:]+):(\S+)$")


def _words(text: str) -> str:
    """Words on one line (a date always stands before them, so a todo that starts
    with ``x `` or ``(A) `` is not read as a mark). A word of the text that looks like
    ``key:value`` (``uid:…``, ``due:…``, ``t:…``) gets a modifier-letter colon (U+A789),
    so only readdod's own tags are tags: a URL's ``https://`` stays as it is."""
    return " ".join(
        w if "://" in w or not _TAG_LIKE.match(w) else w.replace(":", "\ua789", 1)
        for w in text.split()
    )


def line(todo: TaskTodo) -> str:
    created = when(todo.created_at).date().isoformat()
    parts: list[str] = []
    if todo.done:
        parts += ["x", when(todo.done_at or todo.updated_at).date().isoformat(), created]
    else:
        if todo.priority in PRIORITY:
            parts.append(f"({PRIORITY[todo.priority]})")
        parts.append(created)
    parts.append(_words(todo.title))
    parts.append(f"+{slugify(todo.card_title, 40)}")
    parts.append(f"@{todo.kind}")
    parts += [f"+{slugify(t, 40)}" for t in todo.tags]
    if todo.url:
        parts.append(f"url:{quote(todo.url, safe=':/?#[]@!$&()*+,;=%~-._')}")
    parts.append(f"readdod:{todo.item_id}")
    parts.append(f"uid:{todo.uid}")
    parts.append(f"est:{todo.estimate_min}m")
    if todo.done and todo.priority in PRIORITY:
        parts.append(f"pri:{PRIORITY[todo.priority]}")
    return " ".join(parts)


def render(todos: Sequence[TaskTodo], now: datetime) -> bytes:
    """One line a todo (``now`` is not needed: the same todos give the same file)."""
    del now
    return "".join(f"{line(t)}\n" for t in todos).encode()
