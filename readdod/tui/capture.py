"""The capture form: a URL or a text, why you save it, and tags."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from readdod.control.client import RpcError
from readdod.errors import ReaddodError
from readdod.tui.link import Link

_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


class FormError(ValueError):
    """What the form lacks, for the person to fix; nothing is sent."""


def capture_params(source: str, intent: str, tags: str) -> dict[str, Any]:
    """The ``capture`` params: a lone http(s) address is a URL, anything else a text."""
    source, intent = source.strip(), intent.strip()
    if not source:
        raise FormError("give a URL or paste a text")
    if not intent:
        raise FormError("say why you save it (the intent)")
    params: dict[str, Any] = {"intent": intent}
    if _URL.match(source):
        params["url"] = source
    else:
        params["text"] = source
    wanted = [t.lstrip("#") for t in re.split(r"[,\s]+", tags) if t.strip("#, ")]
    if wanted:
        params["tags"] = wanted
    return params


class CaptureScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"),
        Binding("ctrl+s", "submit", "capture"),
        # Before the field sees it: the focus moves while the key is handled, so what is
        # typed next (a paste, a fast typist) lands in the next field, not this one.
        Binding("enter", "next_field", "next", show=False, priority=True),
    ]
    DEFAULT_CSS = """
    CaptureScreen { align: center middle; }
    CaptureScreen > Vertical {
        width: 76; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    CaptureScreen Input { margin-bottom: 0; }
    CaptureScreen #problem { color: $error; height: auto; }
    CaptureScreen #buttons { height: 3; layout: horizontal; }
    """

    def __init__(self, link: Link, say: Callable[[str], None]) -> None:
        super().__init__()
        self.link = link
        self.say = say

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Capture (Enter moves on, Enter on tags saves; Esc cancels)")
            yield Label("URL or text")
            yield Input(placeholder="https://... or the text itself", id="source")
            yield Label("Intent: why you save it")
            yield Input(placeholder="what you want out of it", id="intent")
            yield Label("Tags (space or comma)")
            yield Input(placeholder="#work reading", id="tags")
            yield Static("", id="problem")
            with Vertical(id="buttons"):
                yield Button("capture", id="go", variant="primary")

    def action_next_field(self) -> None:
        focused = self.focused
        if isinstance(focused, Button) or (isinstance(focused, Input) and focused.id == "tags"):
            self.action_submit()
        else:
            self.focus_next()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "go":
            self.action_submit()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_submit(self) -> None:
        try:
            params = capture_params(
                self.query_one("#source", Input).value,
                self.query_one("#intent", Input).value,
                self.query_one("#tags", Input).value,
            )
        except FormError as exc:
            self.query_one("#problem", Static).update(str(exc))
            return
        self.query_one("#problem", Static).update("sending…")
        self._send(params)

    def _send(self, params: dict[str, Any]) -> None:
        self.run_worker(lambda: self._call(params), thread=True, exit_on_error=False)

    def _call(self, params: dict[str, Any]) -> None:
        try:
            answer = self.link.call("capture", params)
        except RpcError as exc:
            self.app.call_from_thread(self._refused, f"{exc.message} ({exc.error_code})")
            return
        except ReaddodError as exc:
            self.app.call_from_thread(self._refused, exc.message)
            return
        self.app.call_from_thread(self._captured, answer)

    def _refused(self, why: str) -> None:
        # The form stays as typed: nothing is lost to a refusal.
        self.query_one("#problem", Static).update(f"not captured: {why}")

    def _captured(self, answer: dict[str, Any]) -> None:
        item = answer["item"]
        verb = "captured" if answer.get("created") else "already captured"
        self.say(f"{verb} {item['id']} ({item['status']})")
        self.dismiss(None)
