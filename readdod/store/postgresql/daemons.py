"""PostgreSQL's daemon registry: one row per daemon that shares the database."""

from __future__ import annotations

from readdod.store.postgresql.base import PostgresUnitBase
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import DAEMON_COLUMNS, DaemonRow


class PostgresDaemonQueries(PostgresUnitBase):
    """:class:`~readdod.store.api.DaemonQueries` on PostgreSQL."""

    def register_daemon(self, row: DaemonRow) -> None:
        self.execute(Q["register_daemon"], [getattr(row, c) for c in DAEMON_COLUMNS])

    def beat_daemon(self, daemon_id: str, at: int, *, in_flight: int, paused: bool) -> bool:
        cur = self.execute(Q["beat_daemon"], (at, in_flight, paused, daemon_id))
        return self.changed(cur) > 0

    def remove_daemon(self, daemon_id: str) -> bool:
        return self.changed(self.execute(Q["remove_daemon"], (daemon_id,))) > 0

    def daemons(self) -> list[DaemonRow]:
        return [
            DaemonRow(**dict(zip(DAEMON_COLUMNS, r, strict=True))) for r in self.all(Q["daemons"])
        ]

    def forget_daemons(self, silent_before: int, *, keep: str) -> list[str]:
        return sorted(r[0] for r in self.all(Q["forget_daemons"], (silent_before, keep)))
