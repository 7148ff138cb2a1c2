"""The daemon registry: which daemons share the store, and when each was last heard of."""

from __future__ import annotations

from typing import Protocol

from readdod.store.rows import DaemonRow


class DaemonQueries(Protocol):
    """Each daemon registers itself at start, beats while it runs and leaves at a clean
    stop; ``health`` and ``stats`` read the fleet from here."""

    def register_daemon(self, row: DaemonRow) -> None:
        """Add ``row``, or replace the row of the same ``daemon_id``."""
        ...

    def beat_daemon(self, daemon_id: str, at: int, *, in_flight: int, paused: bool) -> bool:
        """Record a heartbeat; False when the daemon has no row (it was forgotten)."""
        ...

    def remove_daemon(self, daemon_id: str) -> bool:
        """Take a daemon out of the registry; False if it was not in it."""
        ...

    def daemons(self) -> list[DaemonRow]:
        """Every registered daemon, the longest running first (then by id)."""
        ...

    def forget_daemons(self, silent_before: int, *, keep: str) -> list[str]:
        """Remove every daemon but ``keep`` last heard of before ``silent_before`` (dead
        ones that could not leave); the ids removed."""
        ...
