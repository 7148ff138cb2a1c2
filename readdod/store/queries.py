"""Every SQL statement readdod runs, as methods of one unit of work.

A :class:`Tx` wraps a ``sqlite3.Connection`` inside a transaction that the
store opened. Its methods are synchronous on purpose: a whole unit of work
runs in the database thread in one hop, so a read-check-write sequence is
atomic (writers are serialised by ``BEGIN IMMEDIATE``) and costs one
thread switch instead of one per statement.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from readdod.models import WIRE_STEPS
from readdod.store.rows import (
    ARTIFACT_COLUMNS,
    ATTEMPT_COLUMNS,
    CHUNK_COLUMNS,
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
    ArtifactRow,
    AttemptRow,
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
_ATTEMPT_SELECT = f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts"
#: An attempt that is not over: the only kind whose row may still change.
_OPEN = "status IN ('queued', 'running')"

_ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}

#: The (status, id) index leaves out the busy states (migration 0008); a query on
#: the other states repeats this condition word for word so that SQLite uses it.
_SETTLED = "status NOT IN ('QUEUED', 'PROCESSING')"
_BUSY = frozenset({"QUEUED", "PROCESSING"})
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


def _attempt(row: Sequence[Any]) -> AttemptRow:
    return AttemptRow(**dict(zip(ATTEMPT_COLUMNS, row, strict=True)))


def _json_rows(rows: Sequence[Sequence[Any]]) -> str:
    return _JSON.encode(rows).decode()


def _insert(table: str, columns: Sequence[str]) -> str:
    cols = ", ".join(columns)
    return f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' for _ in columns)})"


_JSON = msgspec.json.Encoder()
_ARTIFACT_FIELDS = (
    "item_id",
    "artifact_type",
    "version",
    "run_id",
    "payload",
    "meta",
    "created_at",
    "created_by",
)
_EVENT_FIELDS = ("at", "item_id", "run_id", "kind", "from_status", "to_status", "trigger", "detail")
_ARTIFACT_INSERT = _insert("artifacts", _ARTIFACT_FIELDS)
_EVENT_INSERT = _insert("events", _EVENT_FIELDS)
_ATTEMPT_INSERT = _insert("attempts", ATTEMPT_COLUMNS)


#: Set each run's current step from one parameter, a JSON array of [run_id, step].
_RUN_STEPS_UPDATE = (
    "UPDATE runs SET current_step = json_extract(j.value, '$[1]') FROM json_each(?) j"
    " WHERE runs.run_id = json_extract(j.value, '$[0]')"
)


#: Most rows per multi-row INSERT of held-back rows: 9 values each stays well under
#: SQLite's 32,766 bound parameters.
HELD_ROWS_PER_STATEMENT = 1024


@functools.lru_cache(maxsize=32)
def _insert_values(table: str, columns: tuple[str, ...], rows: int) -> str:
    """One INSERT of up to ``rows`` rows, the values bound. Each row starts with a
    mark: 1 for a row to write, NULL for padding (see :func:`_held_statements`)."""
    row = f"({', '.join('?' * (len(columns) + 1))})"
    picks = ", ".join(f"column{i + 2}" for i in range(len(columns)))
    return (
        f"INSERT INTO {table} ({', '.join(columns)})"
        f" SELECT {picks} FROM (VALUES {', '.join([row] * rows)}) WHERE column1 IS NOT NULL"
    )


def _held_statements(
    table: str, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]
) -> list[tuple[str, list[Any]]]:
    """``rows`` as multi-row INSERTs, each padded to a power of two rows.

    SQLite's connection caches each distinct statement it prepares; a shape
    per batch size would fill that cache with large programs. Padding keeps
    it to a dozen shapes per table, for at most twice the bound values.
    """
    out = []
    for start in range(0, len(rows), HELD_ROWS_PER_STATEMENT):
        chunk = rows[start : start + HELD_ROWS_PER_STATEMENT]
        shape = 1 << (len(chunk) - 1).bit_length()
        values = [v for row in chunk for v in (1, *row)]
        values += [None] * ((shape - len(chunk)) * (len(columns) + 1))
        out.append((_insert_values(table, columns, shape), values))
    return out


def _assignments(fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return ", ".join(f"{k} = ?" for k in fields), list(fields.values())


class Tx:
    """Named queries over one connection, inside the store's transaction.

    Appends on the hot path (step artifacts, events, a run's current step)
    are held back. What is still held when the batch's units are done goes
    to the commit thread as a few multi-row statements (:meth:`take_held`);
    a statement that could see them flushes them first (:meth:`flush`, a
    table at a time), so whatever a unit reads sees all that was written
    before it, in order. The few reads on the hot path that are scoped to one
    item or run flush only when that item or run has rows held back (or, for
    artifacts, see them without a flush).

    Held rows are readdod's own values: ids, names from fixed sets, and JSON
    that msgspec wrote.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        #: Statement executions through this Tx (an executemany counts each row).
        self.statements = 0
        self._artifacts: list[tuple[str, str, int, str, str, str, int, str]] = []
        #: The held artifact rows of each item, so that reading one item's is not a scan.
        self._artifact_items: dict[str, list[tuple[str, str, int, str, str, str, int, str]]] = {}
        self._events: list[tuple[Any, ...]] = []
        self._steps: dict[str, str | None] = {}
        #: New attempts (a capture adds one), and the runs they belong to.
        self._attempts: list[tuple[Any, ...]] = []
        self._attempt_runs: set[str] = set()

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> sqlite3.Cursor:
        self._flush_held()
        self.statements += 1
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        self._flush_held()
        self.statements += len(rows)
        return self.conn.executemany(sql, rows)

    def _execute_now(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        """A statement that the rows held back cannot affect: no flush."""
        self.statements += 1
        return self.conn.execute(sql, params)

    def _flush_held(self) -> None:
        if self._artifacts or self._events or self._steps or self._attempts:
            self.flush()

    def _take(
        self,
    ) -> tuple[list[Any], list[Any], list[tuple[str, str | None]], list[tuple[Any, ...]]]:
        """The rows held back (artifacts, events, run steps, attempts), forgotten here and
        counted as written."""
        artifacts, self._artifacts = self._artifacts, []
        self._artifact_items.clear()
        events, self._events = self._events, []
        steps, self._steps = self._steps, {}
        attempts, self._attempts = self._attempts, []
        self._attempt_runs.clear()
        self.statements += len(artifacts) + len(events) + (1 if steps else 0) + len(attempts)
        return artifacts, events, list(steps.items()), attempts

    def flush(self) -> None:
        """Write the rows held back, in the order they were added (a table at a time).

        On the loop, executemany: a multi-row INSERT costs a prepare per shape
        of batch, which only pays off beside the loop (:meth:`take_held`).
        """
        artifacts, events, steps, attempts = self._take()
        if artifacts:
            self.conn.executemany(_ARTIFACT_INSERT, artifacts)
        if steps:
            self.conn.execute(_RUN_STEPS_UPDATE, (_json_rows(steps),))
        if events:
            self.conn.executemany(_EVENT_INSERT, events)
        if attempts:
            self.conn.executemany(_ATTEMPT_INSERT, attempts)

    def take_held(self) -> list[tuple[str, list[Any]]]:
        """The rows held back as statements for the commit thread, forgotten here.

        A multi-row INSERT per table (a run-step UPDATE from a small JSON
        array): the thread that runs them wins the GIL back once per table,
        not once per row as with executemany, and SQLite reads the kilobyte
        payloads as bound values rather than parsing them back out of JSON.
        """
        artifacts, events, steps, attempts = self._take()
        held = _held_statements("artifacts", _ARTIFACT_FIELDS, artifacts)
        if steps:
            held.append((_RUN_STEPS_UPDATE, [_json_rows(steps)]))
        held += _held_statements("events", _EVENT_FIELDS, events)
        held += _held_statements("attempts", ATTEMPT_COLUMNS, attempts)
        return held

    def discard(self) -> None:
        """Forget the rows held back (their unit failed and is rolled back)."""
        self._artifacts.clear()
        self._artifact_items.clear()
        self._events.clear()
        self._steps.clear()
        self._attempts.clear()
        self._attempt_runs.clear()

    # --- items -------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None:
        row = self._execute_now(f"{_ITEM_SELECT} WHERE id = ?", (item_id,)).fetchone()
        return _item(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self.execute(f"{_ITEM_SELECT} WHERE capture_id = ?", (capture_id,)).fetchone()
        return _item(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        cols = ", ".join(ITEM_COLUMNS)
        marks = ", ".join("?" for _ in ITEM_COLUMNS)
        self.execute(
            f"INSERT INTO items ({cols}) VALUES ({marks})",
            [getattr(item, c) for c in ITEM_COLUMNS],
        )

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status; False when it was not ``expected``."""
        sets, values = _assignments({"status": new, **fields}, _ITEM_SETTABLE)
        cur = self._execute_now(
            f"UPDATE items SET {sets} WHERE id = ? AND status = ?", [*values, item_id, expected]
        )
        return cur.rowcount == 1

    def update_fenced(self, item_id: str, owner: str, run_id: str, **fields: Any) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id``."""
        sets, values = _assignments(fields, _ITEM_SETTABLE)
        cur = self._execute_now(
            f"UPDATE items SET {sets} WHERE id = ? AND status = 'PROCESSING'"
            " AND lease_owner = ? AND current_run_id = ?",
            [*values, item_id, owner, run_id],
        )
        return cur.rowcount == 1

    def holds_lease(self, item_id: str, owner: str, run_id: str) -> bool:
        row = self._execute_now(
            "SELECT 1 FROM items WHERE id = ? AND status = 'PROCESSING'"
            " AND lease_owner = ? AND current_run_id = ?",
            (item_id, owner, run_id),
        ).fetchone()
        return row is not None

    def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY (not yet exported)."""
        rows = self.execute(
            f"SELECT i.id FROM items i WHERE i.status = 'READY' AND i.{_SETTLED} AND"
            " (SELECT e.from_status FROM events e WHERE e.item_id = i.id"
            "   AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1) = 'PROCESSING'"
            " ORDER BY i.id"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def queue_due(self, now: int) -> bool:
        """Whether any QUEUED item is due to be claimed."""
        row = self.execute(
            "SELECT 1 FROM items WHERE status = 'QUEUED' AND next_attempt_at <= ? LIMIT 1", (now,)
        ).fetchone()
        return row is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Take up to ``limit`` due QUEUED items, P0 first then oldest."""
        # Only items rows: nothing held back (artifacts, events, run steps) bears on it.
        rows = self._execute_now(
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
            rows = self._execute_now(
                f"UPDATE items SET lease_expires_at = ? WHERE lease_owner = ?"
                f" AND status = 'PROCESSING' AND id IN ({marks}) RETURNING id",
                [until, owner, *chunk],
            ).fetchall()
            renewed.update(r[0] for r in rows)
        return renewed

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running (one statement per 500 runs); returns the updated rows."""
        out: dict[str, RunRow] = {}
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            if any(run_id in self._steps for run_id in chunk):
                self.flush()  # the rows returned must show the step held back
            marks = ", ".join("?" for _ in chunk)
            rows = self._execute_now(
                "UPDATE runs SET status = 'running', attempts = attempts + 1, worker_id = ?,"
                f" started_at = coalesce(started_at, ?) WHERE run_id IN ({marks})"
                f" RETURNING {', '.join(RUN_COLUMNS)}",
                [owner, now, *chunk],
            ).fetchall()
            for r in rows:
                run = _run(r)
                out[run.run_id] = run
        return out

    def held_by(self, owner: str) -> list[ItemRow]:
        """The PROCESSING items whose lease ``owner`` holds."""
        rows = self.execute(
            f"{_ITEM_SELECT} WHERE status = 'PROCESSING' AND lease_owner = ?", (owner,)
        ).fetchall()
        return [_item(r) for r in rows]

    def count_status(self, status: str) -> int:
        if status in _BUSY:
            # A literal, so SQLite counts the state's own partial index.
            sql = f"SELECT count(*) FROM items WHERE status = '{status}'"
            row = self.execute(sql).fetchone()
        else:
            sql = f"SELECT count(*) FROM items WHERE status = ? AND {_SETTLED}"
            row = self.execute(sql, (status,)).fetchone()
        return int(row[0])

    def expired_leases(self, now: int) -> list[ItemRow]:
        rows = self.execute(
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
            if not _BUSY.intersection(statuses):
                where.append(_SETTLED)
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
        rows = self.execute(
            f"{_ITEM_SELECT}{clause} ORDER BY id DESC LIMIT ?", [*args, limit]
        ).fetchall()
        return [_item(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        rows = self.execute(
            f"{_ITEM_SELECT} WHERE canonical_url = ? ORDER BY id", (canonical_url,)
        ).fetchall()
        return [_item(r) for r in rows]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        marks = ", ".join("?" for _ in statuses)
        settled = "" if _BUSY.intersection(statuses) else f" AND {_SETTLED}"
        rows = self.execute(
            f"{_ITEM_SELECT} WHERE status IN ({marks}){settled} ORDER BY id", list(statuses)
        ).fetchall()
        return [_item(r) for r in rows]

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        rows = self.execute(
            f"{_ITEM_SELECT} WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI')"
            " AND next_attempt_at > 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
            (now, limit),
        ).fetchall()
        return [_item(r) for r in rows]

    def next_retry_at(self) -> int | None:
        row = self.execute(
            "SELECT min(next_attempt_at) FROM items WHERE status IN ('FAILED_EXTRACTION',"
            " 'FAILED_AI') AND next_attempt_at > 0"
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    # --- sources -----------------------------------------------------------

    def insert_source(self, item_id: str, html: str | None, text: str | None) -> None:
        self.execute(
            "INSERT INTO item_sources (item_id, html, text) VALUES (?, ?, ?)", (item_id, html, text)
        )

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self.execute(
            "SELECT html, text FROM item_sources WHERE item_id = ?", (item_id,)
        ).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None]]:
        """The sources of ``item_ids`` no longer than ``max_chars``; bigger ones are left out."""
        found: dict[str, tuple[str | None, str | None]] = {}
        for start in range(0, len(item_ids), 500):
            chunk = item_ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            # Sources are never held back: no flush.
            rows = self._execute_now(
                f"SELECT item_id, html, text FROM item_sources WHERE item_id IN ({marks})"
                " AND length(coalesce(html, '')) + length(coalesce(text, '')) <= ?",
                [*chunk, max_chars],
            ).fetchall()
            for item_id, html, text in rows:
                found[item_id] = (html, text)
        return found

    # --- runs --------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None:
        cols = ", ".join(RUN_COLUMNS)
        marks = ", ".join("?" for _ in RUN_COLUMNS)
        self.execute(
            f"INSERT INTO runs ({cols}) VALUES ({marks})", [getattr(run, c) for c in RUN_COLUMNS]
        )

    def update_run(self, run_id: str, **fields: Any) -> None:
        sets, values = _assignments(fields, _RUN_SETTABLE)
        if run_id in self._steps:
            self.flush()
        self._execute_now(f"UPDATE runs SET {sets} WHERE run_id = ?", [*values, run_id])

    def set_current_step(self, run_id: str, step: str | None) -> None:
        """Record the step a run is at (held back: see :meth:`flush`)."""
        self._steps[run_id] = step

    def run(self, run_id: str) -> RunRow | None:
        if run_id in self._steps:
            self.flush()
        row = self._execute_now(f"{_RUN_SELECT} WHERE run_id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        rows = self.execute(
            f"{_RUN_SELECT} WHERE item_id = ? ORDER BY created_at, run_id", (item_id,)
        ).fetchall()
        return [_run(r) for r in rows]

    # --- attempts ----------------------------------------------------------

    def insert_attempt(self, attempt: AttemptRow) -> None:
        """Add an attempt (held back: see :meth:`flush`). The run must have none open:
        end it first (:meth:`end_attempt`)."""
        self._attempts.append(tuple(getattr(attempt, c) for c in ATTEMPT_COLUMNS))
        self._attempt_runs.add(attempt.run_id)

    def _flush_attempts_of(self, run_ids: Iterable[str]) -> None:
        if self._attempt_runs and not self._attempt_runs.isdisjoint(run_ids):
            self.flush()

    def end_attempt(
        self,
        run_id: str,
        status: str,
        now: int,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> bool:
        """Give the run's open attempt its terminal ``status``; False if none was open.

        The step it reached is the run's current step. A terminal attempt is
        never matched again, so it never changes.
        """
        if run_id in self._steps:
            self.flush()
        self._flush_attempts_of((run_id,))
        cur = self._execute_now(
            "UPDATE attempts SET status = ?, finished_at = ?, error_code = ?, error_message = ?,"
            " last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
            f" WHERE run_id = ? AND {_OPEN}",
            (status, now, error_code, error_message, run_id),
        )
        return cur.rowcount > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        self._flush_attempts_of((run_id,))
        row = self._execute_now(
            f"{_ATTEMPT_SELECT} WHERE run_id = ? ORDER BY created_at DESC, attempt_id DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        return _attempt(row) if row else None

    def start_attempts(self, run_ids: Sequence[str], owner: str, now: int, new_id: Any) -> None:
        """The claimed runs' queued attempts start running (one is added where none waits).

        ``new_id(now)`` names an added attempt.
        """
        self._flush_attempts_of(run_ids)
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self._execute_now(
                "UPDATE attempts SET status = 'running', worker_id = ?, started_at = ?,"
                " first_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
                f" WHERE status = 'queued' AND run_id IN ({marks}) RETURNING run_id",
                [owner, now, *chunk],
            ).fetchall()
            if len(rows) == len(chunk):
                continue
            started = {r[0] for r in rows}
            for run_id in chunk:
                if run_id not in started:
                    self._execute_now(
                        "INSERT INTO attempts (attempt_id, run_id, item_id, mode, status,"
                        " first_step, worker_id, created_at, started_at)"
                        " SELECT ?, run_id, item_id, 'RESUME', 'running', current_step, ?, ?, ?"
                        " FROM runs WHERE run_id = ?",
                        (new_id(now), owner, now, now, run_id),
                    )

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        rows = self.execute(
            f"{_ATTEMPT_SELECT} WHERE run_id IN (SELECT run_id FROM runs WHERE item_id = ?)"
            " ORDER BY created_at, attempt_id",
            (item_id,),
        ).fetchall()
        return [_attempt(r) for r in rows]

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
        row = self.execute(
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
        rows = self._execute_now(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND run_id = ? AND created_by = 'system'",
            (item_id, run_id),
        ).fetchall()
        found = {a.artifact_type: a for a in map(_artifact, rows)}
        for art in self._held_artifacts(item_id):
            if art.run_id == run_id:
                found[art.artifact_type] = art
        return found

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        """``{type: (run_id, payload)}`` of the run's system artifacts of ``types``.

        What the READY gate reads: only the columns it judges, so the run's
        extraction (kilobytes of text) is neither read nor copied.
        """
        marks = ", ".join("?" for _ in types)
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload FROM artifacts WHERE item_id = ?"
            f" AND run_id = ? AND created_by = 'system' AND artifact_type IN ({marks})",
            (item_id, run_id, *types),
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {r[0]: (r[1], r[2]) for r in rows}
        for row in self._artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        """:meth:`run_payloads`, and the payload of a person's newest score (not set
        aside), if any: what a run that passes the gate makes the item show. One read.
        """
        marks = ", ".join("?" for _ in types)
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload, created_by, version FROM artifacts"
            f" WHERE item_id = ? AND artifact_type IN ({marks}) AND (created_by = 'system'"
            " AND run_id = ? OR created_by = 'user' AND discarded = 0"
            " AND artifact_type = 'score')",
            (item_id, *types, run_id),
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {}
        mine: tuple[int, str] | None = None
        for kind, of_run, payload, created_by, version in rows:
            if created_by == "system":
                found[kind] = (of_run, payload)
            elif mine is None or version > mine[0]:
                mine = (version, payload)
        for row in self._artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found, mine[1] if mine else None

    def _held_artifacts(self, item_id: str) -> list[ArtifactRow]:
        return [
            ArtifactRow(
                item_id=row[0],
                artifact_type=row[1],
                version=row[2],
                run_id=row[3],
                payload=row[4],
                meta=row[5],
                created_at=row[6],
                created_by=row[7],
            )
            for row in self._artifact_items.get(item_id, ())
        ]

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str
    ) -> tuple[int | None, int, bool, int | None]:
        """All a step's commit needs to know, in one statement.

        (the item's orphan count while ``owner`` holds its lease for ``run_id``,
        else None; the newest version of ``artifact_type``; whether a person
        edited it; the version this run already committed, if any).
        """
        if item_id in self._artifact_items:
            self.flush()
        row = self._execute_now(
            "SELECT (SELECT orphan_count FROM items WHERE id = ? AND status = 'PROCESSING'"
            "        AND lease_owner = ? AND current_run_id = ?),"
            " coalesce(max(version), 0), coalesce(max(created_by = 'user' AND discarded = 0), 0),"
            " max(CASE WHEN run_id = ? AND created_by = 'system' THEN version END)"
            " FROM artifacts WHERE item_id = ? AND artifact_type = ?",
            (item_id, owner, run_id, run_id, item_id, artifact_type),
        ).fetchone()
        return row[0], int(row[1]), bool(row[2]), row[3]

    def add_artifact(
        self,
        item_id: str,
        artifact_type: str,
        version: int,
        run_id: str,
        payload: str,
        meta: str,
        now: int,
    ) -> None:
        """Add a system artifact at the version :meth:`step_slot` found for it (held back)."""
        row = (item_id, artifact_type, version, run_id, payload, meta, now, "system")
        self._artifacts.append(row)
        self._artifact_items.setdefault(item_id, []).append(row)

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version, a user's edit winning over any system version."""
        row = self._execute_now(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND artifact_type = ? AND discarded = 0"
            " ORDER BY created_by = 'user' DESC, version DESC LIMIT 1",
            (item_id, artifact_type),
        ).fetchone()
        best = _artifact(row) if row else None
        if best is not None and best.created_by == "user":
            return best
        for art in self._held_artifacts(item_id):
            if art.artifact_type == artifact_type and (best is None or art.version > best.version):
                best = art
        return best

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND artifact_type = ? AND version = ?",
            (item_id, artifact_type, version),
        ).fetchone()
        return _artifact(row) if row else None

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """A person's newest version of ``artifact_type`` that is not set aside."""
        row = self._execute_now(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND artifact_type = ? AND created_by = 'user'"
            " AND discarded = 0 ORDER BY version DESC LIMIT 1",
            (item_id, artifact_type),
        ).fetchone()
        return _artifact(row) if row else None

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        """Set a person's versions of a type aside; returns how many were shown before."""
        cur = self.execute(
            "UPDATE artifacts SET discarded = 1 WHERE item_id = ? AND artifact_type = ?"
            " AND created_by = 'user' AND discarded = 0",
            (item_id, artifact_type),
        )
        if artifact_type == "extraction" and cur.rowcount:
            self.execute(
                "UPDATE items_fts SET body = coalesce((SELECT json_extract(a.payload, '$.text')"
                "   FROM artifacts a WHERE a.item_id = ? AND a.artifact_type = 'extraction'"
                "    AND a.discarded = 0 ORDER BY a.created_by = 'user' DESC, a.version DESC"
                "  LIMIT 1), '')"
                " WHERE rowid = (SELECT rowid FROM items WHERE id = ?)",
                (item_id, item_id),
            )
        return int(cur.rowcount)

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        """For each type, the version a person sees.

        A person's newest version (not set aside) first; else the system's
        version of ``run_id``, the run the item shows, so a card never mixes
        runs. An extraction that run reused (a regenerate without refetch) is
        the newest one before it.
        """
        rows = self.execute(
            f"{_ARTIFACT_SELECT} WHERE item_id = ? AND (created_by = 'user' AND discarded = 0"
            "  OR created_by = 'system' AND (run_id IS ? OR artifact_type = 'extraction'))"
            " ORDER BY artifact_type, created_by = 'user' DESC, run_id IS ? DESC, version DESC",
            (item_id, run_id, run_id),
        ).fetchall()
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        rows = self.execute(
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
        rows = self.execute(sql + " ORDER BY step, idx", args).fetchall()
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in rows]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        """Start ``step``'s chunks afresh: ``total`` pending rows."""
        self.execute("DELETE FROM chunks WHERE run_id = ? AND step = ?", (run_id, step))
        self.executemany(
            "INSERT INTO chunks (run_id, step, idx, status, model, updated_at)"
            " VALUES (?, ?, ?, 'pending', ?, ?)",
            [(run_id, step, i, model, now) for i in range(total)],
        )

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        """Chunks left unfinished by a failure go back to pending, to be asked of ``model``."""
        self.execute(
            "UPDATE chunks SET status = 'pending', model = ?, updated_at = ?"
            " WHERE run_id = ? AND step = ? AND status != 'done'",
            (model, now, run_id, step),
        )

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight (``processing``/``retrying``) go back to pending."""
        self.execute(
            "UPDATE chunks SET status = 'pending', updated_at = ?"
            " WHERE run_id = ? AND status IN ('processing', 'retrying')",
            (now, run_id),
        )

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        sets, values = _assignments(fields, _CHUNK_SETTABLE)
        self.execute(
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
    ) -> None:
        """Append an event (held back: see :meth:`flush`)."""
        self._events.append((at, item_id, run_id, kind, from_status, to_status, trigger, detail))

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger: (at, item_id, run_id, kind, from, to, detail) each."""
        self._events.extend((*r[:6], trigger, r[6]) for r in rows)

    def events_for(self, item_id: str) -> list[EventRow]:
        rows = self.execute(
            f"{_EVENT_SELECT} WHERE item_id = ? ORDER BY seq", (item_id,)
        ).fetchall()
        return [_event(r) for r in rows]

    # --- idempotent requests -------------------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        """(method, item_id, response) recorded for ``request_id``."""
        row = self.execute(
            "SELECT method, item_id, response FROM requests WHERE request_id = ?", (request_id,)
        ).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self.execute(
            "INSERT INTO requests (request_id, method, item_id, response, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (request_id, method, item_id, response, now),
        )

    # --- settings ----------------------------------------------------------

    def setting(self, key: str) -> str | None:
        row = self.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # --- exports -------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None:
        row = self.execute(
            f"SELECT {', '.join(EXPORT_COLUMNS)} FROM exports WHERE export_key = ?",
            (export_key,),
        ).fetchone()
        return ExportRow(**dict(zip(EXPORT_COLUMNS, row, strict=True))) if row else None

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        cur = self.execute(
            f"INSERT INTO exports ({', '.join(EXPORT_COLUMNS)})"
            f" VALUES ({', '.join('?' for _ in EXPORT_COLUMNS)}) ON CONFLICT DO NOTHING",
            [getattr(row, c) for c in EXPORT_COLUMNS],
        )
        return cur.rowcount == 1

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        """The files of an item's earlier exports in ``fmt``, newest first (JSON lists)."""
        rows = self.execute(
            "SELECT files FROM exports WHERE item_id = ? AND format = ?"
            " ORDER BY created_at DESC, export_key",
            (item_id, fmt),
        ).fetchall()
        return [r[0] for r in rows]

    # --- health, stats, retention ---------------------------------------------

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration in ms) of runs finished since ``since``."""
        rows = self.execute(
            "SELECT status, count(*), avg(finished_at - coalesce(started_at, created_at))"
            " FROM runs WHERE finished_at >= ? GROUP BY status",
            (since,),
        ).fetchall()
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items and since when the oldest of them has been waiting (ms)."""
        row = self.execute(
            "SELECT count(*), min(max(updated_at, next_attempt_at)) FROM items"
            " WHERE status = 'QUEUED'"
        ).fetchone()
        return int(row[0]), row[1]

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since`` (every step, export included)."""
        row = self.execute(
            "SELECT count(*) FROM events WHERE at >= ? AND kind = 'transition'"
            " AND to_status LIKE 'FAILED\\_%' ESCAPE '\\'",
            (since,),
        ).fetchone()
        return int(row[0])

    def count_by_status(self) -> dict[str, int]:
        rows = self.execute("SELECT status, count(*) FROM items GROUP BY status").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def runs_by_status(self) -> dict[str, int]:
        rows = self.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def attempts_by_status(self) -> dict[str, int]:
        rows = self.execute("SELECT status, count(*) FROM attempts GROUP BY status").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` finished steps that recorded one."""
        rows = self.execute(
            "SELECT json_extract(detail, '$.step'), json_extract(detail, '$.duration_ms')"
            " FROM events WHERE kind = 'step' AND json_extract(detail, '$.duration_ms') IS NOT NULL"
            " ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens recorded in every artifact's meta."""
        row = self.execute(
            "SELECT coalesce(sum(json_extract(meta, '$.prompt_tokens')), 0),"
            " coalesce(sum(json_extract(meta, '$.completion_tokens')), 0) FROM artifacts"
        ).fetchone()
        return int(row[0]), int(row[1])

    _PRUNE_RUNS = (
        "SELECT r.run_id FROM runs r JOIN items i ON i.id = r.item_id"
        " WHERE i.status = 'ARCHIVED' AND r.run_id IS NOT i.current_run_id"
        " AND r.run_id IS NOT i.ready_run_id AND ("
        "  (r.status = 'succeeded' AND coalesce(r.finished_at, r.created_at) < :finished)"
        "  OR (r.status = 'cancelled' AND coalesce(r.finished_at, r.created_at) < :cancelled)"
        "  OR (r.status IN ('failed', 'timeout')"
        "      AND coalesce(r.finished_at, r.created_at) < :failed))"
    )
    _PRUNE_EVENTS = (
        "SELECT seq FROM events WHERE at < :finished AND (item_id IS NULL"
        f" OR item_id IN (SELECT id FROM items WHERE status = 'ARCHIVED' AND {_SETTLED}))"
    )
    # Old superseded versions: none a person may see (their newest edit, the newest
    # system version, those of the item's current run and of the run it shows); the
    # newest :keep of them stay.
    _PRUNE_ARTIFACTS = (
        "SELECT item_id, artifact_type, version FROM ("
        " SELECT a.item_id, a.artifact_type, a.version, row_number() OVER ("
        "   PARTITION BY a.item_id, a.artifact_type ORDER BY a.version DESC) AS rank"
        " FROM artifacts a JOIN items i ON i.id = a.item_id"
        " WHERE i.status = 'ARCHIVED'"
        "  AND a.created_at < :finished"
        "  AND NOT (a.created_by = 'system'"
        "           AND (a.run_id IS i.current_run_id OR a.run_id IS i.ready_run_id))"
        "  AND a.version NOT IN (SELECT max(s.version) FROM artifacts s"
        "   WHERE s.item_id = a.item_id AND s.artifact_type = a.artifact_type"
        "     AND (s.created_by = 'system' OR s.discarded = 0) GROUP BY s.created_by)"
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
        has_chunks = self.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunks'"
        ).fetchone()
        if has_chunks:
            self.execute(f"DELETE FROM chunks WHERE run_id IN ({self._PRUNE_RUNS})", args)
        self.execute(f"DELETE FROM runs WHERE run_id IN ({self._PRUNE_RUNS})", args)
        self.execute(f"DELETE FROM events WHERE seq IN ({self._PRUNE_EVENTS})", args)
        self.execute(
            "DELETE FROM artifacts WHERE (item_id, artifact_type, version)"
            f" IN ({self._PRUNE_ARTIFACTS})",
            args,
        )
        return counts

    def _count(self, select: str, args: dict[str, int]) -> int:
        return int(self.execute(f"SELECT count(*) FROM ({select})", args).fetchone()[0])

    # --- bulk recovery ---------------------------------------------------------

    def orphan_processing(
        self,
        now: int,
        *,
        expired_before: int | None,
        max_orphanings: int,
        reason: str,
        error_code: str,
        message_format: str,
        failed_at: str,
        sample: int,
        attempt_stamp: str,
    ) -> tuple[int, int, list[tuple[str, str | None, int, str, bool, str | None]]]:
        """Requeue (or fail, past the crash-loop limit) every orphaned PROCESSING item at once.

        Orphans are the PROCESSING items (all of them, or those whose lease ran
        out before ``expired_before``). Each gets ``orphan_count + 1``; those
        reaching ``max_orphanings`` fail at their run's current step with
        ``error_code`` and ``printf(message_format, count, step, id)``, the
        others go back to QUEUED, their run to 'queued'; either way the run's chunks in
        flight go back to pending. One transition event
        per item, as a single move would write. A handful of statements
        whatever the count (events and runs first, read from the items before
        they change), several times cheaper per orphan than a move each. Each
        lost attempt fails with ``error_code``; a requeued run gets a RESUME
        attempt whose id starts with ``attempt_stamp``. Returns
        (requeued, failed, the first ``sample`` orphans by id as (id, run_id,
        orphan_count, step, failed, message)).
        """
        where = "i.status = 'PROCESSING'"
        if expired_before is not None:
            where += " AND i.lease_expires_at < :before"
        args: dict[str, Any] = {
            "now": now,
            "before": expired_before,
            "max": max_orphanings,
            "reason": reason,
            "code": error_code,
            "fmt": message_format,
            "at": failed_at,
        }
        # Named parameters, so through the connection; counted as Tx.execute counts.
        self._flush_held()
        c = self.conn
        self.statements += 1
        total, failed = c.execute(
            f"SELECT count(*), coalesce(sum(i.orphan_count + 1 >= :max), 0) FROM items i"
            f" WHERE {where}",
            args,
        ).fetchone()
        if not total:
            return 0, 0, []
        # Only a failing orphan needs its run's step (and attempts): read it there alone.
        fail = "i.orphan_count + 1 >= :max"
        step = (
            "coalesce((SELECT r.current_step FROM runs r WHERE r.run_id = i.current_run_id),"
            " 'extraction')"
        )
        # A failure names the step by its wire name (models.wire_step), in its message too.
        wire = "CASE {} {} END".format(
            step, " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in WIRE_STEPS.items())
        )
        message = f"printf(:fmt, i.orphan_count + 1, {wire}, i.id)"
        # The failed state, as the orchestrator's _failed_state picks it.
        failed_state = (
            f"CASE WHEN {step} = 'extraction' THEN 'FAILED_EXTRACTION' ELSE 'FAILED_AI' END"
        )
        rows = c.execute(
            f"SELECT i.id, i.current_run_id, i.orphan_count + 1, {step}, {fail},"
            f" CASE WHEN {fail} THEN {message} END FROM items i WHERE {where} ORDER BY i.id"
            " LIMIT :sample",
            {**args, "sample": sample},
        ).fetchall()
        c.execute(
            "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger,"
            " detail)"
            " SELECT :now, i.id, i.current_run_id, 'transition', 'PROCESSING',"
            f"        CASE WHEN {fail} THEN {failed_state} ELSE 'QUEUED' END, 'system',"
            f"        CASE WHEN {fail}"
            f"             THEN json_object('step', {step}, 'error_code', :code,"
            f"                              'message', substr({message}, 1, 500),"
            "                              'next_attempt_at', NULL)"
            "             ELSE json_object('reason', :reason, 'orphan_count', i.orphan_count + 1)"
            "        END"
            f"   FROM items i WHERE {where} ORDER BY i.id",
            args,
        )
        c.execute(
            "UPDATE runs SET status = 'queued'"
            f" WHERE run_id IN (SELECT i.current_run_id FROM items i WHERE {where} AND NOT {fail})",
            args,
        )
        # The attempts the lost workers ran are over; a requeued run gets a new one.
        c.execute(
            "UPDATE attempts SET status = 'failed', error_code = :code, finished_at = :now,"
            " error_message = 'the worker running this attempt was lost (' || :reason || ')',"
            " last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
            " WHERE status IN ('queued', 'running')"
            f" AND run_id IN (SELECT i.current_run_id FROM items i WHERE {where})",
            args,
        )
        c.execute(
            "INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, created_at)"
            " SELECT :stamp || upper(hex(randomblob(8))), i.current_run_id, i.id, 'RESUME',"
            f" 'queued', :now FROM items i WHERE {where} AND NOT {fail}"
            " AND i.current_run_id IS NOT NULL",
            {**args, "stamp": attempt_stamp},
        )
        # No chunk of an orphaned run stays in flight: it starts again when the run resumes.
        c.execute(
            "UPDATE chunks SET status = 'pending', updated_at = :now"
            " WHERE status IN ('processing', 'retrying')"
            f" AND run_id IN (SELECT i.current_run_id FROM items i WHERE {where})",
            args,
        )
        if failed:
            c.execute(
                "UPDATE runs SET status = 'failed', error_code = :code,"
                f" error_message = substr({message}, 1, 1000), finished_at = :now"
                f" FROM items i WHERE i.current_run_id = runs.run_id AND {where} AND {fail}",
                args,
            )
            self.statements += 1
        # The failure as models.Failure encodes it (omit_defaults: attempts 1 and
        # auto_retries 0 are left out; a path that names no key removes nothing).
        attempts = "coalesce((SELECT r.attempts FROM runs r WHERE r.run_id = i.current_run_id), 1)"
        # WORKER_LOST is retryable (errors.RETRYABLE) but is never retried by
        # itself: next_attempt_at is set to 0 below.
        failure = (
            f"json_remove(json_object('failed_step', {wire}, 'error_code', :code,"
            f" 'message', {message}, 'retryable', json('true'), 'attempts', {attempts},"
            " 'last_attempt_at', :at, 'auto_retries', i.auto_retries),"
            f" CASE WHEN {attempts} = 1 THEN '$.attempts' ELSE '$.none' END,"
            " CASE WHEN i.auto_retries = 0 THEN '$.auto_retries' ELSE '$.none' END)"
        )
        # Every SET expression reads the row as it was, so `fail` is the old count's.
        c.execute(
            f"UPDATE items AS i SET status = CASE WHEN {fail} THEN {failed_state} ELSE 'QUEUED'"
            " END, updated_at = :now, lease_owner = NULL, lease_expires_at = NULL,"
            f" orphan_count = i.orphan_count + 1,"
            f" failure = CASE WHEN {fail} THEN {failure} ELSE i.failure END,"
            f" next_attempt_at = CASE WHEN {fail} THEN 0 ELSE i.next_attempt_at END"
            f" WHERE {where}",
            args,
        )
        self.statements += 7
        return (
            int(total) - int(failed),
            int(failed),
            [(r[0], r[1], int(r[2]), r[3], bool(r[4]), r[5]) for r in rows],
        )
