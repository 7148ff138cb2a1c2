"""The key map, in one place: the help screen shows it and docs/usage.md describes it."""

from __future__ import annotations

from typing import Final

from readdod.tui.operations import OPERATIONS

#: (keys, what they do, where): every key the TUI answers to.
GENERAL: Final = (
    ("↑ ↓  j k", "move in the list / scroll the card", "inbox, card"),
    ("PgUp PgDn", "a screen up / down the list; Home End: first / last", "inbox"),
    ("Enter", "open the highlighted item's card", "inbox"),
    ("] [", "next / previous page of the list", "inbox"),
    ("/", "search: words, #tag, P0-P3, is:GROUP; Esc clears", "inbox"),
    ("f", "filter: all, ready, active, failed, shipped, archived", "inbox"),
    ("c", "capture a URL or a text, with its intent and tags", "everywhere"),
    ("P", "pause / resume the daemon", "everywhere"),
    ("1-9", "tick or untick todo N", "card"),
    ("Esc", "back to the inbox (or close a form)", "card, forms"),
    ("?", "this key map", "everywhere"),
    ("q", "quit", "everywhere"),
)


def lines() -> list[str]:
    """The key map as text: general keys, then the item keys (shown only when allowed)."""
    out = [f"{keys:<10} {what}" for keys, what, _ in GENERAL]
    out.append("")
    out.append("On an item (inbox and card), only when its state allows it:")
    out.extend(f"{op.key:<10} {op.label}" for op in OPERATIONS)
    return out
