"""A real terminal for a test: a command in a private tmux server, read with capture-pane.

Waits poll the captured screen (bounded), never sleep blindly. Each pane has
its own tmux server (``-S`` a socket under the test's folder), so a person's
own tmux sessions are never touched.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: A ULID as readdod makes ids: masked in snapshots, which must not depend on them.
_ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
#: The AGE column, the last of an inbox row.
_AGE = re.compile(r"(?<= )(<1m|\d+[mhdy])$")


def tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        raise AssertionError("tmux is not installed: run .ci/setup-tmux (Debian package tmux)")
    return found


class Pane:
    def __init__(self, folder: Path, command: Sequence[str], env: dict[str, str], *,
                 width: int = 80, height: int = 24) -> None:  # fmt: skip
        self.sock = folder / "tmux.sock"
        self.env = env
        self._run(
            "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
            " ".join(_quote(c) for c in command),
        )  # fmt: skip

    def _run(self, *args: str) -> str:
        out = subprocess.run(
            [tmux(), "-S", str(self.sock), *args],
            capture_output=True, text=True, env=self.env, timeout=30, check=True,
        )  # fmt: skip
        return out.stdout

    def alive(self) -> bool:
        probe = subprocess.run(
            [tmux(), "-S", str(self.sock), "has-session", "-t", "t"],
            capture_output=True, env=self.env, timeout=30, check=False,
        )  # fmt: skip
        return probe.returncode == 0

    def screen(self) -> str:
        """What the pane shows now; empty once the program (and so the session) has ended."""
        out = subprocess.run(
            [tmux(), "-S", str(self.sock), "capture-pane", "-p", "-t", "t"],
            capture_output=True, text=True, env=self.env, timeout=30, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            if self.alive():
                raise AssertionError(f"tmux capture-pane failed: {out.stderr}")
            return ""
        return out.stdout

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "t", *keys)

    def text(self, literal: str) -> None:
        self._run("send-keys", "-t", "t", "-l", literal)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        """The screen once ``check`` holds for it; fails with the last screen after ``timeout``."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:g} s for {what}; the screen:\n{shown}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def settled(self, check: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        """The screen once ``check`` holds and two captures in a row agree (layout done)."""
        deadline = time.monotonic() + timeout
        last = self.wait_for(check, what, timeout)
        while True:
            time.sleep(0.2)
            now = self.screen()
            if now == last and check(now):
                return now
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen kept changing while waiting for {what}")
            last = now

    def close(self) -> None:
        subprocess.run(
            [tmux(), "-S", str(self.sock), "kill-server"],
            capture_output=True, env=self.env, timeout=30, check=False,
        )  # fmt: skip


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def normalised(screen: str) -> str:
    """A captured screen without what changes from run to run: ids and ages."""
    lines = [_AGE.sub("<age>", _ULID.sub("<id>", line.rstrip())) for line in screen.splitlines()]
    return "\n".join(lines).rstrip() + "\n"
