"""One item's card: what it says, whose version each part is, and the keys it allows."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from readdod.errors import ReaddodError
from readdod.tui import card_text, operations
from readdod.tui.host import Host, state_line
from readdod.tui.keybar import KeyBar
from readdod.tui.line import FixedLine

#: How often a card that events touched is read again, at most.
FLUSH_S = 0.25


class CardScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        *[Binding(op.key, f"op('{op.name}')", op.label) for op in operations.OPERATIONS],
        Binding("1", "tick(1)", "tick todo 1-9"),
        *[Binding(str(n), f"tick({n})", f"tick todo {n}", show=False) for n in range(2, 10)],
        Binding("j", "scroll(1)", "down", show=False),
        Binding("k", "scroll(-1)", "up", show=False),
    ]
    DEFAULT_CSS = """
    CardScreen #top { height: 1; background: $primary; color: $text; }
    CardScreen VerticalScroll { height: 1fr; padding: 0 1; scrollbar-gutter: stable; }
    """

    def __init__(
        self, host: Host, item_id: str, got: dict[str, Any] | None = None, *, stale: bool = False
    ) -> None:
        """``got``: the item as read just before (shown at once); ``stale``: read it again soon."""
        super().__init__()
        self.host = host
        self.item_id = item_id
        self.got = got
        self.stale = stale
        #: Reads asked so far: an answer to an older one (threads answer in any order)
        #: is out of date.
        self.reads = 0

    def compose(self) -> ComposeResult:
        yield FixedLine(state_line(self.host, f"card {self.item_id}"), id="top")
        with VerticalScroll():
            yield Static(card_text.render(self.got) if self.got else "loading…", id="card")
        yield KeyBar()

    def on_mount(self) -> None:
        if self.got is None:
            self.fetch()
        self.set_interval(FLUSH_S, self._flush)
        self.query_one(VerticalScroll).focus()
        self.query_one(KeyBar).show_keys(self)

    def show_item(self, item_id: str, got: dict[str, Any] | None, *, stale: bool = False) -> None:
        """Show another item (the screen is kept between cards: opening one is a repaint)."""
        self.item_id, self.got, self.stale = item_id, got, stale
        self.show_state()
        self.query_one("#card", Static).update(card_text.render(got) if got else "loading…")
        self.query_one(VerticalScroll).scroll_home(animate=False, immediate=True)
        self.query_one(KeyBar).show_keys(self)
        if got is None:
            self.fetch()

    def fetch(self) -> None:
        """Read the item again in a worker; the answer to an older read is dropped."""
        self.reads += 1
        self._fetch(self.item_id, self.reads)

    @work(thread=True, group="card", exclusive=True, exit_on_error=False)
    def _fetch(self, item_id: str, read: int) -> None:
        try:
            got = self.host.link.call("get", {"id": item_id})
        except ReaddodError as exc:
            self.app.call_from_thread(self._failed, item_id, exc)
            return
        self.app.call_from_thread(self.fetched, got, read)

    def _failed(self, item_id: str, exc: ReaddodError) -> None:
        if self.got is None and item_id == self.item_id:
            self.query_one("#card", Static).update(f"could not read {item_id}: {exc.message}")

    def fetched(self, got: dict[str, Any], read: int) -> None:
        if read != self.reads:
            return  # a newer read is on its way
        if got == self.got or got["item"]["id"] != self.item_id:
            return  # unchanged (nothing to lay out or repaint), or a card no longer shown
        self.got = got
        self.query_one("#card", Static).update(card_text.render(got))
        self.query_one(KeyBar).show_keys(self)

    def show_state(self) -> None:
        self.query_one("#top", FixedLine).show(state_line(self.host, f"card {self.item_id}"))

    def take_events(self, events: list[dict[str, Any]]) -> None:
        if any(ev.get("item_id") == self.item_id for ev in events):
            self.stale = True

    def reread(self) -> None:
        self.fetch()

    def _flush(self) -> None:
        if self.stale:
            self.stale = False
            self.fetch()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.got is None:
            return action in ("back", "scroll")
        item = self.got["item"]
        if action == "op":
            has_card = "card" in (self.got.get("artifacts") or {})
            return operations.is_offered(str(parameters[0]), item["status"], has_card=has_card)
        if action == "tick":
            index = parameters[0]
            return isinstance(index, int) and index <= len(card_text.todos_of(self.got))
        return True

    def action_op(self, name: str) -> None:
        if self.got is not None and self.check_action("op", (name,)):
            self.host.operate(name, self.got["item"])

    def action_tick(self, index: int) -> None:
        if self.got is None or not self.check_action("tick", (index,)):
            return
        todo = card_text.todos_of(self.got)[index - 1]
        self.host.tick(self.item_id, index, not card_text.todo_done(todo))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_scroll(self, step: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=step)
