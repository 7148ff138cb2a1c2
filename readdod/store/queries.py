"""Every SQL statement readdod runs, as methods of one unit of work.

A :class:`Tx` wraps a ``sqlite3.Connection`` inside a transaction that the
store opened. Its methods are synchronous on purpose: a whole unit of work
runs in the database thread in one hop, so a read-check-write sequence is
atomic (writers are serialised by ``BEGIN IMMEDIATE``) and costs one
thread switch instead of one per statement.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from readdod.store.rows import (
    ARTIFACT_COLUMNS,
    EVENT_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
    ArtifactRow,
    EventRow,
    ItemRow,
    RunRow,
)

_ITEM_SELECT = f"SELECT {', '.join(ITEM_COLUMNS)} FROM items"
_RUN_SELECT = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs"
_ARTIFACT_SELECT = f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts"
_EVENT_SELECT = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events"

_ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
_RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}


def _item(row: Sequence[Any]) -> ItemRow:
    return ItemRow(**dict(zip(ITEM_COLUMNS, row, strict=True)))


def _run(row: Sequence[Any]) -> RunRow:
    return RunRow(**dict(zip(RUN_COLUMNS, row, strict=True)))


def _artifact(row: Sequence[Any]) -> ArtifactRow:
    return ArtifactRow(**dict(zip(ARTIFACT_COLUMNS, row, strict=True)))


def _event(row: Sequence[Any]) -> EventRow:
    return EventRow(**dict(zip(EVENT_COLUMNS, row, strict=True)))


def _assignments(fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return ", ".join(f"{k} = ?" for k in fields), list(fields.values())


class Tx:
    """Named queries over one connection, inside the store's transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # --- items -------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None:
        row = self.conn.execute(f"{_ITEM_SELECT} WHERE id = ?", (item_id,)).fetchone()
        return _item(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self.conn.execute(f"{_ITEM_SELECT} WHERE capture_id = ?", (capture_id,)).fetchone()
        return _item(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        cols = ", ".join(ITEM_COLUMNS)
        marks = ", ".join("?" for _ in ITEM_COLUMNS)
        self.conn.execute(
            f"INSERT INTO items ({cols}) VALUES ({marks})",
            [getattr(item, c) for c in ITEM_COLUMNS],
        )

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status; False when it was not ``expected``."""
        sets, values = _assignments({"status": new, **fields}, _ITEM_SETTABLE)
        cur = self.conn.execute(
            f"UPDATE items SET {sets} WHERE id = ? AND status = ?", [*values, item_id, expected]
        )
        return cur.rowcount == 1

    def update_fenced(self, item_id: str, owner: str, run_id: str, **fields: Any) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id``."""
        sets, values = _assignments(fields, _ITEM_SETTABLE)
        cur = self.conn.execute(
            f"UPDATE items SET {sets} WHERE id = ? AND status = 'PROCESSING'"
            " AND lease_owner = ? AND current_run_id = ?",
            [*values, item_id, owner, run_id],
        )
        return cur.rowcount == 1

    def holds_lease(self, item_id: str, owner: str, run_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM items WHERE id = ? AND status = 'PROCESSING'"
            " AND lease_owner = ? AND current_run_id = ?",
            (item_id, owner, run_id),
        ).fetchone()
        return row is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Take up to ``limit`` due QUEUED items, P0 first then oldest."""
        rows = self.conn.execute(
            "UPDATE items SET status = 'PROCESSING', lease_owner = ?, lease_expires_at = ?,"
            " updated_at = ?"
            " WHERE id IN (SELECT id FROM items WHERE status = 'QUEUED' AND next_attempt_at <= ?"
            "              ORDER BY priority, created_at LIMIT ?)"
            " AND status = 'QUEUED'"
            f" RETURNING {', '.join(ITEM_COLUMNS)}",
            (owner, lease_until, now, now, limit),
        ).fetchall()
        items = [_item(r) for r in rows]
        items.sort(key=lambda i: (i.priority, i.created_at))
        return items

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds; returns the ids renewed."""
        ids = list(item_ids)
        renewed: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self.conn.execute(
                f"UPDATE items SET lease_expires_at = ? WHERE lease_owner = ?"
                f" AND status = 'PROCESSING' AND id IN ({marks}) RETURNING id",
                [until, owner, *chunk],
            ).fetchall()
            renewed.update(r[0] for r in rows)
        return renewed

    def processing(self) -> list[ItemRow]:
        rows = self.conn.execute(f"{_ITEM_SELECT} WHERE status = 'PROCESSING'").fetchall()
        return [_item(r) for r in rows]

    def expired_leases(self, now: int) -> list[ItemRow]:
        rows = self.conn.execute(
            f"{_ITEM_SELECT} WHERE status = 'PROCESSING' AND lease_expires_at < ?", (now,)
        ).fetchall()
        return [_item(r) for r in rows]

    def list_items(
        self,
        statuses: Sequence[str] | None,
        priority: str | None,
        limit: int,
        before_id: str | None,
    ) -> list[ItemRow]:
        """Newest first, keyset-paginated by id (ids sort by creation time)."""
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            args.extend(statuses)
        if priority:
            where.append("priority = ?")
            args.append(priority)
        if before_id:
            where.append("id < ?")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.conn.execute(
            f"{_ITEM_SELECT}{clause} ORDER BY id DESC LIMIT ?", [*args, limit]
        ).fetchall()
        return [_item(r) for r in rows]

    # --- sources -----------------------------------------------------------

    def insert_source(self, item_id: str, html: str | None, text: str | None) -> None:
        self.conn.execute(
            "INSERT INTO item_sources (item_id, html, text) VALUES (?, ?, ?)", (item_id, html, text)
        )

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self.conn.execute(
            "SELECT html, text FROM item_sources WHERE item_id = ?", (item_id,)
        ).fetchone()
        return (row[0], row[1]) if row else (None, None)

    # --- runs --------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None:
        cols = ", ".join(RUN_COLUMNS)
        marks = ", ".join("?" for _ in RUN_COLUMNS)
        self.conn.execute(
            f"INSERT INTO runs ({cols}) VALUES ({marks})", [getattr(run, c) for c in RUN_COLUMNS]
        )

    def update_run(self, run_id: str, **fields: Any) -> None:
        sets, values = _assignments(fields, _RUN_SETTABLE)
        self.conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*values, run_id])

    def run(self, run_id: str) -> RunRow | None:
        row = self.conn.execute(f"{_RUN_SELECT} WHERE run_id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        rows = self.conn.execute(
            f"{_RUN_SELECT} WHERE item_id = ? ORDER BY created_at, run_id", (item_id,)
        ).fetchall()
        return [_run(r) for r in rows]

    # --- artifacts ---------------------------------------------------------

    def insert_artifact(
        self,
        item_id: str,
        artifact_type: str,
        created_by: str,
        run_id: str | None,
        payload: str,
        meta: str,
        now: int,
    ) -> int:
        """Append the next version; returns it. Versions only grow."""
        row = self.conn.execute(
            "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,"
            " payload, meta, created_at)"
            " SELECT ?, ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ? FROM artifacts"
            " WHERE item_id = ? AND artifact_type = ? RETURNING version",
            (
                item_id,
                artifact_type,
                created_by,
                run_id,
                payload,
                meta,
                now,
                item_id,
                artifact_type,
            ),
        ).fetchone()
        return int(row[0])

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        rows = self.conn.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND run_id = ? AND created_by = 'system'",
            (item_id, run_id),
        ).fetchall()
        return {a.artifact_type: a for a in map(_artifact, rows)}

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version, a user's edit winning over any system version."""
        row = self.conn.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND artifact_type = ?"
            " ORDER BY created_by = 'user' DESC, version DESC LIMIT 1",
            (item_id, artifact_type),
        ).fetchone()
        return _artifact(row) if row else None

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self.conn.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND artifact_type = ? AND version = ?",
            (item_id, artifact_type, version),
        ).fetchone()
        return _artifact(row) if row else None

    def shown_artifacts(self, item_id: str) -> dict[str, ArtifactRow]:
        """For each type, the version a person sees (user edit first, then newest)."""
        rows = self.conn.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? ORDER BY artifact_type,"
            " created_by = 'user' DESC, version DESC",
            (item_id,),
        ).fetchall()
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        rows = self.conn.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? ORDER BY artifact_type, version", (item_id,)
        ).fetchall()
        return [_artifact(r) for r in rows]

    # --- events ------------------------------------------------------------

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
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger,"
            " detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (at, item_id, run_id, kind, from_status, to_status, trigger, detail),
        )
        return int(cur.lastrowid or 0)

    def events_for(self, item_id: str) -> list[EventRow]:
        rows = self.conn.execute(
            f"{_EVENT_SELECT} WHERE item_id = ? ORDER BY seq", (item_id,)
        ).fetchall()
        return [_event(r) for r in rows]

    # --- idempotent requests -------------------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        """(method, item_id, response) recorded for ``request_id``."""
        row = self.conn.execute(
            "SELECT method, item_id, response FROM requests WHERE request_id = ?", (request_id,)
        ).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self.conn.execute(
            "INSERT INTO requests (request_id, method, item_id, response, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (request_id, method, item_id, response, now),
        )

    # --- settings ----------------------------------------------------------

    def setting(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
