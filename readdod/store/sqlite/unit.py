"""The SQLite unit of work: every named operation readdod asks of its database.

A :class:`SqliteUnitOfWork` wraps a ``sqlite3.Connection`` inside a
transaction that the store opened. Its methods are synchronous on purpose: a
whole unit of work runs in one hop (on the loop for writes, in the reader's
thread for reads), so a read-check-write sequence is atomic (writers are
serialised by ``BEGIN IMMEDIATE``) and costs no thread switch per statement.
Static statements come from ``sql/queries.sql`` by name; what is composed
here is what varies per call (the columns a caller sets, ``IN`` lists, the
conditions of a listing).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from readdod.errors import ValidationFailed
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
from readdod.store.sqlite.buffer import WriteBuffer
from readdod.store.sqlite.queries import QUERIES as Q

_ITEM_LIST = ", ".join(ITEM_COLUMNS)
_RUN_LIST = ", ".join(RUN_COLUMNS)
_SETTLED = Q["settled"]
_BUSY = frozenset({"QUEUED", "PROCESSING"})
_ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
_RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}
_CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}

#: Ids per statement of the ``IN (...)`` lists: well under SQLite's bound-parameter limit.
_IDS_PER_STATEMENT = 500
#: Most words of a search: every one is an FTS5 prefix term.
SEARCH_WORDS_MAX = 32


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


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _assignments(fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return ", ".join(f"{k} = ?" for k in fields), list(fields.values())


def search_query(text: str) -> str:
    """A person's words as an FTS5 query: every word must match, as a prefix.

    Quoted, so no word is read as FTS5 syntax (AND, NEAR, a column filter).
    """
    words = re.findall(r"\w+", text)
    if not words:
        raise ValidationFailed("query needs at least one word to search for")
    return " ".join(f'"{w}"*' for w in words[:SEARCH_WORDS_MAX])


class SqliteUnitOfWork:
    """Named operations over one connection, inside the store's transaction.

    Appends on the hot path (step artifacts, events, a run's current step,
    new attempts) are held back in a :class:`~readdod.store.sqlite.buffer.WriteBuffer`.
    What is still held when the batch's units are done goes to the commit
    thread as a few multi-row statements (:meth:`take_held`); a statement
    that could see them flushes them first (:meth:`flush`), so whatever a
    unit reads sees all that was written before it, in order. The few reads
    on the hot path that are scoped to one item or run flush only when that
    item or run has rows held back (or, for artifacts, see them without a
    flush).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        #: Statement executions through this unit (an executemany counts each row).
        self.statements = 0
        self._held = WriteBuffer()

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> sqlite3.Cursor:
        if self._held:
            self.flush()
        self.statements += 1
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        if self._held:
            self.flush()
        self.statements += len(rows)
        return self.conn.executemany(sql, rows)

    def _execute_now(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        """A statement that the rows held back cannot affect: no flush."""
        self.statements += 1
        return self.conn.execute(sql, params)

    def flush(self) -> None:
        """Write the rows held back, in the order they were added (a table at a time)."""
        self.statements += self._held.write(self.conn)

    def take_held(self) -> list[tuple[str, list[Any]]]:
        """The rows held back as statements for the commit thread, forgotten here."""
        held, count = self._held.take_statements()
        self.statements += count
        return held

    def discard(self) -> None:
        """Forget the rows held back (their unit failed and is rolled back)."""
        self._held.discard()

    # --- items -------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None:
        row = self._execute_now(Q["item_by_id"], (item_id,)).fetchone()
        return _item(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self.execute(Q["item_by_capture_id"], (capture_id,)).fetchone()
        return _item(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        self.execute(Q["insert_item"], [getattr(item, c) for c in ITEM_COLUMNS])

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
        row = self._execute_now(Q["holds_lease"], (item_id, owner, run_id)).fetchone()
        return row is not None

    def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY (not yet exported)."""
        return [str(r[0]) for r in self.execute(Q["ready_from_runs"]).fetchall()]

    def queue_due(self, now: int) -> bool:
        """Whether any QUEUED item is due to be claimed."""
        return self.execute(Q["queue_due"], (now,)).fetchone() is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Take up to ``limit`` due QUEUED items, P0 first then oldest."""
        # Only items rows: nothing held back (artifacts, events, run steps) bears on it.
        rows = self._execute_now(Q["claim_items"], (owner, lease_until, now, now, limit)).fetchall()
        items = [_item(r) for r in rows]
        items.sort(key=lambda i: (i.priority, i.created_at))
        return items

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds; returns the ids renewed."""
        ids = list(item_ids)
        renewed: set[str] = set()
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start : start + _IDS_PER_STATEMENT]
            rows = self._execute_now(
                "UPDATE items SET lease_expires_at = ? WHERE lease_owner = ?"
                f" AND status = 'PROCESSING' AND id IN ({_marks(chunk)}) RETURNING id",
                [until, owner, *chunk],
            ).fetchall()
            renewed.update(r[0] for r in rows)
        return renewed

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running (one statement per 500 runs); returns the updated rows."""
        out: dict[str, RunRow] = {}
        for start in range(0, len(run_ids), _IDS_PER_STATEMENT):
            chunk = run_ids[start : start + _IDS_PER_STATEMENT]
            if any(run_id in self._held.steps for run_id in chunk):
                self.flush()  # the rows returned must show the step held back
            rows = self._execute_now(
                "UPDATE runs SET status = 'running', attempts = attempts + 1, worker_id = ?,"
                f" started_at = coalesce(started_at, ?) WHERE run_id IN ({_marks(chunk)})"
                f" RETURNING {_RUN_LIST}",
                [owner, now, *chunk],
            ).fetchall()
            for r in rows:
                run = _run(r)
                out[run.run_id] = run
        return out

    def held_by(self, owner: str) -> list[ItemRow]:
        """The PROCESSING items whose lease ``owner`` holds."""
        return [_item(r) for r in self.execute(Q["held_by"], (owner,)).fetchall()]

    def count_status(self, status: str) -> int:
        if status == "QUEUED":
            row = self.execute(Q["count_queued"]).fetchone()
        elif status == "PROCESSING":
            row = self.execute(Q["count_processing"]).fetchone()
        else:
            row = self.execute(Q["count_settled"], (status,)).fetchone()
        return int(row[0])

    def list_items(
        self,
        statuses: Sequence[str] | None,
        priority: str | None,
        limit: int,
        before_id: str | None,
        *,
        tags: Sequence[str] = (),
        query: str | None = None,
    ) -> list[ItemRow]:
        """Newest first, keyset-paginated by id (ids sort by creation time).

        ``tags``: every one must be on the item. ``query``: a person's search
        text; every word must match title, url, intent or extracted text, as
        a prefix (:func:`search_query`; ValidationFailed when it has no word).
        """
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({_marks(statuses)})")
            args.extend(statuses)
            if not _BUSY.intersection(statuses):
                where.append(_SETTLED)
        if priority:
            where.append("priority = ?")
            args.append(priority)
        for tag in tags:
            where.append(Q["item_has_tag"])
            args.append(tag)
        if query is not None:
            where.append(Q["search_items"])
            args.append(search_query(query))
        if before_id:
            where.append("id < ?")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.execute(
            f"SELECT {_ITEM_LIST} FROM items{clause} ORDER BY id DESC LIMIT ?", [*args, limit]
        ).fetchall()
        return [_item(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        rows = self.execute(Q["items_by_canonical_url"], (canonical_url,)).fetchall()
        return [_item(r) for r in rows]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        settled = "" if _BUSY.intersection(statuses) else f" AND {_SETTLED}"
        rows = self.execute(
            f"SELECT {_ITEM_LIST} FROM items WHERE status IN ({_marks(statuses)}){settled}"
            " ORDER BY id",
            list(statuses),
        ).fetchall()
        return [_item(r) for r in rows]

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        return [_item(r) for r in self.execute(Q["retries_due"], (now, limit)).fetchall()]

    def next_retry_at(self) -> int | None:
        row = self.execute(Q["next_retry_at"]).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    # --- sources -----------------------------------------------------------

    def insert_source(self, item_id: str, html: str | None, text: str | None) -> None:
        self.execute(Q["insert_source"], (item_id, html, text))

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self.execute(Q["source"], (item_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None]]:
        """The sources of ``item_ids`` no longer than ``max_chars``; bigger ones are left out."""
        found: dict[str, tuple[str | None, str | None]] = {}
        for start in range(0, len(item_ids), _IDS_PER_STATEMENT):
            chunk = item_ids[start : start + _IDS_PER_STATEMENT]
            # Sources are never held back: no flush.
            rows = self._execute_now(
                f"SELECT item_id, html, text FROM item_sources WHERE item_id IN ({_marks(chunk)})"
                " AND length(coalesce(html, '')) + length(coalesce(text, '')) <= ?",
                [*chunk, max_chars],
            ).fetchall()
            for item_id, html, text in rows:
                found[item_id] = (html, text)
        return found

    # --- runs --------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None:
        self.execute(Q["insert_run"], [getattr(run, c) for c in RUN_COLUMNS])

    def update_run(self, run_id: str, **fields: Any) -> None:
        sets, values = _assignments(fields, _RUN_SETTABLE)
        if run_id in self._held.steps:
            self.flush()
        self._execute_now(f"UPDATE runs SET {sets} WHERE run_id = ?", [*values, run_id])

    def set_current_step(self, run_id: str, step: str | None) -> None:
        """Record the step a run is at (held back: see :meth:`flush`)."""
        self._held.steps[run_id] = step

    def run(self, run_id: str) -> RunRow | None:
        if run_id in self._held.steps:
            self.flush()
        row = self._execute_now(Q["run_by_id"], (run_id,)).fetchone()
        return _run(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        return [_run(r) for r in self.execute(Q["runs_of_item"], (item_id,)).fetchall()]

    # --- attempts ----------------------------------------------------------

    def insert_attempt(self, attempt: AttemptRow) -> None:
        """Add an attempt (held back: see :meth:`flush`). The run must have none open:
        end it first (:meth:`end_attempt`)."""
        self._held.add_attempt(attempt.run_id, tuple(getattr(attempt, c) for c in ATTEMPT_COLUMNS))

    def _flush_attempts_of(self, run_ids: Iterable[str]) -> None:
        if self._held.attempt_runs and not self._held.attempt_runs.isdisjoint(run_ids):
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
        if run_id in self._held.steps:
            self.flush()
        self._flush_attempts_of((run_id,))
        cur = self._execute_now(Q["end_attempt"], (status, now, error_code, error_message, run_id))
        return cur.rowcount > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        self._flush_attempts_of((run_id,))
        row = self._execute_now(Q["last_attempt"], (run_id,)).fetchone()
        return _attempt(row) if row else None

    def start_attempts(self, run_ids: Sequence[str], owner: str, now: int, new_id: Any) -> None:
        """The claimed runs' queued attempts start running (one is added where none waits).

        ``new_id(now)`` names an added attempt.
        """
        self._flush_attempts_of(run_ids)
        for start in range(0, len(run_ids), _IDS_PER_STATEMENT):
            chunk = run_ids[start : start + _IDS_PER_STATEMENT]
            rows = self._execute_now(
                "UPDATE attempts SET status = 'running', worker_id = ?, started_at = ?,"
                " first_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
                f" WHERE status = 'queued' AND run_id IN ({_marks(chunk)}) RETURNING run_id",
                [owner, now, *chunk],
            ).fetchall()
            if len(rows) == len(chunk):
                continue
            started = {r[0] for r in rows}
            for run_id in chunk:
                if run_id not in started:
                    self._execute_now(
                        Q["add_running_attempt"], (new_id(now), owner, now, now, run_id)
                    )

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        return [_attempt(r) for r in self.execute(Q["attempts_of_item"], (item_id,)).fetchall()]

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
            Q["insert_next_artifact"],
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
        rows = self._execute_now(Q["artifacts_of_run"], (item_id, run_id)).fetchall()
        found = {a.artifact_type: a for a in map(_artifact, rows)}
        for art in self._held.held_artifacts(item_id):
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
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload FROM artifacts WHERE item_id = ?"
            f" AND run_id = ? AND created_by = 'system' AND artifact_type IN ({_marks(types)})",
            (item_id, run_id, *types),
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {r[0]: (r[1], r[2]) for r in rows}
        for row in self._held.artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        """:meth:`run_payloads`, and the payload of a person's newest score (not set
        aside), if any: what a run that passes the gate makes the item show. One read.
        """
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload, created_by, version FROM artifacts"
            f" WHERE item_id = ? AND artifact_type IN ({_marks(types)}) AND (created_by = 'system'"
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
        for row in self._held.artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found, mine[1] if mine else None

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str
    ) -> tuple[int | None, int, bool, int | None]:
        """All a step's commit needs to know, in one statement.

        (the item's orphan count while ``owner`` holds its lease for ``run_id``,
        else None; the newest version of ``artifact_type``; whether a person
        edited it; the version this run already committed, if any).
        """
        if item_id in self._held.artifact_items:
            self.flush()
        row = self._execute_now(
            Q["step_slot"], (item_id, owner, run_id, run_id, item_id, artifact_type)
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
        self._held.add_artifact(
            (item_id, artifact_type, version, run_id, payload, meta, now, "system")
        )

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version, a user's edit winning over any system version."""
        row = self._execute_now(Q["latest_artifact"], (item_id, artifact_type)).fetchone()
        best = _artifact(row) if row else None
        if best is not None and best.created_by == "user":
            return best
        for art in self._held.held_artifacts(item_id):
            if art.artifact_type == artifact_type and (best is None or art.version > best.version):
                best = art
        return best

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self.execute(Q["artifact_version"], (item_id, artifact_type, version)).fetchone()
        return _artifact(row) if row else None

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """A person's newest version of ``artifact_type`` that is not set aside."""
        row = self._execute_now(Q["user_version"], (item_id, artifact_type)).fetchone()
        return _artifact(row) if row else None

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        """Set a person's versions of a type aside; returns how many were shown before."""
        cur = self.execute(Q["discard_user_versions"], (item_id, artifact_type))
        if artifact_type == "extraction" and cur.rowcount:
            self.execute(Q["reindex_extraction"], (item_id, item_id))
        return int(cur.rowcount)

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        """For each type, the version a person sees.

        A person's newest version (not set aside) first; else the system's
        version of ``run_id``, the run the item shows, so a card never mixes
        runs. An extraction that run reused (a regenerate without refetch) is
        the newest one before it.
        """
        rows = self.execute(Q["shown_artifacts"], (item_id, run_id, run_id)).fetchall()
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        return [_artifact(r) for r in self.execute(Q["all_artifacts"], (item_id,)).fetchall()]

    # --- chunks ------------------------------------------------------------

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        if step is None:
            cur = self.execute(Q["chunks_of_run"], (run_id,))
        else:
            cur = self.execute(Q["chunks_of_step"], (run_id, step))
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in cur.fetchall()]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        """Start ``step``'s chunks afresh: ``total`` pending rows."""
        self.execute(Q["delete_chunks"], (run_id, step))
        self.executemany(
            Q["insert_pending_chunk"], [(run_id, step, i, model, now) for i in range(total)]
        )

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        """Chunks left unfinished by a failure go back to pending, to be asked of ``model``."""
        self.execute(Q["reopen_chunks"], (model, now, run_id, step))

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight (``processing``/``retrying``) go back to pending."""
        self.execute(Q["settle_chunks"], (now, run_id))

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
        self._held.events.append(
            (at, item_id, run_id, kind, from_status, to_status, trigger, detail)
        )

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger: (at, item_id, run_id, kind, from, to, detail) each."""
        self._held.events.extend((*r[:6], trigger, r[6]) for r in rows)

    def events_for(self, item_id: str) -> list[EventRow]:
        return [_event(r) for r in self.execute(Q["events_of_item"], (item_id,)).fetchall()]

    # --- idempotent requests -------------------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        """(method, item_id, response) recorded for ``request_id``."""
        row = self.execute(Q["request_by_id"], (request_id,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self.execute(Q["insert_request"], (request_id, method, item_id, response, now))

    # --- settings ----------------------------------------------------------

    def setting(self, key: str) -> str | None:
        row = self.execute(Q["setting"], (key,)).fetchone()
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.execute(Q["set_setting"], (key, value))

    # --- exports -------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None:
        row = self.execute(Q["export_by_key"], (export_key,)).fetchone()
        return ExportRow(**dict(zip(EXPORT_COLUMNS, row, strict=True))) if row else None

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        cur = self.execute(Q["insert_export"], [getattr(row, c) for c in EXPORT_COLUMNS])
        return cur.rowcount == 1

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        """The files of an item's earlier exports in ``fmt``, newest first (JSON lists)."""
        return [r[0] for r in self.execute(Q["export_files"], (item_id, fmt)).fetchall()]

    # --- health, stats, retention ---------------------------------------------

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration in ms) of runs finished since ``since``."""
        rows = self.execute(Q["run_outcomes_since"], (since,)).fetchall()
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items and since when the oldest of them has been waiting (ms)."""
        row = self.execute(Q["backlog"]).fetchone()
        return int(row[0]), row[1]

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since`` (every step, export included)."""
        return int(self.execute(Q["failures_since"], (since,)).fetchone()[0])

    def count_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["items_by_status"]).fetchall()}

    def runs_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["runs_by_status"]).fetchall()}

    def attempts_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["attempts_by_status"]).fetchall()}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` finished steps that recorded one."""
        rows = self.execute(Q["step_durations"], (limit,)).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens recorded in every artifact's meta."""
        row = self.execute(Q["token_totals"]).fetchone()
        return int(row[0]), int(row[1])

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
            "runs": int(self.execute(Q["count_prunable_runs"], args).fetchone()[0]),
            "events": int(self.execute(Q["count_prunable_events"], args).fetchone()[0]),
            "artifacts": int(self.execute(Q["count_prunable_artifacts"], args).fetchone()[0]),
        }
        if dry_run:
            return counts
        if self.execute(Q["has_chunks_table"]).fetchone():
            self.execute(Q["prune_chunks"], args)
        self.execute(Q["prune_runs"], args)
        self.execute(Q["prune_events"], args)
        self.execute(Q["prune_artifacts"], args)
        return counts

    # --- lost leases ------------------------------------------------------------

    def lost_leases(self, expired_before: int | None, *, at_least: int = 0) -> list[ItemRow]:
        """PROCESSING items whose lease ran out before ``expired_before`` (None: every lease,
        for a daemon that holds the store alone), lost ``at_least`` times before, by id."""
        rows = self.execute(
            Q["lost_leases"], {"before": _before(expired_before), "at_least": at_least}
        ).fetchall()
        return [_item(r) for r in rows]

    def requeue_lost(
        self,
        expired_before: int | None,
        *,
        below: int,
        now: int,
        reason: str,
        error_code: str,
        attempt_stamp: str,
        sample: int,
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """PROCESSING → QUEUED, at once, for every lost lease (as :meth:`lost_leases` finds
        them) of an item lost fewer than ``below`` times counting this one.

        What a move per item writes, in the same few statements whatever the
        count: a transition event each, the run queued again, its lost attempt
        failed with ``error_code`` and a RESUME attempt (id prefixed
        ``attempt_stamp``), its chunks in flight pending, the orphan count up by
        one, the lease cleared. Returns how many, and the first ``sample`` by id
        as (id, run_id, orphan_count).
        """
        args: dict[str, Any] = {
            "before": _before(expired_before),
            "below": below,
            "now": now,
            "reason": reason,
            "code": error_code,
            "stamp": attempt_stamp,
            "sample": sample,
        }
        total = int(self.execute(Q["count_lost_below"], args).fetchone()[0])
        if not total:
            return 0, []
        rows = self.execute(Q["sample_lost_below"], args).fetchall()
        # Events and runs first: they read the items before these change.
        for name in (
            "requeue_lost_events",
            "requeue_lost_runs",
            "end_lost_attempts",
            "resume_lost_runs",
            "settle_lost_chunks",
            "requeue_lost_items",
        ):
            self.execute(Q[name], args)
        return total, [(r[0], r[1], int(r[2])) for r in rows]


def _before(expired_before: int | None) -> int:
    """A lease deadline every lease is before, when every lease counts as lost."""
    return (1 << 62) if expired_before is None else expired_before


#: The name callers have used for the unit of work.
Tx = SqliteUnitOfWork
