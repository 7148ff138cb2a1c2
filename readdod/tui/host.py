"""What a screen asks of the app that shows it (the app implements it; no import cycle)."""

from __future__ import annotations

from typing import Any, Protocol

from readdod.runtime.clock import Clock
from readdod.tui.link import Link


class Host(Protocol):
    link: Link
    clock: Clock
    page_size: int
    #: "connecting", "live" or "reconnecting"
    connection: str
    why: str
    paused: bool | None

    def say(self, text: str, *, error: bool = False) -> None: ...

    def operate(self, name: str, item: dict[str, Any]) -> None: ...

    def tick(self, item_id: str, index: int, done: bool) -> None: ...


def state_line(host: Host, where: str) -> str:
    """The top line of every screen: where you are, and whether the daemon is there."""
    if host.connection == "live":
        conn = "● live"
    elif host.connection == "connecting":
        conn = "○ connecting…"
    else:
        conn = f"○ reconnecting… ({_gist(host.why)})" if host.why else "○ reconnecting…"
    paused = "  ⏸ daemon paused (P resumes)" if host.paused else ""
    return f"readdod · {where} · {conn}{paused}"


def _gist(why: str) -> str:
    """The first clause of a reason: the top line has room for little more."""
    cut = min((i for i in (why.find(" ("), why.find(": "), why.find(". ")) if i > 0), default=-1)
    return why[:cut] if cut > 0 else why
