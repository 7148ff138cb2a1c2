"""PostgreSQL records: the event log, idempotent requests, settings, exports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.postgresql.base import PostgresUnitBase
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import EVENT_COLUMNS, EXPORT_COLUMNS, EventRow, ExportRow


def _event(row: Sequence[Any]) -> EventRow:
    return EventRow(**dict(zip(EVENT_COLUMNS, row, strict=True)))


class PostgresRecordQueries(PostgresUnitBase):
    """The events, requests, settings and exports of
    :class:`~readdod.store.api.RecordQueries`, on PostgreSQL."""

    # --- events ---------------------------------------------------------------

    def insert_event(
        self,
        at: int,
        item_id: str | None,
        run_id: str | None,
        kind: str,
        from_status: str | None,
        to_status: str | None,
        trigger: str,
        detail: str = "{}",
    ) -> None:
        self.held.events.append(
            (at, item_id, run_id, kind, from_status, to_status, trigger, detail)
        )

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger in one round trip, in order."""
        self.held.events.extend((*r[:6], trigger, r[6]) for r in rows)

    def events_for(self, item_id: str) -> list[EventRow]:
        return [_event(r) for r in self.all(Q["events_of_item"], (item_id,))]

    # --- idempotent requests --------------------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        row = self.one(Q["request_by_id"], (request_id,))
        return (row[0], row[1], row[2]) if row else None

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self.execute(Q["insert_request"], (request_id, method, item_id, response, now))

    # --- settings -------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        row = self.one(Q["setting"], (key,))
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.execute(Q["set_setting"], (key, value))

    # --- exports --------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None:
        row = self.one(Q["export_by_key"], (export_key,))
        return ExportRow(**dict(zip(EXPORT_COLUMNS, row, strict=True))) if row else None

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        cur = self.execute(Q["insert_export"], [getattr(row, c) for c in EXPORT_COLUMNS])
        return self.changed(cur) == 1

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        return [r[0] for r in self.all(Q["export_files"], (item_id, fmt))]
