"""Todos a person ticks: which todos an item shows, their keys, and their done state.

Pure: no I/O. A tick is stored against a todo's *key*, a hash of its
normalised text, not its position: a regenerated card that keeps a todo's
words keeps its tick, wherever the todo moved, and a todo whose words
changed starts open (case, spacing and final punctuation aside). Two todos
of one card with the same words are told apart by their order (``<hash>-2``
for the second).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from readdod.items.models import Artifact

#: Hex digits of the text's SHA-256 a key keeps: collisions among one card's todos are moot.
KEY_HEX: Final = 16
_SPACE = re.compile(r"\s+")
#: What a todo's words may end with and still be the same todo.
_TRAILING: Final = " .!;:,\u3002"


class ShownTodo(msgspec.Struct, kw_only=True, frozen=True):
    """One todo as an item shows it, with its tick (``get``'s ``todos``)."""

    #: 1-based, in the order shown: what ``todo done ID N`` names.
    index: int
    key: str
    title: str
    kind: str
    estimate_min: int
    done: bool
    #: When it was ticked (ISO 8601 UTC), if it is.
    done_at: str | None = None


def normalise(title: str) -> str:
    """The words of a todo as its key sees them: case, width, spacing and final
    punctuation do not make another todo."""
    text = unicodedata.normalize("NFKC", title).casefold()
    return _SPACE.sub(" ", text).strip().rstrip(_TRAILING)


def keys(titles: Sequence[str]) -> list[str]:
    """Each todo's key, in order; a repeated text gets its occurrence (``-2``, ...)."""
    seen: dict[str, int] = {}
    out = []
    for title in titles:
        digest = hashlib.sha256(normalise(title).encode()).hexdigest()[:KEY_HEX]
        seen[digest] = seen.get(digest, 0) + 1
        out.append(digest if seen[digest] == 1 else f"{digest}-{seen[digest]}")
    return out


def shown_list(shown: Mapping[str, Artifact]) -> list[dict[str, Any]] | None:
    """The todos an item shows, as the card composed from a person's edits lists
    them (or the todos artifact before a card exists); None when it shows none."""
    # The card, once there is one, says which todos are shown (a person's may list none).
    art, field = (shown["card"], "todos") if "card" in shown else (shown.get("todos"), "items")
    listed = art.payload.get(field) if art is not None and isinstance(art.payload, dict) else None
    if isinstance(listed, list) and listed and all(isinstance(t, dict) for t in listed):
        return listed
    return None


def _titles(todos: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(t.get("title", "")) for t in todos]


def shown_todos(shown: Mapping[str, Artifact], marks: Mapping[str, str | None]) -> list[ShownTodo]:
    """The todos an item shows, each with its tick; ``marks`` maps a ticked key to
    when it was ticked."""
    todos = shown_list(shown) or []
    return [
        ShownTodo(
            index=n,
            key=key,
            title=str(t.get("title", "")),
            kind=str(t.get("kind", "")),
            estimate_min=int(t.get("estimate_min") or 0),
            done=key in marks,
            done_at=marks.get(key),
        )
        for n, (t, key) in enumerate(zip(todos, keys(_titles(todos)), strict=True), start=1)
    ]


def _ticked(todos: Any, marks: Mapping[str, object]) -> Any:
    if not isinstance(todos, list) or not all(isinstance(t, dict) for t in todos):
        return todos
    return [{**t, "done": key in marks} for t, key in zip(todos, keys(_titles(todos)), strict=True)]


def with_ticks(shown: Mapping[str, Artifact], marks: Mapping[str, object]) -> dict[str, Artifact]:
    """``shown`` with ``done: true|false`` on each todo of the card and of the todos
    artifact (the stored versions are not changed)."""
    out = dict(shown)
    for kind, field in (("card", "todos"), ("todos", "items")):
        art = out.get(kind)
        if art is not None and isinstance(art.payload, dict) and field in art.payload:
            payload = {**art.payload, field: _ticked(art.payload[field], marks)}
            out[kind] = msgspec.structs.replace(art, payload=payload)
    return out


def without_ticks(artifact_type: str, payload: Any) -> Any:
    """A payload as a person edits it, without the ``done`` that ``get`` adds to each
    todo: an edit of what ``get`` showed is not refused for a field it did not write."""
    field = {"card": "todos", "todos": "items"}.get(artifact_type)
    if field is None or not isinstance(payload, dict):
        return payload
    todos = payload.get(field)
    if not isinstance(todos, list):
        return payload
    return {
        **payload,
        field: [
            {k: v for k, v in t.items() if k != "done"} if isinstance(t, dict) else t for t in todos
        ],
    }
