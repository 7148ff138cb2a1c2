"""SQLite's daemon registry: one row per daemon that shares the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.rows import DAEMON_COLUMNS, DaemonRow
from readdod.store.sqlite.base import SqliteUnitBase
from readdod.store.sqlite.queries import QUERIES as Q


def _daemon(row: Sequence[Any]) -> DaemonRow:
    fields = dict(zip(DAEMON_COLUMNS, row, strict=True))
    fields["paused"] = bool(fields["paused"])
    return DaemonRow(**fields)


class SqliteDaemonQueries(SqliteUnitBase):
    """:class:`~readdod.store.api.DaemonQueries` on SQLite."""

    def register_daemon(self, row: DaemonRow) -> None:
        values = [getattr(row, c) for c in DAEMON_COLUMNS]
        values[DAEMON_COLUMNS.index("paused")] = int(row.paused)
        self.execute(Q["register_daemon"], values)

    def beat_daemon(self, daemon_id: str, at: int, *, in_flight: int, paused: bool) -> bool:
        cur = self.execute(Q["beat_daemon"], (at, in_flight, int(paused), daemon_id))
        return cur.rowcount > 0

    def remove_daemon(self, daemon_id: str) -> bool:
        return self.execute(Q["remove_daemon"], (daemon_id,)).rowcount > 0

    def daemons(self) -> list[DaemonRow]:
        return [_daemon(r) for r in self.execute(Q["daemons"]).fetchall()]

    def forget_daemons(self, silent_before: int, *, keep: str) -> list[str]:
        rows = self.execute(Q["forget_daemons"], (silent_before, keep)).fetchall()
        return sorted(r[0] for r in rows)
