"""A store held in memory: a second implementation of the store seam, for its contract.

Nothing here speaks SQL or loads a database driver, and every contract test
of ``tests/store_contract/`` runs against it as against SQLite: the proof that
:mod:`readdod.store.api` is a seam another database can fill.

Rows are the Structs of :mod:`readdod.store.rows`, kept in dicts and never
changed in place: an update stores a new Struct, and rows cross the seam as
copies, so a row handed out stays as it was read. A unit of work writes
straight into the tables and keeps an undo log; a unit that raises is undone,
and only it. Units are synchronous and the store awaits nothing while one
runs, so units never interleave and a read sees only what is committed.

The tables are shared by every store open on the same path and written to
that path (msgspec's MessagePack of the rows) when the last of them closes, so
a store reopened finds what was committed; :meth:`MemoryStore.backup` writes
the same format, so a backup opens as a store.
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import msgspec

from readdod.errors import InternalError, ShuttingDown, ValidationFailed
from readdod.store.api import NOTICE_MAX_BYTES, StepSlot, Store, UnitOfWork
from readdod.store.channel import LocalChannel
from readdod.store.rows import (
    CHUNK_COLUMNS,
    FEED_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
    ArtifactRow,
    AttemptRow,
    BackupResult,
    ChunkRow,
    DaemonRow,
    EventRow,
    ExportRow,
    FeedRow,
    ItemRow,
    RunRow,
    StoreCounters,
)

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R", bound=msgspec.Struct)

#: Most words of a search, as the SQLite store takes.
SEARCH_WORDS_MAX = 32

_ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
_RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}
_CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}
_RETRIED = frozenset({"FAILED_EXTRACTION", "FAILED_AI"})
_OPEN_ATTEMPT = frozenset({"queued", "running"})
_IN_FLIGHT = frozenset({"processing", "retrying"})
_MISSING = object()


def _copy(row: R) -> R:
    return msgspec.structs.replace(row)


def _violated(constraint: str) -> InternalError:
    """What the SQLite store reports for the same broken constraint."""
    return InternalError(f"database error: {constraint} constraint failed")


def _settable(fields: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return fields


def _json_field(text: str, key: str) -> Any:
    """``json_extract(text, '$.key')``: None when absent or not an object."""
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found.get(key) if isinstance(found, dict) else None


# --- search: what SQLite's FTS5 ``unicode61 remove_diacritics 2`` tokenizer does ---------


def _tokens(text: str) -> list[str]:
    """Runs of letters and digits, lower-cased, diacritics removed."""
    bare = "".join(
        c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c)
    )
    return re.findall(r"[^\W_]+", bare)


def _search_phrases(text: str) -> list[list[str]]:
    """A person's words as phrases whose last token is a prefix (one token most often)."""
    words = re.findall(r"\w+", text)
    if not words:
        raise ValidationFailed("query needs at least one word to search for")
    return [_tokens(w) for w in words[:SEARCH_WORDS_MAX]]


def _phrase_in(phrase: list[str], tokens: list[str]) -> bool:
    *whole, prefix = phrase
    n = len(whole)
    return any(
        tokens[i : i + n] == whole and tokens[i + n].startswith(prefix)
        for i in range(len(tokens) - n)
    )


# --- the tables ---------------------------------------------------------------------


class _Request(msgspec.Struct, array_like=True):
    method: str
    item_id: str | None
    response: str
    created_at: int


class _Tables:
    """The rows of one database. Artifacts are keyed by item, chunks by run."""

    def __init__(self) -> None:
        self.items: dict[str, ItemRow] = {}
        self.sources: dict[str, tuple[str | None, str | None, str | None]] = {}
        self.runs: dict[str, RunRow] = {}
        self.attempts: dict[str, AttemptRow] = {}
        self.artifacts: dict[str, dict[tuple[str, int], ArtifactRow]] = {}
        self.chunks: dict[str, dict[tuple[str, int], ChunkRow]] = {}
        self.events: dict[int, EventRow] = {}
        self.requests: dict[str, _Request] = {}
        self.settings: dict[str, str] = {}
        self.exports: dict[str, ExportRow] = {}
        #: A person's ticks: (item id, todo key) -> when.
        self.todo_marks: dict[tuple[str, str], int] = {}
        self.daemons: dict[str, DaemonRow] = {}
        #: The last event's seq; never taken back, as SQLite's AUTOINCREMENT.
        self.last_seq = 0
        self.feeds: dict[str, FeedRow] = {}
        #: (feed id, entry key) -> (item id, seen at).
        self.feed_entries: dict[tuple[str, str], tuple[str | None, int]] = {}
        #: Token counters (prompt, completion, cached tokens ever spent).
        self.counters: dict[str, int] = {}


class _Snapshot(msgspec.Struct):
    """The tables as a file holds them."""

    items: list[ItemRow]
    sources: dict[str, tuple[str | None, str | None, str | None]]
    runs: list[RunRow]
    attempts: list[AttemptRow]
    artifacts: list[ArtifactRow]
    chunks: list[ChunkRow]
    events: list[EventRow]
    requests: dict[str, _Request]
    settings: dict[str, str]
    exports: list[ExportRow]
    last_seq: int
    feeds: list[FeedRow] = []
    feed_entries: list[tuple[str, str, str | None, int]] = []
    todo_marks: list[tuple[str, str, int]] = []
    daemons: list[DaemonRow] = []
    counters: dict[str, int] = {}


def _encode(t: _Tables) -> bytes:
    return msgspec.msgpack.encode(
        _Snapshot(
            items=list(t.items.values()),
            sources=t.sources,
            runs=list(t.runs.values()),
            attempts=list(t.attempts.values()),
            artifacts=[a for of_item in t.artifacts.values() for a in of_item.values()],
            chunks=[c for of_run in t.chunks.values() for c in of_run.values()],
            events=list(t.events.values()),
            requests=t.requests,
            settings=t.settings,
            exports=list(t.exports.values()),
            last_seq=t.last_seq,
            feeds=list(t.feeds.values()),
            feed_entries=[(f, k, i, at) for (f, k), (i, at) in t.feed_entries.items()],
            todo_marks=[(i, k, at) for (i, k), at in t.todo_marks.items()],
            daemons=list(t.daemons.values()),
            counters=t.counters,
        )
    )


def _decode(data: bytes) -> _Tables:
    snap = msgspec.msgpack.decode(data, type=_Snapshot)
    t = _Tables()
    t.items = {r.id: r for r in snap.items}
    t.sources = snap.sources
    t.runs = {r.run_id: r for r in snap.runs}
    t.attempts = {a.attempt_id: a for a in snap.attempts}
    for a in snap.artifacts:
        t.artifacts.setdefault(a.item_id, {})[(a.artifact_type, a.version)] = a
    for c in snap.chunks:
        t.chunks.setdefault(c.run_id, {})[(c.step, c.idx)] = c
    t.events = {e.seq: e for e in snap.events}
    t.requests = snap.requests
    t.settings = snap.settings
    t.exports = {e.export_key: e for e in snap.exports}
    t.last_seq = snap.last_seq
    t.feeds = {f.id: f for f in snap.feeds}
    t.feed_entries = {(f, k): (i, at) for f, k, i, at in snap.feed_entries}
    t.todo_marks = {(i, k): at for i, k, at in snap.todo_marks}
    t.daemons = {d.daemon_id: d for d in snap.daemons}
    t.counters = dict(snap.counters)
    return t


def _write_file(path: Path, data: bytes) -> None:
    """``path`` is either the old file or all of ``data``."""
    part = path.with_name(path.name + ".part")
    with part.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    part.replace(path)


# --- the unit of work ----------------------------------------------------------------


class MemoryUnitOfWork:
    """Every named query of :class:`~readdod.store.api.UnitOfWork`, on the tables.

    A unit for a read has no undo log and refuses to write, as SQLite's
    read-only reader does.
    """

    def __init__(self, tables: _Tables, *, writable: bool) -> None:
        self._t = tables
        self._undo: list[tuple[dict[Any, Any], Any, Any]] | None = [] if writable else None
        #: Named queries run, as the SQLite store counts its statements.
        self.statements = 0

    # --- plumbing ------------------------------------------------------------------

    def _query(self) -> None:
        self.statements += 1

    def _log(self, table: dict[Any, Any], key: Any) -> None:
        if self._undo is None:
            raise InternalError("database error: attempt to write a readonly database")
        self._undo.append((table, key, table.get(key, _MISSING)))

    def _put(self, table: dict[K, V], key: K, row: V) -> None:
        self._log(table, key)
        table[key] = row

    def _drop(self, table: dict[K, V], key: K) -> None:
        self._log(table, key)
        del table[key]

    def undo(self) -> None:
        """Take back every write of this unit, newest first."""
        for table, key, old in reversed(self._undo or []):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        self._undo = []

    def _set_item(self, row: ItemRow, fields: dict[str, Any]) -> None:
        capture_id = fields.get("capture_id")
        if (
            capture_id is not None
            and capture_id != row.capture_id
            and any(i.capture_id == capture_id for i in self._t.items.values())
        ):
            raise _violated("UNIQUE")
        self._put(self._t.items, row.id, msgspec.structs.replace(row, **fields))

    def _artifacts(self, item_id: str) -> Iterable[ArtifactRow]:
        return self._t.artifacts.get(item_id, {}).values()

    def _put_artifact(self, art: ArtifactRow) -> None:
        if art.item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        of_item = self._t.artifacts.setdefault(art.item_id, {})
        if (art.artifact_type, art.version) in of_item:
            raise _violated("UNIQUE")
        if (
            art.created_by == "system"
            and art.run_id is not None
            and any(
                a.created_by == "system"
                and a.artifact_type == art.artifact_type
                and a.run_id == art.run_id
                for a in of_item.values()
            )
        ):
            raise _violated("UNIQUE")
        self._put(of_item, (art.artifact_type, art.version), art)

    def _leased(
        self, row: ItemRow | None, owner: str, run_id: str, token: int | None = None
    ) -> bool:
        return (
            row is not None
            and row.status == "PROCESSING"
            and row.lease_owner == owner
            and row.current_run_id == run_id
            and (token is None or row.lease_token == token)
        )

    # --- items ---------------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None:
        self._query()
        row = self._t.items.get(item_id)
        return None if row is None else _copy(row)

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        self._query()
        found = (r for r in self._t.items.values() if r.capture_id == capture_id)
        row = next(found, None)
        return None if row is None else _copy(row)

    def insert_item(self, item: ItemRow) -> None:
        self._query()
        if item.id in self._t.items:
            raise _violated("UNIQUE")
        if item.capture_id is not None and any(
            r.capture_id == item.capture_id for r in self._t.items.values()
        ):
            raise _violated("UNIQUE")
        self._put(self._t.items, item.id, _copy(item))

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        self._query()
        changes = _settable({"status": new, **fields}, _ITEM_SETTABLE)
        row = self._t.items.get(item_id)
        if row is None or row.status != expected:
            return False
        self._set_item(row, changes)
        return True

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        self._query()
        found = [r for r in self._t.items.values() if r.canonical_url == canonical_url]
        return [_copy(r) for r in sorted(found, key=lambda r: r.id)]

    def count_status(self, status: str) -> int:
        self._query()
        return sum(1 for r in self._t.items.values() if r.status == status)

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        self._query()
        found = [r for r in self._t.items.values() if r.status in statuses]
        return [_copy(r) for r in sorted(found, key=lambda r: r.id)]

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
        self._query()
        phrases = None if query is None else [p for p in _search_phrases(query) if p]
        found: list[ItemRow] = []
        for row in sorted(self._t.items.values(), key=lambda r: r.id, reverse=True):
            if 0 <= limit <= len(found):
                break
            if before_id and row.id >= before_id:
                continue
            if statuses and row.status not in statuses:
                continue
            if priority and row.priority != priority:
                continue
            if tags and not set(tags).issubset(self._tags(row)):
                continue
            if phrases is not None and not self._matches(row, phrases):
                continue
            found.append(_copy(row))
        return found

    @staticmethod
    def _tags(row: ItemRow) -> list[Any]:
        try:
            tags = json.loads(row.tags)
        except ValueError:
            return []
        return tags if isinstance(tags, list) else []

    def _matches(self, row: ItemRow, phrases: list[list[str]]) -> bool:
        """Every phrase found in one column: title, url, intent or the extraction shown."""
        if not phrases:
            return False
        shown = self._latest(row.id, "extraction")
        body = None if shown is None else _json_field(shown.payload, "text")
        columns = [
            _tokens(text)
            for text in (row.title or "", row.url or "", row.intent_text, str(body or ""))
        ]
        return all(any(_phrase_in(p, tokens) for tokens in columns) for p in phrases)

    def insert_source(
        self, item_id: str, html: str | None, text: str | None, document: str | None = None
    ) -> None:
        self._query()
        if item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        if item_id in self._t.sources:
            raise _violated("UNIQUE")
        self._put(self._t.sources, item_id, (html, text, document))

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        self._query()
        kept = self._t.sources.get(item_id)
        return (kept[0], kept[1]) if kept is not None else (None, None)

    def source_document(self, item_id: str) -> str | None:
        self._query()
        kept = self._t.sources.get(item_id)
        return kept[2] if kept is not None else None

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None, str | None]]:
        self._query()
        found: dict[str, tuple[str | None, str | None, str | None]] = {}
        for item_id in item_ids:
            kept = self._t.sources.get(item_id)
            if kept is not None and len(kept[0] or "") + len(kept[1] or "") <= max_chars:
                found[item_id] = kept
        return found

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        self._query()
        due = [
            r
            for r in self._t.items.values()
            if r.status in _RETRIED and 0 < r.next_attempt_at <= now
        ]
        due.sort(key=lambda r: (r.next_attempt_at, r.id))
        return [_copy(r) for r in (due if limit < 0 else due[:limit])]

    def next_retry_at(self) -> int | None:
        self._query()
        times = [
            r.next_attempt_at
            for r in self._t.items.values()
            if r.status in _RETRIED and r.next_attempt_at > 0
        ]
        return min(times, default=None)

    # --- leases --------------------------------------------------------------------

    def queue_due(self, now: int) -> bool:
        self._query()
        return any(
            r.status == "QUEUED" and r.next_attempt_at <= now for r in self._t.items.values()
        )

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        self._query()
        due = [
            r for r in self._t.items.values() if r.status == "QUEUED" and r.next_attempt_at <= now
        ]
        due.sort(key=lambda r: (r.priority, r.created_at, r.id))
        claimed: list[ItemRow] = []
        for row in due if limit < 0 else due[:limit]:
            self._set_item(
                row,
                {
                    "status": "PROCESSING",
                    "lease_owner": owner,
                    "lease_expires_at": lease_until,
                    "updated_at": now,
                    "lease_token": row.lease_token + 1,
                },
            )
            claimed.append(_copy(self._t.items[row.id]))
        return claimed

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        self._query()
        renewed: set[str] = set()
        for item_id in item_ids:
            row = self._t.items.get(item_id)
            if row is not None and row.status == "PROCESSING" and row.lease_owner == owner:
                self._set_item(row, {"lease_expires_at": until})
                renewed.add(item_id)
        return renewed

    def held_by(self, owner: str) -> list[ItemRow]:
        self._query()
        return [
            _copy(r)
            for r in self._t.items.values()
            if r.status == "PROCESSING" and r.lease_owner == owner
        ]

    def holds_lease(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None
    ) -> bool:
        self._query()
        return self._leased(self._t.items.get(item_id), owner, run_id, token)

    def update_fenced(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None, **fields: Any
    ) -> bool:
        self._query()
        changes = _settable(fields, _ITEM_SETTABLE)
        row = self._t.items.get(item_id)
        if row is None or not self._leased(row, owner, run_id, token):
            return False
        self._set_item(row, changes)
        return True

    def _lost(self, expired_before: int | None, owned_by: str | None = None) -> list[ItemRow]:
        """PROCESSING items whose lease ran out before ``expired_before``, or held by an
        owner whose id starts with ``owned_by``, by id. A lease with no deadline never
        runs out, as ``NULL < x`` is never true in SQL."""

        def lost(r: ItemRow) -> bool:
            expired = r.lease_expires_at is not None and (
                expired_before is None or r.lease_expires_at < expired_before
            )
            mine = owned_by is not None and (r.lease_owner or "").startswith(owned_by)
            return r.status == "PROCESSING" and (expired or mine)

        lost_rows = [r for r in self._t.items.values() if lost(r)]
        return sorted(lost_rows, key=lambda r: r.id)

    def lost_leases(
        self, expired_before: int | None, *, at_least: int = 0, owned_by: str | None = None
    ) -> list[ItemRow]:
        self._query()
        lost = self._lost(expired_before, owned_by)
        return [_copy(r) for r in lost if r.orphan_count >= at_least]

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
        owned_by: str | None = None,
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        self._query()
        lost = [r for r in self._lost(expired_before, owned_by) if r.orphan_count + 1 < below]
        message = f"the worker running this attempt was lost ({reason})"
        for row in lost:
            count = row.orphan_count + 1
            detail = json.dumps(
                {"reason": reason, "orphan_count": count}, separators=(",", ":"), ensure_ascii=False
            )
            self._event(
                now,
                row.id,
                row.current_run_id,
                "transition",
                "PROCESSING",
                "QUEUED",
                "system",
                detail,
            )
            run = None if row.current_run_id is None else self._t.runs.get(row.current_run_id)
            if run is not None:
                self._put(self._t.runs, run.run_id, msgspec.structs.replace(run, status="queued"))
                self._end_open_attempts(
                    run.run_id, "cancelled", now, error_code=error_code, error_message=message
                )
                self._settle(run.run_id, now)
                self._add_attempt(
                    AttemptRow(
                        attempt_id=attempt_stamp + os.urandom(8).hex().upper(),
                        run_id=run.run_id,
                        item_id=row.id,
                        mode="RESUME",
                        status="queued",
                        first_step=None,
                        last_step=None,
                        worker_id=None,
                        error_code=None,
                        error_message=None,
                        created_at=now,
                        started_at=None,
                        finished_at=None,
                    )
                )
            self._set_item(
                row,
                {
                    "status": "QUEUED",
                    "updated_at": now,
                    "lease_owner": None,
                    "lease_expires_at": None,
                    "orphan_count": count,
                },
            )
        return len(lost), [(r.id, r.current_run_id, r.orphan_count + 1) for r in lost[:sample]]

    # --- runs ----------------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None:
        self._query()
        if run.item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        if run.run_id in self._t.runs:
            raise _violated("UNIQUE")
        self._put(self._t.runs, run.run_id, _copy(run))

    def update_run(self, run_id: str, **fields: Any) -> None:
        self._query()
        changes = _settable(fields, _RUN_SETTABLE)
        run = self._t.runs.get(run_id)
        if run is not None:
            self._put(self._t.runs, run_id, msgspec.structs.replace(run, **changes))

    def set_current_step(self, run_id: str, step: str | None) -> None:
        self.update_run(run_id, current_step=step)

    def run(self, run_id: str) -> RunRow | None:
        self._query()
        run = self._t.runs.get(run_id)
        return None if run is None else _copy(run)

    def runs_for(self, item_id: str) -> list[RunRow]:
        self._query()
        found = [r for r in self._t.runs.values() if r.item_id == item_id]
        return [_copy(r) for r in sorted(found, key=lambda r: (r.created_at, r.run_id))]

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        self._query()
        started: dict[str, RunRow] = {}
        for run_id in run_ids:
            run = self._t.runs.get(run_id)
            if run is None:
                continue
            run = msgspec.structs.replace(
                run,
                status="running",
                attempts=run.attempts + 1,
                worker_id=owner,
                started_at=now if run.started_at is None else run.started_at,
            )
            self._put(self._t.runs, run_id, run)
            started[run_id] = _copy(run)
        return started

    def ready_from_runs(self) -> list[str]:
        self._query()
        last_move: dict[str, EventRow] = {}
        for event in self._t.events.values():
            if event.kind == "transition" and event.item_id is not None:
                seen = last_move.get(event.item_id)
                if seen is None or event.seq > seen.seq:
                    last_move[event.item_id] = event
        return sorted(
            r.id
            for r in self._t.items.values()
            if r.status == "READY"
            and r.id in last_move
            and last_move[r.id].from_status == "PROCESSING"
        )

    # --- attempts ------------------------------------------------------------------

    def _add_attempt(self, attempt: AttemptRow) -> None:
        if attempt.run_id not in self._t.runs or attempt.item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        if attempt.attempt_id in self._t.attempts:
            raise _violated("UNIQUE")
        if attempt.status in _OPEN_ATTEMPT and self._open_attempts(attempt.run_id):
            raise _violated("UNIQUE")
        self._put(self._t.attempts, attempt.attempt_id, attempt)

    def _open_attempts(self, run_id: str) -> list[AttemptRow]:
        return [
            a for a in self._t.attempts.values() if a.run_id == run_id and a.status in _OPEN_ATTEMPT
        ]

    def _end_open_attempts(
        self,
        run_id: str,
        status: str,
        now: int,
        *,
        error_code: str | None,
        error_message: str | None,
    ) -> int:
        run = self._t.runs.get(run_id)
        ended = self._open_attempts(run_id)
        for attempt in ended:
            self._put(
                self._t.attempts,
                attempt.attempt_id,
                msgspec.structs.replace(
                    attempt,
                    status=status,
                    finished_at=now,
                    error_code=error_code,
                    error_message=error_message,
                    last_step=None if run is None else run.current_step,
                ),
            )
        return len(ended)

    def insert_attempt(self, attempt: AttemptRow) -> None:
        self._query()
        self._add_attempt(_copy(attempt))

    def end_attempt(
        self,
        run_id: str,
        status: str,
        now: int,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> bool:
        self._query()
        ended = self._end_open_attempts(
            run_id, status, now, error_code=error_code, error_message=error_message
        )
        return ended > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        self._query()
        of_run = [a for a in self._t.attempts.values() if a.run_id == run_id]
        last = max(of_run, key=lambda a: (a.created_at, a.attempt_id), default=None)
        return None if last is None else _copy(last)

    def start_attempts(
        self, run_ids: Sequence[str], owner: str, now: int, new_id: Callable[[int], str]
    ) -> None:
        self._query()
        for run_id in run_ids:
            run = self._t.runs.get(run_id)
            if run is None:
                continue
            waiting = [a for a in self._open_attempts(run_id) if a.status == "queued"]
            for attempt in waiting:
                self._put(
                    self._t.attempts,
                    attempt.attempt_id,
                    msgspec.structs.replace(
                        attempt,
                        status="running",
                        worker_id=owner,
                        started_at=now,
                        first_step=run.current_step,
                    ),
                )
            if not waiting:
                self._add_attempt(
                    AttemptRow(
                        attempt_id=new_id(now),
                        run_id=run_id,
                        item_id=run.item_id,
                        mode="RESUME",
                        status="running",
                        first_step=run.current_step,
                        last_step=None,
                        worker_id=owner,
                        error_code=None,
                        error_message=None,
                        created_at=now,
                        started_at=now,
                        finished_at=None,
                    )
                )

    def spend(self, run_id: str, prompt: int, completion: int, cached: int) -> None:
        self._query()
        for attempt in self._open_attempts(run_id):
            self._put(
                self._t.attempts,
                attempt.attempt_id,
                msgspec.structs.replace(
                    attempt,
                    prompt_tokens=attempt.prompt_tokens + prompt,
                    completion_tokens=attempt.completion_tokens + completion,
                    cached_tokens=attempt.cached_tokens + cached,
                ),
            )
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("cached_tokens", cached),
        ):
            if value:
                self._put(self._t.counters, name, self._t.counters.get(name, 0) + value)

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        self._query()
        runs = {r.run_id for r in self._t.runs.values() if r.item_id == item_id}
        found = [a for a in self._t.attempts.values() if a.run_id in runs]
        return [_copy(a) for a in sorted(found, key=lambda a: (a.created_at, a.attempt_id))]

    # --- artifacts -----------------------------------------------------------------

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
        self._query()
        version = 1 + max(
            (a.version for a in self._artifacts(item_id) if a.artifact_type == artifact_type),
            default=0,
        )
        self._put_artifact(
            ArtifactRow(
                item_id=item_id,
                artifact_type=artifact_type,
                version=version,
                created_by=created_by,
                run_id=run_id,
                payload=payload,
                meta=meta,
                created_at=now,
            )
        )
        return version

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str, *, token: int | None = None
    ) -> tuple[int | None, int, bool, int | None]:
        self._query()
        row = self._t.items.get(item_id)
        leased = row is not None and self._leased(row, owner, run_id, token)
        orphans = row.orphan_count if row is not None and leased else None
        of_type = [a for a in self._artifacts(item_id) if a.artifact_type == artifact_type]
        mine = [a.version for a in of_type if a.created_by == "system" and a.run_id == run_id]
        return (
            orphans,
            max((a.version for a in of_type), default=0),
            any(a.created_by == "user" and not a.discarded for a in of_type),
            max(mine, default=None),
        )

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
        self._query()
        self._put_artifact(
            ArtifactRow(
                item_id=item_id,
                artifact_type=artifact_type,
                version=version,
                created_by="system",
                run_id=run_id,
                payload=payload,
                meta=meta,
                created_at=now,
            )
        )

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        self._query()
        art = self._t.artifacts.get(item_id, {}).get((artifact_type, version))
        return None if art is None else _copy(art)

    def _of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        """The run's system artifacts by type (its newest version of each)."""
        found: dict[str, ArtifactRow] = {}
        for art in sorted(self._artifacts(item_id), key=lambda a: a.version):
            if art.created_by == "system" and art.run_id == run_id:
                found[art.artifact_type] = art
        return found

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        self._query()
        return {kind: _copy(a) for kind, a in self._of_run(item_id, run_id).items()}

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        self._query()
        return {
            kind: (a.run_id, a.payload)
            for kind, a in self._of_run(item_id, run_id).items()
            if kind in types
        }

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        payloads = self.run_payloads(item_id, run_id, types)
        mine = self._user_version(item_id, "score") if "score" in types else None
        return payloads, None if mine is None else mine.payload

    def _latest(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        shown = [
            a
            for a in self._artifacts(item_id)
            if a.artifact_type == artifact_type and not a.discarded
        ]
        return max(shown, key=lambda a: (a.created_by == "user", a.version), default=None)

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        self._query()
        art = self._latest(item_id, artifact_type)
        return None if art is None else _copy(art)

    def _user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        mine = [
            a
            for a in self._artifacts(item_id)
            if a.artifact_type == artifact_type and a.created_by == "user" and not a.discarded
        ]
        return max(mine, key=lambda a: a.version, default=None)

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        self._query()
        art = self._user_version(item_id, artifact_type)
        return None if art is None else _copy(art)

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        self._query()
        of_item = self._t.artifacts.get(item_id, {})
        shown = [
            a
            for a in of_item.values()
            if a.artifact_type == artifact_type and a.created_by == "user" and not a.discarded
        ]
        for art in shown:
            self._put(
                of_item, (art.artifact_type, art.version), msgspec.structs.replace(art, discarded=1)
            )
        return len(shown)

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        self._query()
        candidates = [
            a
            for a in self._artifacts(item_id)
            if (a.created_by == "user" and not a.discarded)
            or (
                a.created_by == "system" and (a.run_id == run_id or a.artifact_type == "extraction")
            )
        ]
        candidates.sort(
            key=lambda a: (a.artifact_type, a.created_by != "user", a.run_id != run_id, -a.version)
        )
        shown: dict[str, ArtifactRow] = {}
        for art in candidates:
            shown.setdefault(art.artifact_type, _copy(art))
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        self._query()
        every = sorted(self._artifacts(item_id), key=lambda a: (a.artifact_type, a.version))
        return [_copy(a) for a in every]

    # --- chunks --------------------------------------------------------------------

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        self._query()
        of_run = self._t.chunks.get(run_id, {})
        found = [c for c in of_run.values() if step is None or c.step == step]
        return [_copy(c) for c in sorted(found, key=lambda c: (c.step, c.idx))]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        self._query()
        if total > 0 and run_id not in self._t.runs:
            raise _violated("FOREIGN KEY")
        of_run = self._t.chunks.setdefault(run_id, {})
        for key in [k for k in of_run if k[0] == step]:
            self._drop(of_run, key)
        for idx in range(total):
            self._put(
                of_run,
                (step, idx),
                ChunkRow(
                    run_id=run_id,
                    step=step,
                    idx=idx,
                    status="pending",
                    retries=0,
                    last_error_code=None,
                    last_error_message=None,
                    model=model,
                    output=None,
                    updated_at=now,
                ),
            )

    def _set_chunks(self, run_id: str, which: Callable[[ChunkRow], bool], **fields: Any) -> None:
        of_run = self._t.chunks.get(run_id, {})
        for key, chunk in list(of_run.items()):
            if which(chunk):
                self._put(of_run, key, msgspec.structs.replace(chunk, **fields))

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        self._query()
        self._set_chunks(
            run_id,
            lambda c: c.step == step and c.status != "done",
            status="pending",
            model=model,
            updated_at=now,
        )

    def _settle(self, run_id: str, now: int) -> None:
        self._set_chunks(run_id, lambda c: c.status in _IN_FLIGHT, status="pending", updated_at=now)

    def retry_chunks(self, run_id: str, now: int) -> None:
        self._query()
        self._set_chunks(run_id, lambda c: c.status == "error", status="pending", updated_at=now)

    def settle_chunks(self, run_id: str, now: int) -> None:
        self._query()
        self._settle(run_id, now)

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        self._query()
        changes = _settable(fields, _CHUNK_SETTABLE)
        self._set_chunks(run_id, lambda c: (c.step, c.idx) == (step, idx), **changes)

    # --- events --------------------------------------------------------------------

    def _event(
        self,
        at: int,
        item_id: str | None,
        run_id: str | None,
        kind: str,
        from_status: str | None,
        to_status: str | None,
        trigger: str,
        detail: str,
    ) -> None:
        self._t.last_seq += 1
        event = EventRow(
            seq=self._t.last_seq,
            at=at,
            item_id=item_id,
            run_id=run_id,
            kind=kind,
            from_status=from_status,
            to_status=to_status,
            trigger=trigger,
            detail=detail,
        )
        self._put(self._t.events, event.seq, event)

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
        self._query()
        self._event(at, item_id, run_id, kind, from_status, to_status, trigger, detail)

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        self._query()
        for at, item_id, run_id, kind, from_status, to_status, detail in rows:
            self._event(at, item_id, run_id, kind, from_status, to_status, trigger, detail)

    def events_for(self, item_id: str) -> list[EventRow]:
        self._query()
        found = [e for e in self._t.events.values() if e.item_id == item_id]
        return [_copy(e) for e in sorted(found, key=lambda e: e.seq)]

    # --- requests and settings -----------------------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        self._query()
        kept = self._t.requests.get(request_id)
        return None if kept is None else (kept.method, kept.item_id, kept.response)

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self._query()
        if request_id in self._t.requests:
            raise _violated("UNIQUE")
        self._put(self._t.requests, request_id, _Request(method, item_id, response, now))

    def setting(self, key: str) -> str | None:
        self._query()
        return self._t.settings.get(key)

    def set_setting(self, key: str, value: str) -> None:
        self._query()
        self._put(self._t.settings, key, value)

    # --- feeds ---------------------------------------------------------------------

    def insert_feed(self, row: FeedRow) -> bool:
        self._query()
        if any(f.url == row.url for f in self._t.feeds.values()):
            return False
        if row.id in self._t.feeds:
            raise _violated("UNIQUE")
        self._put(self._t.feeds, row.id, _copy(row))
        return True

    def feed(self, feed_id: str) -> FeedRow | None:
        self._query()
        row = self._t.feeds.get(feed_id)
        return None if row is None else _copy(row)

    def feed_by_url(self, url: str) -> FeedRow | None:
        self._query()
        return next((_copy(f) for f in self._t.feeds.values() if f.url == url), None)

    def feeds(self) -> list[FeedRow]:
        self._query()
        return [
            _copy(f) for f in sorted(self._t.feeds.values(), key=lambda f: (f.created_at, f.id))
        ]

    def feeds_due(self, now: int, limit: int) -> list[FeedRow]:
        self._query()
        due = [f for f in self._t.feeds.values() if f.next_poll_at <= now]
        return [_copy(f) for f in sorted(due, key=lambda f: (f.next_poll_at, f.id))[:limit]]

    def next_feed_poll(self) -> int | None:
        self._query()
        return min((f.next_poll_at for f in self._t.feeds.values()), default=None)

    def set_feed(self, feed_id: str, **fields: Any) -> bool:
        self._query()
        bad = set(fields) - (set(FEED_COLUMNS) - {"id", "url", "created_at"})
        if bad:
            raise ValueError(f"not settable: {sorted(bad)}")
        row = self._t.feeds.get(feed_id)
        if row is None:
            return False
        self._put(self._t.feeds, feed_id, msgspec.structs.replace(row, **fields))
        return True

    def delete_feed(self, feed_id: str) -> bool:
        self._query()
        for key in [k for k in self._t.feed_entries if k[0] == feed_id]:
            self._drop(self._t.feed_entries, key)
        if feed_id not in self._t.feeds:
            return False
        self._drop(self._t.feeds, feed_id)
        return True

    def feed_entries_seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        self._query()
        return {k for k in keys if (feed_id, k) in self._t.feed_entries}

    def add_feed_entry(self, feed_id: str, key: str, item_id: str | None, at: int) -> None:
        self._query()
        if feed_id not in self._t.feeds:
            raise _violated("FOREIGN KEY")
        if (feed_id, key) not in self._t.feed_entries:
            self._put(self._t.feed_entries, (feed_id, key), (item_id, at))

    # --- todo ticks ----------------------------------------------------------------

    def todo_marks(self, item_id: str) -> dict[str, int]:
        self._query()
        return {k: at for (i, k), at in self._t.todo_marks.items() if i == item_id}

    def mark_todo(self, item_id: str, key: str, done_at: int) -> bool:
        self._query()
        if item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        if (item_id, key) in self._t.todo_marks:
            return False
        self._put(self._t.todo_marks, (item_id, key), done_at)
        return True

    def unmark_todo(self, item_id: str, key: str) -> bool:
        self._query()
        if (item_id, key) not in self._t.todo_marks:
            return False
        self._drop(self._t.todo_marks, (item_id, key))
        return True

    def items_with_todo_marks(self) -> list[str]:
        self._query()
        return sorted({i for i, _ in self._t.todo_marks})

    # --- the daemon registry -------------------------------------------------------

    def register_daemon(self, row: DaemonRow) -> None:
        self._query()
        self._put(self._t.daemons, row.daemon_id, msgspec.structs.replace(row))

    def beat_daemon(self, daemon_id: str, at: int, *, in_flight: int, paused: bool) -> bool:
        self._query()
        row = self._t.daemons.get(daemon_id)
        if row is None:
            return False
        self._put(
            self._t.daemons,
            daemon_id,
            msgspec.structs.replace(row, heartbeat_at=at, in_flight=in_flight, paused=paused),
        )
        return True

    def remove_daemon(self, daemon_id: str) -> bool:
        self._query()
        if daemon_id not in self._t.daemons:
            return False
        self._drop(self._t.daemons, daemon_id)
        return True

    def daemons(self) -> list[DaemonRow]:
        self._query()
        return sorted(self._t.daemons.values(), key=lambda d: (d.started_at, d.daemon_id))

    def forget_daemons(self, silent_before: int, *, keep: str) -> list[str]:
        self._query()
        gone = sorted(
            d.daemon_id
            for d in self._t.daemons.values()
            if d.heartbeat_at < silent_before and d.daemon_id != keep
        )
        for daemon_id in gone:
            self._drop(self._t.daemons, daemon_id)
        return gone

    # --- exports -------------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None:
        self._query()
        row = self._t.exports.get(export_key)
        return None if row is None else _copy(row)

    def insert_export(self, row: ExportRow) -> bool:
        self._query()
        if row.export_key in self._t.exports:
            return False
        if row.item_id not in self._t.items:
            raise _violated("FOREIGN KEY")
        self._put(self._t.exports, row.export_key, _copy(row))
        return True

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        self._query()
        found = [e for e in self._t.exports.values() if e.item_id == item_id and e.format == fmt]
        found.sort(key=lambda e: e.export_key)
        found.sort(key=lambda e: e.created_at, reverse=True)
        return [e.files for e in found]

    # --- reports -------------------------------------------------------------------

    def count_by_status(self) -> dict[str, int]:
        self._query()
        return dict(Counter(r.status for r in self._t.items.values()))

    def runs_by_status(self) -> dict[str, int]:
        self._query()
        return dict(Counter(r.status for r in self._t.runs.values()))

    def attempts_by_status(self) -> dict[str, int]:
        self._query()
        return dict(Counter(a.status for a in self._t.attempts.values()))

    def backlog(self) -> tuple[int, int | None]:
        self._query()
        waiting = [
            max(r.updated_at, r.next_attempt_at)
            for r in self._t.items.values()
            if r.status == "QUEUED"
        ]
        return len(waiting), min(waiting, default=None)

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        self._query()
        took: dict[str, list[int]] = {}
        for run in self._t.runs.values():
            if run.finished_at is not None and run.finished_at >= since:
                began = run.created_at if run.started_at is None else run.started_at
                took.setdefault(run.status, []).append(run.finished_at - began)
        return [(status, len(ms), sum(ms) / len(ms)) for status, ms in sorted(took.items())]

    def failures_since(self, since: int) -> int:
        self._query()
        return sum(
            1
            for e in self._t.events.values()
            if e.at >= since
            and e.kind == "transition"
            and (e.to_status or "").startswith("FAILED_")
        )

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        self._query()
        found: list[tuple[str, float]] = []
        for event in sorted(self._t.events.values(), key=lambda e: e.seq, reverse=True):
            if 0 <= limit <= len(found):
                break
            if event.kind != "step":
                continue
            duration = _json_field(event.detail, "duration_ms")
            if duration is not None:
                found.append((str(_json_field(event.detail, "step")), float(duration)))
        return found

    def token_totals(self) -> tuple[int, int]:
        self._query()
        return self._t.counters.get("prompt_tokens", 0), self._t.counters.get(
            "completion_tokens", 0
        )

    # --- retention -----------------------------------------------------------------

    def prune_history(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        self._query()
        items = self._t.items
        before = {
            "succeeded": finished_before,
            "cancelled": cancelled_before,
            "failed": failed_before,
            "timeout": failed_before,
        }
        exported: dict[str, str] = {}
        for r in self._t.runs.values():
            if r.mode == "EXPORT" and r.run_id > exported.get(r.item_id, ""):
                exported[r.item_id] = r.run_id
        runs = {
            r.run_id
            for r in self._t.runs.values()
            if r.item_id in items
            and r.run_id not in (items[r.item_id].current_run_id, items[r.item_id].ready_run_id)
            and r.run_id != exported.get(r.item_id)
            and r.status in before
            and (r.created_at if r.finished_at is None else r.finished_at) < before[r.status]
        }
        newest = max(before.values())
        events = [
            e.seq
            for e in self._t.events.values()
            if e.at < newest
            and e.kind != "capture"
            and (
                e.run_id in runs
                or (e.at < finished_before and (e.run_id is None or e.run_id not in self._t.runs))
            )
        ]
        attempts = [a.attempt_id for a in self._t.attempts.values() if a.run_id in runs]
        artifacts = [
            (item_id, key)
            for item_id, item in items.items()
            for key in self._prunable_versions(item, finished_before, keep_versions)
        ]
        counts = {
            "runs": len(runs),
            "attempts": len(attempts),
            "events": len(events),
            "artifacts": len(artifacts),
            "chunks": sum(len(self._t.chunks.get(run_id, {})) for run_id in runs),
        }
        if dry_run:
            return counts
        for run_id in sorted(runs):
            for key in list(self._t.chunks.get(run_id, {})):
                self._drop(self._t.chunks[run_id], key)
            self._drop(self._t.runs, run_id)
        for attempt_id in attempts:
            self._drop(self._t.attempts, attempt_id)
        for seq in events:
            self._drop(self._t.events, seq)
        for item_id, key in artifacts:
            self._drop(self._t.artifacts[item_id], key)
        return counts

    def _prunable_versions(
        self, item: ItemRow, finished_before: int, keep: int
    ) -> list[tuple[str, int]]:
        """Old superseded versions none may see: not a person's newest shown edit, not the
        newest system version, not those of the run current or shown; the newest ``keep``
        of them stay."""
        of_item = list(self._artifacts(item.id))
        newest: set[tuple[str, str, int]] = set()
        for by in ("system", "user"):
            for kind in {a.artifact_type for a in of_item}:
                versions = [
                    a.version
                    for a in of_item
                    if a.artifact_type == kind
                    and a.created_by == by
                    and (by == "system" or not a.discarded)
                ]
                if versions:
                    newest.add((kind, by, max(versions)))
        kept_versions = {(kind, version) for kind, _, version in newest}
        candidates: dict[str, list[int]] = {}
        for art in of_item:
            if (
                art.created_at < finished_before
                and not (
                    art.created_by == "system"
                    and art.run_id in (item.current_run_id, item.ready_run_id)
                )
                and (art.artifact_type, art.version) not in kept_versions
            ):
                candidates.setdefault(art.artifact_type, []).append(art.version)
        return [
            (kind, version)
            for kind, versions in candidates.items()
            for version in sorted(versions, reverse=True)[max(keep, 0) :]
        ]


# --- the store -----------------------------------------------------------------------


class _Shared:
    """One database, and how many stores have it open."""

    def __init__(self, tables: _Tables) -> None:
        self.tables = tables
        self.users = 0
        #: Notices between the stores open on this database.
        self.channel = LocalChannel()


#: The databases open in this process, by path.
_OPEN: dict[Path, _Shared] = {}


def _backup_target(dest: str | Path) -> Path:
    """``dest`` itself, or a timestamped file inside it when it is a directory."""
    target = Path(dest)
    if target.is_dir():
        return target / time.strftime("readdod-%Y%m%dT%H%M%SZ.db", time.gmtime())
    if not target.parent.is_dir():
        raise ValidationFailed(f"cannot back up to {target}: {target.parent} is not a directory")
    return target


class MemoryStore:
    """The tables of one path, opened with :meth:`open` for as long as a block runs."""

    def __init__(self, path: Path, tables: _Tables, channel: LocalChannel | None = None) -> None:
        self.path = path
        self._t = tables
        self._channel = channel or LocalChannel()
        self._closed = False
        self._transactions = 0
        self._units = 0
        self._statements = 0
        self._reads = 0
        self._read_statements = 0

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path) -> AsyncIterator[MemoryStore]:
        """The database at ``path`` (empty when there is no file), written back there once
        the last store open on it closes."""
        key = path.resolve()
        shared = _OPEN.get(key)
        if shared is None:
            tables = _decode(path.read_bytes()) if path.is_file() else _Tables()
            shared = _OPEN[key] = _Shared(tables)
        shared.users += 1
        store = cls(path, shared.tables, shared.channel)
        try:
            yield store
        finally:
            store._closed = True
            shared.users -= 1
            if not shared.users:
                del _OPEN[key]
                path.parent.mkdir(parents=True, exist_ok=True)
                _write_file(path, _encode(shared.tables))

    def _check_open(self) -> None:
        if self._closed:
            raise ShuttingDown("readdod is shutting down; try again when it is back")

    async def write(
        self, fn: Callable[[UnitOfWork], T], *, alone: bool = False, slot: StepSlot | None = None
    ) -> T:
        """Run ``fn`` as one transaction; ``alone`` and ``slot`` change nothing, as no unit
        waits on another here."""
        self._check_open()
        await anyio.lowlevel.checkpoint()
        self._check_open()
        unit = MemoryUnitOfWork(self._t, writable=True)
        try:
            result = fn(unit)
        except BaseException:
            unit.undo()
            raise
        finally:
            self._statements += unit.statements
        self._transactions += 1
        self._units += 1
        return result

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        self._check_open()
        await anyio.lowlevel.checkpoint()
        self._check_open()
        unit = MemoryUnitOfWork(self._t, writable=False)
        try:
            return fn(unit)
        finally:
            self._reads += 1
            self._read_statements += unit.statements

    def counters(self) -> StoreCounters:
        return StoreCounters(
            transactions=self._transactions,
            units=self._units,
            statements=self._statements,
            reads=self._reads,
            read_statements=self._read_statements,
        )

    async def notify(self, payload: str) -> None:
        self._check_open()
        if len(payload.encode()) > NOTICE_MAX_BYTES:
            raise ValueError(f"a notice is at most {NOTICE_MAX_BYTES} bytes")
        self._channel.send(payload)
        await anyio.lowlevel.checkpoint()

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return self._channel.listen()

    async def reclaim(self) -> None:
        """Nothing to give back: what pruning removed is already freed."""
        self._check_open()
        await anyio.lowlevel.checkpoint()

    async def backup(self, dest: str | Path) -> BackupResult:
        """The tables as they are now, in the file format :meth:`open` reads."""
        self._check_open()
        started = time.perf_counter()
        data = _encode(self._t)
        target = _backup_target(dest)
        await anyio.to_thread.run_sync(_write_file, target, data)
        return BackupResult(
            path=str(target),
            bytes=len(data),
            pages=0,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def opener(directory: Path) -> Callable[[], AbstractAsyncContextManager[Store]]:
    """Opens the one in-memory database of a test, kept in ``directory``."""
    path = directory / "contract.mem"

    def open_store() -> AbstractAsyncContextManager[Store]:
        return MemoryStore.open(path)

    return open_store


# mypy proves here that the classes satisfy the Protocols structurally.
_UNIT: type[UnitOfWork] = MemoryUnitOfWork
_STORE: type[Store] = MemoryStore
