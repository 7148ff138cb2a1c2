"""The keys at the bottom: those the screen offers now, and no others.

Two lines: the highlighted item's keys (what its state allows), then the
screen's own. Plain text, redrawn only when the keys on offer change
(Textual's ``Footer`` builds a widget per key and restyles them all on every
change, which costs a key press tens of milliseconds on a busy machine).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

#: Actions that act on one item: shown on the first line.
ITEM_ACTIONS = ("op(", "tick(")


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar { height: 2; background: $panel; color: $text; }
    """

    def __init__(self) -> None:
        super().__init__("", id="keys")
        self._shown: tuple[tuple[tuple[str, str], ...], ...] = ()

    def show_keys(self, screen: Screen[Any]) -> None:
        """Show the keys ``screen`` answers to now (its bindings, then the app's)."""
        seen: set[str] = set()
        item: list[tuple[str, str]] = []
        general: list[tuple[str, str]] = []
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.show or not active.enabled or binding.description in seen:
                continue
            seen.add(binding.description)
            line = item if binding.action.startswith(ITEM_ACTIONS) else general
            line.append((self.app.get_key_display(binding), binding.description))
        wanted = (tuple(item), tuple(general))
        if wanted == self._shown:
            return
        self._shown = wanted
        text = Text(no_wrap=True, overflow="ellipsis")
        for n, pairs in enumerate(wanted):
            if n:
                text.append("\n")
            for key, label in pairs:
                text.append(f" {key}", style="bold")
                text.append(f" {label} ")
        self.update(text, layout=False)  # two lines, whatever the keys: no layout
