"""The bits of the systemd protocol readdod speaks.

sd_notify (READY, STATUS, WATCHDOG, STOPPING) and socket activation
(LISTEN_FDS), without libsystemd: both are a few lines of plain sockets.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping

import anyio


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to $NOTIFY_SOCKET; False when not under systemd."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return False
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(addr)
            sock.sendall(state.encode())
        except OSError:
            return False
    return True


SD_LISTEN_FDS_START = 3


def listen_fds(environ: MutableMapping[str, str] | None = None) -> list[int]:
    """The sockets systemd passed (socket activation), or [] when there are none.

    Honoured only when ``LISTEN_PID`` is this process, so a child that merely
    inherited the environment does not grab descriptors that are not its own.
    The variables are removed so nothing started later inherits them.
    """
    env = os.environ if environ is None else environ
    try:
        pid = int(env.get("LISTEN_PID", ""))
        count = int(env.get("LISTEN_FDS", ""))
    except ValueError:
        return []
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    if pid != os.getpid() or count <= 0:
        return []
    fds = list(range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + count))
    for fd in fds:
        os.set_inheritable(fd, False)
    return fds


def watchdog_interval(environ: MutableMapping[str, str] | None = None) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WATCHDOG_USEC``), or None when off."""
    env = os.environ if environ is None else environ
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    wd_pid = env.get("WATCHDOG_PID")
    if usec <= 0 or (wd_pid and wd_pid != str(os.getpid())):
        return None
    return usec / 2 / 1_000_000


async def watchdog_loop(interval: float) -> None:
    """Ping from the event loop itself: if the loop blocks, the pings stop and systemd acts."""
    while True:
        notify("WATCHDOG=1")
        await anyio.sleep(interval)


def status_line(*, in_flight: int, queued: int, paused: bool, draining: bool) -> str:
    state = "draining" if draining else "paused" if paused else "running"
    return f"{state}: {in_flight} in flight, {queued} queued"


class StatusReporter:
    """Keeps systemd's ``STATUS=`` current: on change (poked or polled) and periodically.

    ``read`` gives the current line; it is sent when it differs from the last
    one, and at least every ``refresh_s`` so a stale line is never shown long.
    """

    def __init__(
        self,
        read: Callable[[], Awaitable[str]],
        *,
        poll_s: float = 1.0,
        refresh_s: float = 30.0,
    ) -> None:
        self._read = read
        self._poll_s = poll_s
        self._refresh_s = refresh_s
        self._poke = anyio.Event()
        self.last: str | None = None

    def poke(self) -> None:
        self._poke.set()

    async def run(self) -> None:
        sent_at = 0.0
        while True:
            self._poke = anyio.Event()
            line = await self._read()
            now = anyio.current_time()
            if line != self.last or now - sent_at >= self._refresh_s:
                notify(f"STATUS={line}")
                self.last, sent_at = line, now
            with anyio.move_on_after(self._poll_s):
                await self._poke.wait()
            # Coalesce bursts of pokes (a batch of captures) into one update.
            await anyio.sleep(0.05)
