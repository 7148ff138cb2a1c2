"""The inbox's table on its own: fixed-width lines, each drawn once, the highlight kept in view."""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from textual.app import App, ComposeResult

from readdod.tui.table import Cells, ItemTable

pytestmark = pytest.mark.anyio

COLUMNS = [("STATUS", 8), ("TITLE", 12), ("AGE", 4)]


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield ItemTable(id="table")

    def on_mount(self) -> None:
        self.query_one(ItemTable).set_columns(COLUMNS)

    def on_item_table_highlighted(self, msg: ItemTable.Highlighted) -> None:
        self.highlighted.append(msg.key)


def rows(n: int) -> list[tuple[str, Cells]]:
    return [(f"id{i}", ("ready", f"title {i}", f"{i}m")) for i in range(n)]


async def test_lines_have_the_columns_widths_whatever_the_text() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.query_one(ItemTable)
        table.set_rows([("a", ("active", "日本語のとても長い題名", "3d")), ("b", ("x", "", ""))])
        await pilot.pause()
        width = table.scrollable_content_region.width
        header, first, second = (table.render_line(y).text for y in range(3))
        assert header.startswith(" STATUS    TITLE         AGE  ")
        assert first.startswith(" active    日本語のとて  3d   ")  # cut at 12 cells, not characters
        assert second.startswith(" x" + " " * 28)
        assert all(cell_len(line) == width for line in (header, first, second))
        assert table.render_line(5).text.strip() == ""  # below the last row: blank


async def test_a_changed_row_is_drawn_again_and_the_others_are_kept() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.query_one(ItemTable)
        table.set_rows(rows(4))
        await pilot.pause()
        before = [table.render_line(y) for y in range(1, 5)]
        table.update_row("id2", ("failed", "title 2", "2m"))
        table.update_row("gone", ("x", "y", "z"))  # not on the page: ignored
        after = [table.render_line(y) for y in range(1, 5)]
        assert [a is b for a, b in zip(before, after, strict=True)] == [True, True, False, True]
        assert "failed" in after[2].text

        # Moving the highlight draws the two rows it leaves and reaches, no others.
        table.move_cursor(row=1)
        moved = [table.render_line(y) for y in range(1, 5)]
        assert [a is b for a, b in zip(after, moved, strict=True)] == [False, False, True, True]


async def test_the_highlight_is_kept_on_its_row_and_in_view() -> None:
    app = TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.query_one(ItemTable)
        table.set_rows(rows(50))
        await pilot.pause()
        assert table.highlighted_key() == "id0" and table.rows_in_view == 7

        table.move_cursor(row=40)
        await pilot.pause()
        assert table.highlighted_key() == "id40"
        bottom = table.render_line(table.rows_in_view).text
        assert "title 40" in bottom  # scrolled so the highlighted row is the last one shown
        table.move_cursor(row=99)  # past the end: the last row
        assert table.cursor_row == 49
        table.move_cursor(row=-5)
        assert table.cursor_row == 0
        await pilot.pause()
        assert "title 0" in table.render_line(1).text

        # A new page keeps the highlight on the same item if it is there, else the first row.
        table.move_cursor(row=3)
        table.set_rows(rows(10)[2:], keep="id3")
        assert table.highlighted_key() == "id3" and table.cursor_row == 1
        table.set_rows(rows(2), keep="id3")
        assert table.highlighted_key() == "id0"
        table.set_rows([])
        assert table.highlighted_key() is None and table.row_count == 0
        table.move_cursor(row=1)  # nothing to highlight: no error, nothing moves
        await pilot.pause()
        assert app.highlighted[-1] is None and "id40" in app.highlighted
