"""The TUI's way to the daemon: short calls with a deadline, and a watch that reconnects.

Everything here blocks, so the app runs it in worker threads, never on its
own thread: a slow or gone daemon costs a worker its deadline, never a frozen
screen. Each call opens its own connection, so a daemon restart between two
calls is not noticed at all; the watch notices it, says so, and comes back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from readdod.control.client import Client
from readdod.errors import DaemonUnavailable, ReaddodError
from readdod.text.controls import visible

#: How long one call may take before the TUI says the daemon is slow.
CALL_TIMEOUT_S: Final = 5.0
#: The first and the longest wait between two attempts to watch again.
RECONNECT_FIRST_S: Final = 0.2
RECONNECT_MAX_S: Final = 2.0


class DaemonSlow(DaemonUnavailable):
    """The daemon did not answer within the call's deadline."""


def shown(value: Any) -> Any:
    """A daemon's answer with every string made safe to draw (:func:`visible`): a title
    or todo from anywhere must not drive the terminal (retitle it, move the cursor)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(v) for v in value]
    return value


class Link:
    def __init__(self, path: Path, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.path = path
        self.timeout_s = timeout_s

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.calls([(method, params or {})])[0]

    def calls(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Several calls on one connection, in order; the first error ends them."""
        try:
            with Client(self.path, timeout_s=self.timeout_s) as client:
                return [shown(client.call(method, params)) for method, params in requests]
        except TimeoutError as exc:
            raise DaemonSlow(
                f"the daemon did not answer within {self.timeout_s:g} s; it may be busy"
            ) from exc
        except OSError as exc:
            raise DaemonUnavailable(f"lost the connection to the daemon ({exc})") from exc
        except msgspec.DecodeError as exc:
            raise ReaddodError(f"the daemon sent something unreadable: {exc}") from exc


#: Told of every change of the watch's state: "live", "reconnecting" (with why).
StateSink = Callable[[str, str], None]
EventSink = Callable[[dict[str, Any]], None]


class Watch:
    """Follows ``watch`` until :meth:`stop`; reconnects with a growing pause when it breaks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._client: Client | None = None
        self._went_live = False

    def run(self, on_event: EventSink, on_state: StateSink) -> None:
        pause = RECONNECT_FIRST_S
        while not self._stopped.is_set():
            self._went_live = False
            try:
                self._follow(on_event, on_state)
                why = "the daemon closed the watch"
            except (ReaddodError, OSError, msgspec.DecodeError) as exc:
                why = exc.message if isinstance(exc, ReaddodError) else str(exc)
            if self._stopped.is_set():
                return
            if self._went_live:
                pause = RECONNECT_FIRST_S
            on_state("reconnecting", why)
            self._stopped.wait(pause)
            pause = min(pause * 2, RECONNECT_MAX_S)

    def _follow(self, on_event: EventSink, on_state: StateSink) -> None:
        client = Client(self.path, timeout_s=CALL_TIMEOUT_S)
        with self._lock:
            if self._stopped.is_set():
                client.close()
                return
            self._client = client
        try:
            client.call("watch")
            # Events come when they come: no deadline between them.
            client.settimeout(None)
            self._went_live = True
            on_state("live", "")
            while not self._stopped.is_set():
                msg = msgspec.json.decode(client.read_raw())
                if isinstance(msg, dict) and msg.get("method") == "event":
                    on_event(shown(msg["params"]))
        finally:
            with self._lock:
                self._client = None
            client.close()

    def stop(self) -> None:
        """End :meth:`run` soon, from any thread: wake its read and its pause."""
        with self._lock:
            self._stopped.set()
            if self._client is not None:
                self._client.interrupt()
