"""The inbox: one page of items at a time, kept current from ``watch``.

The list is paged by the daemon's cursor (newest first, :attr:`Host.page_size`
rows a page): the table never holds more than one page, however many items
there are. Events about items on the page change their rows in place (status,
progress), redrawn at most every :data:`REDRAW_S`, so a burst of events costs
one redraw; what an event does not carry (a new score, a title) is read with
``get`` for those rows only, a few times a second at most.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from readdod.errors import ReaddodError
from readdod.items.states import FAILED, Status
from readdod.tui import filters, operations, rows
from readdod.tui.card import CardScreen
from readdod.tui.host import Host, state_line
from readdod.tui.keybar import KeyBar
from readdod.tui.line import FixedLine
from readdod.tui.progress import Progress, from_get
from readdod.tui.table import ItemTable

#: How often rows that events changed are redrawn: a burst of events costs one redraw.
REDRAW_S = 0.1
#: How often rows marked stale are fetched again, and ages redrawn.
FLUSH_S = 0.25
AGES_S = 10.0
#: How long a key waits for its page before what it changed is shown without it.
STATE_LATE_S = 0.015


def _op_bindings() -> list[BindingType]:
    return [Binding(op.key, f"op('{op.name}')", op.label) for op in operations.OPERATIONS]


#: Events that change what an item's row shows beyond its progress (read again with get).
_ITEM_NEWS: Final = frozenset(
    {"item.transition", "retry.scheduled", "artifact.edited", "export.failed"}
)


class InboxScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "open", show=False),  # in the key map (?), not the key line
        Binding("slash", "search", "search"),
        Binding("f", "filter", "filter"),
        Binding("right_square_bracket", "page(1)", "next page", show=False),
        Binding("left_square_bracket", "page(-1)", "prev page", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("pagedown", "cursor_page(1)", "screen down", show=False),
        Binding("pageup", "cursor_page(-1)", "screen up", show=False),
        Binding("home", "cursor_to(0)", "first", show=False),
        Binding("end", "cursor_to(-1)", "last", show=False),
        *_op_bindings(),
    ]
    DEFAULT_CSS = """
    InboxScreen #top { height: 1; background: $primary; color: $text; }
    InboxScreen ItemTable { height: 1fr; }
    InboxScreen #detail { height: 1; color: $text-muted; }
    InboxScreen #search { display: none; height: 3; }
    InboxScreen #search.shown { display: block; }
    """

    def __init__(self, host: Host) -> None:
        super().__init__()
        self.host = host
        self.filter = filters.Filter()
        #: The cursor each page before the current one started from (None: the first page).
        self.cursors: list[str | None] = [None]
        self.next_cursor: str | None = None
        self.items: dict[str, dict[str, Any]] = {}
        self.progress: dict[str, Progress] = {}
        self.shown: dict[str, tuple[str, ...]] = {}
        self.stale: set[str] = set()
        #: Batches of events taken so far, and the batch that last touched each item: an
        #: answer asked before an item's last event is out of date for that item.
        self.news = 0
        self.touched: dict[str, int] = {}
        #: Rows events changed since the last redraw.
        self.changed: set[str] = set()
        self.reload_wanted = False
        self.generation = 0
        #: The load whose page is on show (equal to :attr:`generation` once it has come).
        self.shown_generation = 0
        self.loaded = False
        #: The item whose card is being read to open it, and whether events touched it since.
        self._opening: str | None = None
        self._opening_touched = False
        self._card: CardScreen | None = None
        #: The highlighted item's (status, has a card): what decides the keys on offer.
        self._offer: tuple[str, bool] | None = None

    def compose(self) -> ComposeResult:
        yield FixedLine(state_line(self.host, "inbox"), id="top")
        yield ItemTable(id="table")
        yield Input(
            placeholder="words  #tag  P1  is:ready   (Enter applies, Esc clears)", id="search"
        )
        yield FixedLine("", id="detail")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(ItemTable)
        title = self._title_width()
        table.set_columns([(heading, width or title) for _, heading, width in rows.COLUMNS])
        table.focus()
        self.load_page()
        self.set_interval(REDRAW_S, self.redraw_changed)
        self.set_interval(FLUSH_S, self.flush)
        self.set_interval(AGES_S, self.redraw_ages)
        self.query_one(KeyBar).show_keys(self)

    def _title_width(self) -> int:
        fixed = sum(w for _, _, w in rows.COLUMNS) + 2 * len(rows.COLUMNS)
        return max(10, self.app.size.width - fixed - 1)

    # --- the page ----------------------------------------------------------

    def page_label(self) -> str:
        more = "+" if self.next_cursor else ""
        return f"{self.filter.describe()} · page {len(self.cursors)}{more}"

    def show_state(self) -> None:
        line = state_line(self.host, f"inbox · {self.page_label()}")
        self.query_one("#top", FixedLine).show(line)

    def load_page(self) -> None:
        """Read the current page again in a worker; an older answer on its way is dropped."""
        self.generation += 1
        self._load(self.generation, list(self.cursors), self.filter, self.news)

    @work(thread=True, group="page", exclusive=True, exit_on_error=False)
    def _load(
        self, gen: int, cursors: list[str | None], wanted: filters.Filter, asked: int
    ) -> None:
        params = {**wanted.params(), "limit": self.host.page_size}
        if cursors[-1] is not None:
            params["cursor"] = cursors[-1]
        try:
            page = self.host.link.call("list", params)
        except ReaddodError as exc:
            self.app.call_from_thread(self._page_failed, exc)
            return
        active = [i["id"] for i in page["items"] if rows.is_active(i)]
        try:
            got = self.host.link.calls([("get", {"id": i}) for i in active]) if active else []
        except ReaddodError:
            got = []  # the page still shows; the progress bars fill in from events
        progress = {g["item"]["id"]: from_get(g) for g in got}
        self.app.call_from_thread(self.show_page, gen, page, progress, asked)

    def _page_failed(self, exc: ReaddodError) -> None:
        self.host.say(f"could not list the items: {exc.message}", error=True)

    def show_page(
        self, gen: int, page: dict[str, Any], progress: dict[str, Progress], asked: int
    ) -> None:
        """A page as listed when :attr:`news` was ``asked``; an item an event has
        touched since keeps what the event said, and is read again."""
        if gen != self.generation:
            return  # a newer load is on its way
        self.shown_generation = gen
        keep = self.highlighted_id()
        items = {i["id"]: i for i in page["items"]}
        newer = {i for i in items if self.touched.get(i, -1) > asked}
        for item_id in newer & self.items.keys():
            items[item_id] = self.items[item_id]
        self.items = items
        self.progress = {k: v for k, v in self.progress.items() if k in self.items}
        self.progress.update((k, v) for k, v in progress.items() if k not in newer)
        self.next_cursor = page.get("next_cursor")
        self.stale = newer
        now = self.host.clock.now_ms()
        self.shown = {
            item_id: rows.cells(item, self.progress.get(item_id), now)
            for item_id, item in self.items.items()
        }
        self.query_one(ItemTable).set_rows(list(self.shown.items()), keep=keep)
        self.loaded = True
        self.show_state()
        self._highlighted()

    def highlighted_id(self) -> str | None:
        return self.query_one(ItemTable).highlighted_key()

    def highlighted(self) -> dict[str, Any] | None:
        item_id = self.highlighted_id()
        return self.items.get(item_id) if item_id else None

    def on_item_table_highlighted(self, _: ItemTable.Highlighted) -> None:
        self._highlighted()

    def _highlighted(self) -> None:
        item = self.highlighted()
        self.query_one("#detail", FixedLine).show(rows.detail(item) if item else "no items")
        # The footer is rebuilt only when the keys on offer change, not on every move.
        offer = None if item is None else (item["status"], self._has_card(item))
        if offer != self._offer:
            self._offer = offer
            self.query_one(KeyBar).show_keys(self)

    @staticmethod
    def _has_card(item: dict[str, Any]) -> bool:
        return item["status"] == Status.READY or bool(item.get("ready_run_id"))

    def _redraw(self, item_id: str) -> None:
        item = self.items.get(item_id)
        if item is None:
            return
        cells = rows.cells(item, self.progress.get(item_id), self.host.clock.now_ms())
        old = self.shown.get(item_id)
        if cells == old:
            return
        self.query_one(ItemTable).update_row(item_id, cells)
        self.shown[item_id] = cells
        if item_id == self.highlighted_id():
            self._highlighted()

    def redraw_ages(self) -> None:
        for item_id in list(self.items):
            self._redraw(item_id)

    # --- live ------------------------------------------------------------------

    def take_events(self, events: list[dict[str, Any]]) -> None:
        changed = self.changed
        self.news += 1
        for ev in events:
            kind = ev.get("event", "")
            item_id = ev.get("item_id")
            data = ev.get("data") or {}
            if kind == "item.captured" and len(self.cursors) == 1:
                self.reload_wanted = True
            if item_id is not None and item_id == self._opening:
                self._opening_touched = True
            if item_id is None:
                continue
            if kind in _ITEM_NEWS:
                self.touched[item_id] = self.news
            if item_id not in self.items:
                continue
            item = self.items[item_id]
            if kind == "item.transition" and isinstance(data.get("to"), str):
                item["status"] = data["to"]
                if data["to"] == Status.PROCESSING:
                    self.progress[item_id] = Progress()
                elif item.get("failure") and data["to"] not in FAILED:
                    item["failure"] = None
                self.stale.add(item_id)
                if self.filter.group != "all":
                    self.reload_wanted = True
                changed.add(item_id)
            elif kind in ("step.started", "step.finished", "chunk.progress"):
                if self.progress.setdefault(item_id, Progress()).apply(kind, data):
                    changed.add(item_id)
            elif kind in _ITEM_NEWS:
                self.stale.add(item_id)

    def redraw_changed(self) -> None:
        changed, self.changed = self.changed, set()
        for item_id in changed:
            self._redraw(item_id)

    def reread(self) -> None:
        """What is shown may be out of date (events missed, a refusal): read the page again."""
        self.load_page()

    def flush(self) -> None:
        if self.reload_wanted:
            self.reload_wanted = False
            self.load_page()
        elif self.stale:
            wanted, self.stale = sorted(self.stale), set()
            self.refresh_items(wanted, self.news)

    @work(thread=True, group="refresh", exit_on_error=False)
    def refresh_items(self, ids: list[str], asked: int) -> None:
        try:
            got = self.host.link.calls([("get", {"id": i}) for i in ids])
        except ReaddodError:
            return  # the watch reports a gone daemon; the next page load catches up
        self.app.call_from_thread(self.refreshed, got, asked)

    def refreshed(self, got: list[dict[str, Any]], asked: int) -> None:
        """Items as read when :attr:`news` was ``asked``; one an event touched since
        is read again rather than shown as it was."""
        for g in got:
            item = g["item"]
            if self.touched.get(item["id"], -1) > asked:
                self.stale.add(item["id"])
            elif item["id"] in self.items:
                self.items[item["id"]] = item
                if rows.is_active(item):
                    self.progress[item["id"]] = from_get(g)
                self._redraw(item["id"])

    # --- keys ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "op":
            item = self.highlighted()
            if item is None:
                return False
            has_card = self._has_card(item)
            return operations.is_offered(str(parameters[0]), item["status"], has_card=has_card)
        if action == "open":
            return self.highlighted() is not None
        if action == "page":
            if parameters and parameters[0] == 1:
                return self.next_cursor is not None
            return len(self.cursors) > 1
        return True

    def action_op(self, name: str) -> None:
        item = self.highlighted()
        if item is not None and self.check_action("op", (name,)):
            self.host.operate(name, item)

    def action_open(self) -> None:
        """Read the card first and open it with its content (one repaint, not two).

        If the read takes longer than :data:`STATE_LATE_S` the card opens at once
        and reads by itself, showing "loading…" meanwhile.
        """
        item = self.highlighted()
        if item is None or self._opening is not None:
            return
        item_id = item["id"]
        self._opening, self._opening_touched = item_id, False
        self._read_card(item_id)
        self.set_timer(STATE_LATE_S, lambda: self._open_card(item_id, None))

    @work(thread=True, group="card", exclusive=True, exit_on_error=False)
    def _read_card(self, item_id: str) -> None:
        try:
            got = self.host.link.call("get", {"id": item_id})
        except ReaddodError:
            got = None  # the card reads again by itself, and says what went wrong
        self.app.call_from_thread(self._open_card, item_id, got)

    def _open_card(self, item_id: str, got: dict[str, Any] | None) -> None:
        if self._opening != item_id:
            return  # open already: the later of the read and the deadline
        self._opening = None
        # Events about the item since the read began: the card reads it again.
        stale = self._opening_touched
        if self._card is None:
            # Kept (installed) once made: the next card is a repaint, not a new screen.
            self._card = CardScreen(self.host, item_id, got, stale=stale)
            self.app.install_screen(self._card, name=f"card-of-{id(self)}")
        else:
            self._card.show_item(item_id, got, stale=stale)
        self.app.push_screen(self._card)

    def on_item_table_selected(self, _: ItemTable.Selected) -> None:
        self.action_open()

    def action_cursor(self, step: int) -> None:
        """Move the highlight; the line under the list follows in the same frame."""
        table = self.query_one(ItemTable)
        table.move_cursor(row=max(0, table.cursor_row + step))
        self._highlighted()

    def action_cursor_page(self, direction: int) -> None:
        self.action_cursor(direction * self.query_one(ItemTable).rows_in_view)

    def action_cursor_to(self, row: int) -> None:
        table = self.query_one(ItemTable)
        table.move_cursor(row=row if row >= 0 else table.row_count - 1)
        self._highlighted()

    def action_page(self, step: int) -> None:
        if step > 0 and self.next_cursor:
            self.cursors.append(self.next_cursor)
        elif step < 0 and len(self.cursors) > 1:
            self.cursors.pop()
        else:
            return
        self.load_page()

    def action_filter(self) -> None:
        self._apply(self.filter.next_group())

    def _apply(self, wanted: filters.Filter) -> None:
        self.filter = wanted
        self.cursors = [None]
        self.next_cursor = None
        self.load_page()
        # The page usually comes within a few milliseconds and names the filter with
        # it (one repaint; Textual puts 17-33 ms between two repaints in a row); a
        # slow daemon's is named a moment later, before the page comes.
        self.set_timer(STATE_LATE_S, self.show_state)

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("shown")
        box.value = self.filter.text
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        try:
            wanted = filters.parse(event.value, self.filter.group)
        except filters.FilterError as exc:
            self.host.say(str(exc), error=True)
            return
        self._close_search()
        self._apply(wanted)

    def key_escape(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_class("shown"):
            self._close_search()
            if self.filter.text:
                self._apply(filters.Filter(self.filter.group))

    def _close_search(self) -> None:
        self.query_one("#search", Input).remove_class("shown")
        self.query_one(ItemTable).focus()
