"""Records: the event log, idempotent requests, settings and exports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from readdod.store.rows import EventRow, ExportRow


class RecordQueries(Protocol):
    """What is kept beside the items: the event log, idempotent requests, settings, exports."""

    # --- events --------------------------------------------------------------------

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
        """Append an event; events keep the order they were added in."""
        ...

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger: (at, item_id, run_id, kind, from, to, detail) each."""
        ...

    def events_for(self, item_id: str) -> list[EventRow]:
        """An item's events in the order they were added."""
        ...

    # --- idempotent requests and settings -----------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        """(method, item_id, response) recorded for ``request_id``."""
        ...

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        """Record a request's response once; a second record of the id raises a
        :class:`~readdod.errors.ReaddodError` and fails the unit."""
        ...

    def setting(self, key: str) -> str | None: ...

    def set_setting(self, key: str, value: str) -> None: ...

    # --- exports -------------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None: ...

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        ...

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        """The files (JSON lists) of an item's earlier exports in ``fmt``, newest first."""
        ...
