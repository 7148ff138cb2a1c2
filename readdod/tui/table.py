"""The inbox's table: one page of rows, each line redrawn only when its row changes.

Textual's ``DataTable`` measures every cell of every row added and keys all
its render caches on one change counter, so a page switch costs a measure of
350 cells and every progress tick a repaint of every visible row. Here the
columns have fixed widths, so nothing is measured: a row is a tuple of
strings drawn into one strip, kept until the row, the highlight on it or the
styles change, and changing a row or moving the highlight repaints those
lines only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cells = tuple[str, ...]


class ItemTable(ScrollView, can_focus=True, inherit_bindings=False):
    """Rows keyed by item id under a fixed header; the highlight is :attr:`cursor_row`.

    No keys of its own (the screen moves the highlight, so what it shows about
    the highlighted item changes in the same frame).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"item-table--header", "item-table--cursor"}
    DEFAULT_CSS = """
    ItemTable { background: $surface; color: $foreground; overflow-x: hidden; }
    ItemTable > .item-table--header { text-style: bold; background: $panel; color: $foreground; }
    ItemTable > .item-table--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
        text-style: $block-cursor-blurred-text-style;
    }
    ItemTable:focus > .item-table--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    class Highlighted(Message):
        """The highlight moved to another row (``key`` is None when the table is empty)."""

        def __init__(self, key: str | None) -> None:
            super().__init__()
            self.key = key

    class Selected(Message):
        """A click on the highlighted row: open it."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._headings: Cells = ()
        self._widths: tuple[int, ...] = ()
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        self._rows: dict[str, Cells] = {}
        self.cursor_row = 0
        #: Drawn lines: (cells, highlighted, width) -> strip; emptied when styles change.
        self._strips: dict[tuple[Cells, bool, int], Strip] = {}
        self._styles: tuple[Style, Style, Style] | None = None

    # --- what the table holds --------------------------------------------------

    def set_columns(self, columns: Sequence[tuple[str, int]]) -> None:
        """The columns' headings and widths (cells are cut or padded to the width)."""
        self._headings = tuple(heading for heading, _ in columns)
        self._widths = tuple(width for _, width in columns)
        self._strips.clear()
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def keys(self) -> list[str]:
        return list(self._keys)

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    def highlighted_key(self) -> str | None:
        return self._keys[self.cursor_row] if self._keys else None

    def set_rows(self, rows: Sequence[tuple[str, Cells]], *, keep: str | None = None) -> None:
        """Show these rows instead; the highlight stays on ``keep`` if it is among them."""
        self._keys = [key for key, _ in rows]
        self._index = {key: n for n, key in enumerate(self._keys)}
        self._rows = dict(rows)
        self.cursor_row = self._index.get(keep, 0) if keep is not None else 0
        self.virtual_size = Size(0, len(self._keys) + 1)
        self._into_view()
        self.refresh()
        self.post_message(self.Highlighted(self.highlighted_key()))

    def update_row(self, key: str, cells: Cells) -> None:
        """Change one row; only its line is repainted (if it is in view)."""
        if key not in self._index or self._rows[key] == cells:
            return
        self._rows[key] = cells
        self._refresh_row(self._index[key])

    def move_cursor(self, *, row: int) -> None:
        """Highlight row ``row`` (kept within the table), scrolled into view."""
        row = max(0, min(row, len(self._keys) - 1))
        if row == self.cursor_row or not self._keys:
            return
        was, self.cursor_row = self.cursor_row, row
        if self._into_view():
            self.refresh()
        else:
            self._refresh_row(was)
            self._refresh_row(row)
        self.post_message(self.Highlighted(self.highlighted_key()))

    # --- drawing -----------------------------------------------------------------

    @property
    def rows_in_view(self) -> int:
        """How many rows the table shows at once (its height less the header)."""
        return max(1, self.scrollable_content_region.height - 1)

    def _into_view(self) -> bool:
        """Scroll so the highlighted row shows; True if it scrolled."""
        top = round(self.scroll_offset.y)
        if self.cursor_row < top:
            target = self.cursor_row
        elif self.cursor_row >= top + self.rows_in_view:
            target = self.cursor_row - self.rows_in_view + 1
        else:
            return False
        self.scroll_to(y=target, animate=False, immediate=True)
        return True

    def _refresh_row(self, index: int) -> None:
        y = index - round(self.scroll_offset.y) + 1
        if 1 <= y <= self.rows_in_view:
            self.refresh(Region(0, y, self.size.width, 1))

    def notify_style_update(self) -> None:
        """Styles changed (focus, theme): draw every line afresh."""
        super().notify_style_update()
        self._styles = None
        self._strips.clear()

    def _get_styles(self) -> tuple[Style, Style, Style]:
        if self._styles is None:
            base = self.rich_style
            self._styles = (
                base,
                base + self.get_component_rich_style("item-table--header"),
                base + self.get_component_rich_style("item-table--cursor"),
            )
        return self._styles

    def _line(self, cells: Cells, style: Style, width: int) -> Strip:
        text = "".join(
            f" {set_cell_size(cell, w)} " for cell, w in zip(cells, self._widths, strict=False)
        )
        return Strip([Segment(set_cell_size(text, width), style)], width)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base, header, cursor = self._get_styles()
        if y == 0:
            return self._line(self._headings, header, width)
        index = round(self.scroll_offset.y) + y - 1
        if index >= len(self._keys):
            return Strip.blank(width, base)
        cells = self._rows[self._keys[index]]
        lit = index == self.cursor_row
        drawn = self._strips.get((cells, lit, width))
        if drawn is None:
            drawn = self._line(cells, cursor if lit else base, width)
            if len(self._strips) > 4 * max(64, len(self._keys)):
                self._strips.clear()  # rows that are gone: start afresh
            self._strips[(cells, lit, width)] = drawn
        return drawn

    # --- the mouse -----------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = round(self.scroll_offset.y) + offset.y - 1
        if row >= len(self._keys):
            return
        if row == self.cursor_row:
            self.post_message(self.Selected(self._keys[row]))
        else:
            self.move_cursor(row=row)
