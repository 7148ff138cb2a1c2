"""The TUI application: one watch, short calls in worker threads, screens on top.

The app's own thread only draws and routes: every socket call runs in a
thread worker with a deadline (:mod:`readdod.tui.link`), and ``watch`` events
are handed over in batches, so a slow daemon, a gone one or a burst of events
never freezes a key press.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message

from readdod.control.client import RpcError
from readdod.control.protocol import METHOD_NOT_FOUND
from readdod.errors import ReaddodError
from readdod.runtime.clock import Clock, SystemClock
from readdod.tui import editor, operations
from readdod.tui.capture import CaptureScreen
from readdod.tui.card import CardScreen
from readdod.tui.help import HelpScreen
from readdod.tui.inbox import InboxScreen
from readdod.tui.link import Link, Watch


class EventsArrived(Message):
    """Events wait in :attr:`ReaddodTui.pending` (posted once per batch)."""


class LinkState(Message):
    def __init__(self, state: str, why: str) -> None:
        super().__init__()
        self.state = state
        self.why = why


class ReaddodTui(App[None]):
    TITLE = "readdod"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "capture", "capture"),
        Binding("P", "toggle_pause", "pause"),
        Binding("question_mark", "keys", "keys"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self, socket: Path, *, clock: Clock | None = None, page_size: int = 50, watch: bool = True
    ) -> None:
        super().__init__()
        self.link = Link(socket)
        self.watcher = Watch(socket)
        self.clock = clock or SystemClock()
        self.page_size = page_size
        self.follow = watch
        #: "connecting", "live" or "reconnecting"; ``why`` says what broke.
        self.connection = "connecting"
        self.why = ""
        self.paused: bool | None = None
        #: Bumped by every word on pausing newer than a ping (an event, a pause's
        #: answer): a ping answered before it must not undo it.
        self.pause_news = 0
        #: Every message shown to the person, newest last (what tests read).
        self.said: list[str] = []
        self.pending: list[dict[str, Any]] = []
        self._pending_lock = threading.Lock()
        self._wake_posted = False
        self.events_seen = 0

    def on_mount(self) -> None:
        self.push_screen(InboxScreen(self))
        self.ping()
        if self.follow:
            self.follow_events()

    def on_unmount(self) -> None:
        self.watcher.stop()

    # --- the watch -----------------------------------------------------------

    @work(thread=True, group="watch", exit_on_error=False)
    def follow_events(self) -> None:
        self.watcher.run(self._arrived, self._state)

    def _arrived(self, event: dict[str, Any]) -> None:
        """From the watch thread: queue the event, wake the app once per batch."""
        with self._pending_lock:
            self.pending.append(event)
            if self._wake_posted:
                return
            self._wake_posted = True
        self.post_message(EventsArrived())

    def _state(self, state: str, why: str) -> None:
        self.post_message(LinkState(state, why))

    def on_events_arrived(self, _: EventsArrived) -> None:
        with self._pending_lock:
            batch, self.pending = self.pending, []
            self._wake_posted = False
        self.events_seen += len(batch)
        was = self.paused
        for ev in batch:
            if ev.get("event") in ("daemon.paused", "daemon.resumed"):
                self.paused = ev["event"] == "daemon.paused"
                self.pause_news += 1
        for screen in self._followers():
            screen.take_events(batch)
            if self.paused != was:
                screen.show_state()

    def on_link_state(self, msg: LinkState) -> None:
        was = self.connection
        self.connection, self.why = msg.state, msg.why
        if msg.state == "live" and was != "connecting":
            self.say("connected to the daemon again")
        if msg.state == "live":
            self.ping()
        for screen in self._followers():
            if msg.state == "live":
                screen.reread()
            screen.show_state()

    def _followers(self) -> list[InboxScreen | CardScreen]:
        """The screens that show what the daemon holds (they take events, and read again)."""
        return [s for s in self.screen_stack if isinstance(s, InboxScreen | CardScreen)]

    # --- calls -----------------------------------------------------------------

    def say(self, text: str, *, error: bool = False) -> None:
        self.said.append(text)
        self.notify(text, severity="error" if error else "information", timeout=6)

    def refusal(self, exc: ReaddodError) -> str:
        """What went wrong, in words, as the daemon (or the connection) said it."""
        if isinstance(exc, RpcError):
            return f"readdod said no: {exc.message} ({exc.error_code})"
        return f"{exc.message}"

    @work(thread=True, group="ping", exclusive=True, exit_on_error=False)
    def ping(self) -> None:
        asked = self.pause_news
        try:
            answer = self.link.call("ping")
        except ReaddodError:
            return  # the watch says whether the daemon is there
        self.call_from_thread(self.pinged, bool(answer.get("paused")), asked)

    def pinged(self, paused: bool, asked: int) -> None:
        """A ping's answer, unless newer word on pausing came since it was asked
        (answers from other threads arrive in any order)."""
        if asked == self.pause_news:
            self.paused = paused
        for screen in self._followers():
            screen.show_state()

    def request(
        self,
        method: str,
        params: dict[str, Any],
        done: Callable[[Any], str | None],
    ) -> None:
        """Ask the daemon in a worker; say what ``done`` makes of the answer, or the refusal."""
        self._request(method, params, done)

    @work(thread=True, group="requests", exit_on_error=False)
    def _request(
        self, method: str, params: dict[str, Any], done: Callable[[Any], str | None]
    ) -> None:
        try:
            answer = self.link.call(method, params)
        except RpcError as exc:
            if exc.rpc_code == METHOD_NOT_FOUND:
                text = f"this daemon has no {method!r}; it is older than this readdod"
            else:
                text = self.refusal(exc)
            self.call_from_thread(self.say, text, error=True)
            # What was shown was out of date (why the key was offered): read it again.
            self.call_from_thread(self._reread)
            return
        except ReaddodError as exc:
            self.call_from_thread(self.say, self.refusal(exc), error=True)
            return
        self.call_from_thread(self._answered, done, answer)

    def _answered(self, done: Callable[[Any], str | None], answer: Any) -> None:
        text = done(answer)
        if text:
            self.say(text)
        self._reread()

    def _reread(self) -> None:
        for screen in self._followers():
            screen.reread()

    def operate(self, name: str, item: dict[str, Any]) -> None:
        """Carry out ``name`` on ``item``; the key was offered, so its state allows it."""
        if name == "edit":
            self.edit_card(item["id"])
            return
        req = operations.request(name, item["status"], item["id"])
        if req is None:
            return
        method, params = req
        label = operations.BY_NAME[name].label

        def done(answer: Any) -> str:
            if isinstance(answer, dict) and "files" in answer:
                return f"exported {item['id']}: {', '.join(answer['files'])}"
            got = answer.get("item") if isinstance(answer, dict) else None
            now = f": it is {got['status']}" if got else ""
            return f"{label} {item['id']}{now}"

        self.request(method, params, done)

    def tick(self, item_id: str, index: int, done: bool) -> None:
        self.request(
            "todo",
            {"id": item_id, "index": index, "done": done},
            lambda _a: f"todo {index} of {item_id} {'done' if done else 'not done'}",
        )

    # --- edit in $EDITOR ---------------------------------------------------------

    @work(thread=True, group="edit", exclusive=True, exit_on_error=False)
    def edit_card(self, item_id: str) -> None:
        try:
            got = self.link.call("get", {"id": item_id})
        except ReaddodError as exc:
            self.call_from_thread(self.say, self.refusal(exc), error=True)
            return
        card = (got.get("artifacts") or {}).get("card")
        if card is None:
            self.call_from_thread(self.say, f"{item_id} has no card to edit yet", error=True)
            return
        self.call_from_thread(self._edit_here, item_id, card["payload"])

    def _edit_here(self, item_id: str, payload: Any) -> None:
        """On the app's thread: the terminal is the editor's until it exits."""
        try:
            outcome = editor.edit_json(self, payload)
        except editor.EditFailed as exc:
            self.say(str(exc), error=True)
            return
        if outcome is None:
            self.say("no change; nothing saved")
            return
        self.request(
            "edit",
            {"id": item_id, "type": "card", "payload": outcome},
            lambda a: f"saved card version {a['artifact']['version']} of {item_id} (yours)",
        )

    # --- app keys -------------------------------------------------------------------

    def action_capture(self) -> None:
        self.push_screen(CaptureScreen(self.link, self.say))

    def action_keys(self) -> None:
        self.push_screen(HelpScreen())

    def action_toggle_pause(self) -> None:
        method = "resume" if self.paused else "pause"

        def done(answer: Any) -> str:
            self.paused = bool(answer.get("paused"))
            self.pause_news += 1
            return "the daemon is paused" if self.paused else "the daemon works again"

        self.request(method, {}, done)


def run(socket: Path) -> None:
    ReaddodTui(socket).run()
