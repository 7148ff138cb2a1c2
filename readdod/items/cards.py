"""The card a person sees, composed from the versions the item shows.

Pure: no I/O. A stored card holds copies of its run's key points, score and
todos. When a person edits the summary, score or todos, the card they see
must show that edit, not the copy frozen in the card: each part comes from
the newest word a person gave on it. A person's own card wins over the
parts it copies only while it is newer than their edit of those parts; a
system card never hides a person's edit.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Shown(msgspec.Struct, frozen=True, kw_only=True):
    """One shown version, as composition needs it."""

    created_by: str
    created_at: int
    version: int
    payload: dict[str, Any]


def _wins_over_card(part: Shown, card: Shown) -> bool:
    """Whether ``part`` decides what the card shows of it."""
    if card.created_by != "user":
        return True
    return part.created_by == "user" and part.created_at >= card.created_at


def compose(
    card: Shown,
    *,
    summary: Shown | None = None,
    score: Shown | None = None,
    todos: Shown | None = None,
) -> dict[str, Any]:
    """The card payload a person sees (the stored ``card`` is not changed)."""
    out = dict(card.payload)
    if summary is not None and _wins_over_card(summary, card):
        out["key_points"] = list(summary.payload.get("key_points", out.get("key_points", [])))
        if summary.created_by == "user":
            tl_dr = str(summary.payload.get("tl_dr") or "").strip()
            if tl_dr:
                out["summary"] = tl_dr
                # The machine drew its one-liner from the summary; a person's is their own.
                if card.created_by != "user":
                    out["one_liner"] = tl_dr
    if score is not None and _wins_over_card(score, card):
        out["priority"] = score.payload.get("priority", out.get("priority"))
        out["match_score"] = score.payload.get("match_score", out.get("match_score"))
    if todos is not None and _wins_over_card(todos, card):
        out["todos"] = [dict(t) for t in todos.payload.get("items", [])]
    return out
