"""A card's todos as task managers need them, from what `get` answers (pure).

Everything a renderer writes comes from here, so the three formats agree on
ids, priorities and texts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from readdod.text.controls import body, single_line

#: The namespace of readdod's todo ids (UUID v5 of "<item id>/<todo key>"): fixed forever,
#: or every task a person imported would be duplicated by the next import.
TODO_NAMESPACE: Final = uuid.UUID("6f1c2a53-8d4e-5b7a-9c1e-3a0f4d2b8e71")
#: Card priorities in the order task managers rank them.
PRIORITIES: Final = ("P0", "P1", "P2", "P3")


class TaskTodo(msgspec.Struct, kw_only=True, frozen=True):
    """One todo of one card, with what a task needs around it."""

    uid: str
    item_id: str
    key: str
    index: int
    title: str
    kind: str
    estimate_min: int
    done: bool
    #: ISO 8601 UTC, when it was ticked.
    done_at: str | None
    #: P0 (most urgent) to P3; None when the card has none.
    priority: str | None
    url: str | None
    intent: str
    one_liner: str
    card_title: str
    tags: list[str]
    created_at: str
    updated_at: str


def todo_uid(item_id: str, key: str) -> str:
    """The id a todo keeps across exports: the same item and todo words, the same id."""
    return str(uuid.uuid5(TODO_NAMESPACE, f"{item_id}/{key}"))


def todos_of(got: Mapping[str, Any]) -> list[TaskTodo]:
    """The todos of a `get` answer (its ``item``, ``artifacts`` and ``todos``)."""
    item = got["item"]
    card = (got.get("artifacts") or {}).get("card") or {}
    payload = card.get("payload") or {}
    source = payload.get("source") or {}
    priority = payload.get("priority") or item.get("priority")
    given = (*(item.get("tags") or []), *(payload.get("tags") or []))
    tags = sorted({single_line(t) for t in given})
    url = source.get("url") or item.get("final_url") or item.get("url")
    # Every field that reaches an export is one line with no control character, whatever
    # the store holds (a row from before capture cleaned them, an engine's words).
    return [
        TaskTodo(
            uid=todo_uid(item["id"], t["key"]),
            item_id=item["id"],
            key=t["key"],
            index=t["index"],
            title=single_line(t["title"]),
            kind=single_line(t["kind"]),
            estimate_min=t["estimate_min"],
            done=t["done"],
            done_at=t.get("done_at"),
            priority=priority if priority in PRIORITIES else None,
            url=single_line(url) if url else None,
            intent=single_line(item.get("intent") or ""),
            one_liner=body(payload.get("one_liner") or ""),
            card_title=single_line(payload.get("title") or item.get("title") or item["id"]),
            tags=tags,
            created_at=item["created_at"],
            updated_at=item["updated_at"],
        )
        for t in got.get("todos") or []
    ]


def when(stamp: str) -> datetime:
    """An ISO 8601 UTC stamp of the wire as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)


def description(todo: TaskTodo) -> str:
    """The longer text a task carries: why it was saved, and what the card says."""
    facts = [f"From: {todo.card_title}", f"Estimate: ~{todo.estimate_min} min ({todo.kind})"]
    if todo.url:
        facts.append(todo.url)
    facts.append(f"readdod: {todo.item_id} todo {todo.index}")
    intent = f"Intent: {todo.intent}" if todo.intent else ""
    return "\n\n".join(p for p in (intent, todo.one_liner, "\n".join(facts)) if p)
