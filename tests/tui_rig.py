"""What the TUI's tests share: a daemon with a few known items, and bounded waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc

#: Texts the local engine turns into READY cards, the same every run.
NOTES = [
    ("Spaced repetition", "remember what I read", ["study"]),
    ("Sourdough starter", "bake bread at home", ["kitchen"]),
    ("SQLite WAL mode", "tune the database", ["work", "db"]),
]


def note_text(title: str) -> str:
    body = (
        f"{title} is worth knowing. It changes how you plan the week."
        " Try it on one small project first, then measure what changed."
        " Write down what worked and what did not, and keep the notes close."
    )
    return " ".join([body] * 12)


def start_daemon(root: Path, daemons: list[DaemonProc], **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, **NO_AUTO_RETRY, **sections)
    daemons.append(d)
    return d.start()


def seed(d: DaemonProc) -> dict[str, str]:
    """The known items: three READY notes and one that fails (a blocked address); by title."""
    ids: dict[str, str] = {}
    for title, intent, tags in NOTES:
        got = d.call("capture", {"text": note_text(title), "intent": intent, "title": title,
                                 "tags": tags})  # fmt: skip
        ids[title] = got["item"]["id"]
    got = d.call("capture", {"url": "http://127.0.0.1:9/gone", "intent": "read it later"})
    ids["blocked"] = got["item"]["id"]
    d.wait_status("READY", len(NOTES))
    d.wait_status("FAILED_EXTRACTION", 1)
    return ids


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``check`` (a daemon's state, a file) until it holds; fail saying ``what``."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


async def until(
    pilot: Pilot[Any], check: Callable[[], bool], what: str, timeout: float = 30.0
) -> None:
    """Let the app run until ``check`` holds (bounded); fail saying ``what``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            said = getattr(pilot.app, "said", [])[-5:]  # what the person was told, newest last
            raise AssertionError(f"waited {timeout:g} s for {what}; the app said {said}")
        await pilot.pause(0.02)
