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
    CHUNK_COLUMNS,
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
    ArtifactRow,
    ChunkRow,
    EventRow,
    ExportRow,
    ItemRow,
    RunRow,
)

_ITEM_SELECT = f"SELECT {', '.join(ITEM_COLUMNS)} FROM items"
_CHUNK_SELECT = f"SELECT {', '.join(CHUNK_COLUMNS)} FROM chunks"
_RUN_SELECT = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs"
_ARTIFACT_SELECT = f"SELECT {', '.join(ARTIFACT_COLUMNS)} FROM artifacts"
_EVENT_SELECT = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events"

_ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
_RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}
_CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}


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

    def count_status(self, status: str) -> int:
        row = self.conn.execute("SELECT count(*) FROM items WHERE status = ?", (status,)).fetchone()
        return int(row[0])

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
        *,
        tags: Sequence[str] = (),
        match: str | None = None,
    ) -> list[ItemRow]:
        """Newest first, keyset-paginated by id (ids sort by creation time).

        ``tags``: every one must be on the item. ``match``: an FTS5 query over
        title, url, intent and extracted text.
        """
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            args.extend(statuses)
        if priority:
            where.append("priority = ?")
            args.append(priority)
        for tag in tags:
            where.append("EXISTS (SELECT 1 FROM json_each(items.tags) WHERE value = ?)")
            args.append(tag)
        if match:
            where.append("rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?)")
            args.append(match)
        if before_id:
            where.append("id < ?")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.conn.execute(
            f"{_ITEM_SELECT}{clause} ORDER BY id DESC LIMIT ?", [*args, limit]
        ).fetchall()
        return [_item(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        rows = self.conn.execute(
            f"{_ITEM_SELECT} WHERE canonical_url = ? ORDER BY id", (canonical_url,)
        ).fetchall()
        return [_item(r) for r in rows]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        marks = ", ".join("?" for _ in statuses)
        rows = self.conn.execute(
            f"{_ITEM_SELECT} WHERE status IN ({marks}) ORDER BY id", list(statuses)
        ).fetchall()
        return [_item(r) for r in rows]

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        rows = self.conn.execute(
            f"{_ITEM_SELECT} WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI')"
            " AND next_attempt_at > 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
            (now, limit),
        ).fetchall()
        return [_item(r) for r in rows]

    def next_retry_at(self) -> int | None:
        row = self.conn.execute(
            "SELECT min(next_attempt_at) FROM items WHERE status IN ('FAILED_EXTRACTION',"
            " 'FAILED_AI') AND next_attempt_at > 0"
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

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

    # --- chunks ------------------------------------------------------------

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        sql = f"{_CHUNK_SELECT} WHERE run_id = ?"
        args: list[Any] = [run_id]
        if step is not None:
            sql += " AND step = ?"
            args.append(step)
        rows = self.conn.execute(sql + " ORDER BY step, idx", args).fetchall()
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in rows]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        """Start ``step``'s chunks afresh: ``total`` pending rows."""
        self.conn.execute("DELETE FROM chunks WHERE run_id = ? AND step = ?", (run_id, step))
        self.conn.executemany(
            "INSERT INTO chunks (run_id, step, idx, status, model, updated_at)"
            " VALUES (?, ?, ?, 'pending', ?, ?)",
            [(run_id, step, i, model, now) for i in range(total)],
        )

    def reopen_chunks(self, run_id: str, step: str, now: int) -> None:
        """Chunks left unfinished by a crash or a failure go back to pending."""
        self.conn.execute(
            "UPDATE chunks SET status = 'pending', updated_at = ?"
            " WHERE run_id = ? AND step = ? AND status != 'done'",
            (now, run_id, step),
        )

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        sets, values = _assignments(fields, _CHUNK_SETTABLE)
        self.conn.execute(
            f"UPDATE chunks SET {sets} WHERE run_id = ? AND step = ? AND idx = ?",
            [*values, run_id, step, idx],
        )

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

    # --- exports -------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None:
        row = self.conn.execute(
            f"SELECT {', '.join(EXPORT_COLUMNS)} FROM exports WHERE export_key = ?",
            (export_key,),
        ).fetchone()
        return ExportRow(**dict(zip(EXPORT_COLUMNS, row, strict=True))) if row else None

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        cur = self.conn.execute(
            f"INSERT INTO exports ({', '.join(EXPORT_COLUMNS)})"
            f" VALUES ({', '.join('?' for _ in EXPORT_COLUMNS)}) ON CONFLICT DO NOTHING",
            [getattr(row, c) for c in EXPORT_COLUMNS],
        )
        return cur.rowcount == 1

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        """The files of an item's earlier exports in ``fmt``, newest first (JSON lists)."""
        rows = self.conn.execute(
            "SELECT files FROM exports WHERE item_id = ? AND format = ?"
            " ORDER BY created_at DESC, export_key",
            (item_id, fmt),
        ).fetchall()
        return [r[0] for r in rows]

    # --- health, stats, retention ---------------------------------------------

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration in ms) of runs finished since ``since``."""
        rows = self.conn.execute(
            "SELECT status, count(*), avg(finished_at - coalesce(started_at, created_at))"
            " FROM runs WHERE finished_at >= ? GROUP BY status",
            (since,),
        ).fetchall()
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items and since when the oldest of them has been waiting (ms)."""
        row = self.conn.execute(
            "SELECT count(*), min(max(updated_at, next_attempt_at)) FROM items"
            " WHERE status = 'QUEUED'"
        ).fetchone()
        return int(row[0]), row[1]

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since`` (every step, export included)."""
        row = self.conn.execute(
            "SELECT count(*) FROM events WHERE at >= ? AND kind = 'transition'"
            " AND to_status LIKE 'FAILED\\_%' ESCAPE '\\'",
            (since,),
        ).fetchone()
        return int(row[0])

    def count_by_status(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT status, count(*) FROM items GROUP BY status").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def runs_by_status(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` finished steps that recorded one."""
        rows = self.conn.execute(
            "SELECT json_extract(detail, '$.step'), json_extract(detail, '$.duration_ms')"
            " FROM events WHERE kind = 'step' AND json_extract(detail, '$.duration_ms') IS NOT NULL"
            " ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens recorded in every artifact's meta."""
        row = self.conn.execute(
            "SELECT coalesce(sum(json_extract(meta, '$.prompt_tokens')), 0),"
            " coalesce(sum(json_extract(meta, '$.completion_tokens')), 0) FROM artifacts"
        ).fetchone()
        return int(row[0]), int(row[1])

    _PRUNE_RUNS = (
        "SELECT r.run_id FROM runs r JOIN items i ON i.id = r.item_id"
        " WHERE i.status = 'ARCHIVED' AND r.run_id IS NOT i.current_run_id AND ("
        "  (r.status = 'succeeded' AND coalesce(r.finished_at, r.created_at) < :finished)"
        "  OR (r.status = 'cancelled' AND coalesce(r.finished_at, r.created_at) < :cancelled)"
        "  OR (r.status IN ('failed', 'timeout')"
        "      AND coalesce(r.finished_at, r.created_at) < :failed))"
    )
    _PRUNE_EVENTS = (
        "SELECT seq FROM events WHERE at < :finished AND (item_id IS NULL"
        " OR item_id IN (SELECT id FROM items WHERE status = 'ARCHIVED'))"
    )
    # Old superseded versions: neither the one a person sees (a user's edit first, then
    # the newest) nor one of the item's current run; the newest :keep of them stay.
    _PRUNE_ARTIFACTS = (
        "SELECT item_id, artifact_type, version FROM ("
        " SELECT a.item_id, a.artifact_type, a.version, row_number() OVER ("
        "   PARTITION BY a.item_id, a.artifact_type ORDER BY a.version DESC) AS rank"
        " FROM artifacts a JOIN items i ON i.id = a.item_id"
        " WHERE i.status = 'ARCHIVED'"
        "  AND a.created_at < :finished"
        "  AND NOT (a.created_by = 'system' AND a.run_id IS i.current_run_id)"
        "  AND a.version <> (SELECT s.version FROM artifacts s"
        "   WHERE s.item_id = a.item_id AND s.artifact_type = a.artifact_type"
        "   ORDER BY s.created_by = 'user' DESC, s.version DESC LIMIT 1)"
        ") WHERE rank > :keep"
    )

    def prune_archived(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove (or only count) what retention allows; touches ARCHIVED items only."""
        args = {
            "finished": finished_before,
            "cancelled": cancelled_before,
            "failed": failed_before,
            "keep": keep_versions,
        }
        counts = {
            "runs": self._count(self._PRUNE_RUNS, args),
            "events": self._count(self._PRUNE_EVENTS, args),
            "artifacts": self._count(self._PRUNE_ARTIFACTS, args),
        }
        if dry_run:
            return counts
        has_chunks = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunks'"
        ).fetchone()
        if has_chunks:
            self.conn.execute(f"DELETE FROM chunks WHERE run_id IN ({self._PRUNE_RUNS})", args)
        self.conn.execute(f"DELETE FROM runs WHERE run_id IN ({self._PRUNE_RUNS})", args)
        self.conn.execute(f"DELETE FROM events WHERE seq IN ({self._PRUNE_EVENTS})", args)
        self.conn.execute(
            "DELETE FROM artifacts WHERE (item_id, artifact_type, version)"
            f" IN ({self._PRUNE_ARTIFACTS})",
            args,
        )
        return counts

    def _count(self, select: str, args: dict[str, int]) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM ({select})", args).fetchone()[0])
