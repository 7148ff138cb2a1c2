"""A line of text whose height never changes: updating it costs a repaint, never a layout.

``Static.update`` lays the whole screen out again by default (the new text
might change the widget's size); for the top line, the line under the list
and the key line the size is fixed by their CSS, so a layout is wasted work
on every key, and an unchanged text needs no repaint at all.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class FixedLine(Static):
    def __init__(self, text: str | Text = "", *, id: str | None = None) -> None:
        super().__init__(text, id=id)
        self._text: str | Text = text

    def show(self, text: str | Text) -> None:
        """Show ``text``, repainting only if it differs from what is shown."""
        if text == self._text:
            return
        self._text = text
        self.update(text, layout=False)
