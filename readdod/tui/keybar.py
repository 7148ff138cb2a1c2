"""The line of keys at the bottom: those the screen offers now, and no others.

One line of text, redrawn only when the keys on offer change. (Textual's
``Footer`` builds a widget per key and restyles them all on every change,
which costs a key press tens of milliseconds on a busy machine.)
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar { height: 1; background: $panel; color: $text; }
    """

    def __init__(self) -> None:
        super().__init__("", id="keys")
        self._shown: tuple[tuple[str, str], ...] = ()

    def show_keys(self, screen: Screen[Any]) -> None:
        """Show the keys ``screen`` answers to now (its bindings, then the app's)."""
        seen: set[str] = set()
        pairs: list[tuple[str, str]] = []
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.show or not active.enabled or binding.description in seen:
                continue
            seen.add(binding.description)
            pairs.append((self.app.get_key_display(binding), binding.description))
        wanted = tuple(pairs)
        if wanted == self._shown:
            return
        self._shown = wanted
        line = Text(no_wrap=True, overflow="ellipsis")
        for key, label in wanted:
            line.append(f" {key}", style="bold")
            line.append(f" {label} ")
        self.update(line)
