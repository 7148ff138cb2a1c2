"""The fleet's side of the core: the daemon registry and the notices between daemons.

Nothing here changes an item: a daemon registers, beats and leaves, and
tells the others what its commits did through the store's notices.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Final

from readdod import __version__
from readdod.core.unit import Units
from readdod.status.roster import FleetMember, members
from readdod.store.api import NOTICE_MAX_BYTES, UnitOfWork
from readdod.store.rows import DaemonRow

#: A daemon silent this many beats is forgotten by the others (its row removed).
FORGET_BEATS: Final = 100


class Fleet:
    """This daemon in the registry, and its line to the other daemons."""

    def __init__(self, units: Units, daemon_id: str, beat_ms: int) -> None:
        self.units = units
        self.clock = units.clock
        self.daemon_id = daemon_id
        self.beat_ms = beat_ms
        self.notice_max_bytes = NOTICE_MAX_BYTES
        self.started_at = self.clock.now_ms()

    def _row(self, now: int, *, paused: bool, in_flight: int = 0) -> DaemonRow:
        return DaemonRow(
            daemon_id=self.daemon_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=__version__,
            started_at=self.started_at,
            heartbeat_at=now,
            paused=paused,
            in_flight=in_flight,
        )

    async def join(
        self, *, alone: bool, paused: bool, earlier_lives: str | None = None
    ) -> list[str]:
        """Register this daemon and forget the daemons gone for good; their ids.

        ``alone``: this daemon holds the store by itself (SQLite's instance
        lock), so every other row is a dead daemon's. ``earlier_lives``: the
        id prefix of this daemon's earlier processes (its instance, whose
        lock it holds), dead for sure whatever their last heartbeat.
        """
        now = self.started_at = self.clock.now_ms()
        row = self._row(now, paused=paused)
        silent_before = now + 1 if alone else now - FORGET_BEATS * self.beat_ms

        def unit(tx: UnitOfWork) -> list[str]:
            gone = tx.forget_daemons(silent_before, keep=self.daemon_id)
            if earlier_lives:
                for d in tx.daemons():
                    if d.daemon_id.startswith(earlier_lives) and d.daemon_id != self.daemon_id:
                        tx.remove_daemon(d.daemon_id)
                        gone.append(d.daemon_id)
            tx.register_daemon(row)
            return sorted(gone)

        return await self.units.store.write(unit)

    async def beat(self, *, in_flight: int, paused: bool) -> None:
        """Tell the registry this daemon lives; register again if it was forgotten."""
        now = self.clock.now_ms()

        def unit(tx: UnitOfWork) -> None:
            if not tx.beat_daemon(self.daemon_id, now, in_flight=in_flight, paused=paused):
                # Forgotten (silent too long, a frozen VM): back in, with the same start.
                tx.register_daemon(self._row(now, paused=paused, in_flight=in_flight))
            tx.forget_daemons(now - FORGET_BEATS * self.beat_ms, keep=self.daemon_id)

        await self.units.store.write(unit)

    async def leave(self) -> None:
        """A clean stop: out of the registry."""
        await self.units.store.write(lambda tx: tx.remove_daemon(self.daemon_id))

    async def members(self) -> list[FleetMember]:
        """Every registered daemon, as ``health`` and ``stats`` show them."""
        rows = await self.units.read(lambda tx: tx.daemons())
        return members(rows, now_ms=self.clock.now_ms(), beat_ms=self.beat_ms, me=self.daemon_id)

    async def notify(self, payload: str) -> None:
        await self.units.store.notify(payload)

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return self.units.store.listen()
