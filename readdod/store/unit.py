"""The unit of work, written once: every named operation of :mod:`readdod.store.api`.

A :class:`StoreUnit` runs inside a transaction a store opened, over an
:class:`~readdod.store.executor.Executor` of its dialect: static statements
by name (``sql/*.sql`` of each dialect, the same names in both), the few
composed per call (the columns a caller sets, a listing's conditions) with
the dialect's parameter mark. Its methods are synchronous on purpose: a
whole unit runs in one hop (one thread, one connection), so a read-check-
write sequence is atomic.

Appends on the hot path (step artifacts, events, a run's current step, and
what else the dialect holds) wait in one :class:`~readdod.store.held.HeldRows`
and go out before any statement that could see them (:meth:`flush`), or with
the commit. So whatever a unit reads sees all that was written before it, in
order. The statements that cannot see held rows (only an item's row, say, or
a source) skip the flush (:meth:`_now`); the reads of one item's artifacts
add its held ones to what the database answers instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from readdod.store.api.artifacts import StepSlot
from readdod.store.executor import Cursor, Executor, Params
from readdod.store.held import HeldArtifact, HeldEvent, HeldRows
from readdod.store.rows import (
    ARTIFACT_COLUMNS,
    ATTEMPT_COLUMNS,
    CHUNK_COLUMNS,
    DAEMON_COLUMNS,
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
    FEED_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
    ArtifactRow,
    AttemptRow,
    ChunkRow,
    DaemonRow,
    EventRow,
    ExportRow,
    FeedRow,
    ItemRow,
    RunRow,
)

if TYPE_CHECKING:
    from readdod.store.api import UnitOfWork

#: Columns a caller may set (never a key nor a creation time).
ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}
CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}
FEED_SETTABLE = frozenset(FEED_COLUMNS) - {"id", "url", "created_at"}
#: The item columns the head of a search vector is made of.
_SEARCHED = frozenset({"title", "url", "intent_text"})
_BUSY = frozenset({"QUEUED", "PROCESSING"})
#: A lease deadline every lease is before, when every lease counts as lost.
_EVERY_LEASE = 1 << 62
#: A limit no listing reaches (a negative limit: every row).
_EVERY_ROW = 1 << 62
_ITEM_LIST = ", ".join(ITEM_COLUMNS)

#: What a step slot holds: (orphan count while the lease holds, newest version,
#: a person's version shown, the version this run committed).
Slot = tuple[int | None, int, bool, int | None]


def item_row(row: Sequence[Any]) -> ItemRow:
    return ItemRow(**dict(zip(ITEM_COLUMNS, row, strict=True)))


def run_row(row: Sequence[Any]) -> RunRow:
    return RunRow(**dict(zip(RUN_COLUMNS, row, strict=True)))


def _artifact(row: Sequence[Any]) -> ArtifactRow:
    return ArtifactRow(**dict(zip(ARTIFACT_COLUMNS, row, strict=True)))


def _attempt(row: Sequence[Any]) -> AttemptRow:
    return AttemptRow(**dict(zip(ATTEMPT_COLUMNS, row, strict=True)))


def _event(row: Sequence[Any]) -> EventRow:
    return EventRow(**dict(zip(EVENT_COLUMNS, row, strict=True)))


def _feed(row: Sequence[Any]) -> FeedRow:
    return FeedRow(**dict(zip(FEED_COLUMNS, row, strict=True)))


def _daemon(row: Sequence[Any]) -> DaemonRow:
    fields = dict(zip(DAEMON_COLUMNS, row, strict=True))
    fields["paused"] = bool(fields["paused"])  # SQLite keeps it as 0/1
    return DaemonRow(**fields)


def _before(expired_before: int | None) -> int:
    return _EVERY_LEASE if expired_before is None else expired_before


def _tokens(prompt: int, completion: int, cached: int) -> list[tuple[str, int]]:
    """The token counters a spend adds to, those it changes only."""
    named = (
        ("prompt_tokens", prompt),
        ("completion_tokens", completion),
        ("cached_tokens", cached),
    )
    return [(name, value) for name, value in named if value]


class StoreUnit:
    """Named operations over one executor, inside the store's transaction."""

    def __init__(self, executor: Executor, *, writing: bool = True) -> None:
        self.x = executor
        self.q = executor.queries
        #: Inside a writing unit: a lease check locks the item's row until the commit
        #: (where the dialect locks rows: the ``*_locked`` statements).
        self.writing = writing
        #: Statements run through this unit (held rows: as the executor counts them).
        self.statements = 0
        self.held = HeldRows()
        #: Step slots read ahead for a batch's units, by their key (a dialect that
        #: reads them in one statement fills these); the rows of the items they hold,
        #: until the unit writes one; what the READY gates of their runs read.
        self.slots: dict[StepSlot, Slot] = {}
        self.rows: dict[str, ItemRow] = {}
        self.gates: dict[tuple[str, str], tuple[frozenset[str], list[Any]]] = {}

    # --- the executor -------------------------------------------------------------

    def _run(self, sql: str, params: Params = ()) -> Cursor:
        """A statement that could see the rows held back: they are written first."""
        if self.held:
            self.flush()
        self.statements += 1
        return self.x.execute(sql, params)

    def _now(self, sql: str, params: Params = ()) -> Cursor:
        """A statement the rows held back cannot bear on: no flush."""
        self.statements += 1
        return self.x.execute(sql, params)

    def _one(self, name: str, params: Params = ()) -> Any:
        return self._run(self.q[name], params).fetchone()

    def _all(self, name: str, params: Params = ()) -> list[Any]:
        return self._run(self.q[name], params).fetchall()

    def _sets(self, fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
        """``col = ?, ...`` for ``fields``, each a column of ``allowed`` (ValueError if not)."""
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"not settable: {sorted(bad)}")
        mark = self.x.mark
        return ", ".join(f"{k} = {mark}" for k in fields), list(fields.values())

    def flush(self) -> None:
        """Write the rows held back, in the order they were added (a table at a time)."""
        if self.held:
            self.statements += self.x.write_held(self.held)

    def discard(self) -> None:
        """Forget the rows held back (their unit failed and is rolled back)."""
        self.held.discard()

    def forget_slots(self) -> None:
        """Forget what was read ahead: another unit may change it."""
        self.slots.clear()
        self.rows.clear()
        self.gates.clear()

    # --- items ----------------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None:
        known = self.rows.get(item_id)
        if known is not None:
            return known
        row = self._now(self.q["item_by_id"], (item_id,)).fetchone()
        return item_row(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self._one("item_by_capture_id", (capture_id,))
        return item_row(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        values = [getattr(item, c) for c in ITEM_COLUMNS]
        if self.x.search.vectors:
            values.append(self.x.search.head(item.title, item.url, item.intent_text))
        self._run(self.q["insert_item"], values)

    def _update_item(self, where: str, fields: dict[str, Any], args: Sequence[Any]) -> bool:
        """``UPDATE items SET fields WHERE where``; True if it matched. ``where`` starts
        with the item's id: the row read ahead for it is read again after this. Only the
        item row: nothing held back bears on it."""
        self.rows.pop(args[0], None)
        sets, values = self._sets(fields, ITEM_SETTABLE)
        sql = f"UPDATE items SET {sets} WHERE {where}"
        if not self.x.search.vectors or _SEARCHED.isdisjoint(fields):
            return self._now(sql, [*values, *args]).rowcount == 1
        row = self._now(sql + " RETURNING id, title, url, intent_text", [*values, *args]).fetchone()
        if row is None:
            return False
        self.held.heads[row[0]] = self.x.search.head(row[1], row[2], row[3])
        return True

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status; False when it was not ``expected``."""
        m = self.x.mark
        return self._update_item(
            f"id = {m} AND status = {m}", {"status": new, **fields}, (item_id, expected)
        )

    def count_status(self, status: str) -> int:
        if status == "QUEUED":
            row = self._one("count_queued")
        elif status == "PROCESSING":
            row = self._one("count_processing")
        else:
            row = self._one("count_settled", (status,))
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
        """Newest first, keyset-paginated by id (ids sort by creation time)."""
        m, q = self.x.mark, self.q
        where: list[str] = []
        args: list[Any] = []
        if query is not None:
            terms = self.x.search.query(query)
            if terms is None:
                return []
            where.append(q["search_items"])
            args.append(terms)
        if statuses:
            where.append(q["status_in"])
            args.append(self.x.array(list(statuses)))
            if not _BUSY.intersection(statuses):
                where.append(q["settled"])
        if priority:
            where.append(f"priority = {m}")
            args.append(priority)
        for tag in tags:
            where.append(q["item_has_tag"])
            args.append(tag)
        if before_id:
            where.append(f"id < {m}")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._run(
            f"SELECT {_ITEM_LIST} FROM items{clause} ORDER BY id DESC LIMIT {m}",
            [*args, limit if limit >= 0 else _EVERY_ROW],
        ).fetchall()
        return [item_row(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        return [item_row(r) for r in self._all("items_by_canonical_url", (canonical_url,))]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        name = "items_in" if _BUSY.intersection(statuses) else "settled_items_in"
        return [item_row(r) for r in self._all(name, (self.x.array(list(statuses)),))]

    def insert_source(
        self, item_id: str, html: str | None, text: str | None, document: str | None = None
    ) -> None:
        self._run(self.q["insert_source"], (item_id, html, text, document))

    # Sources are never held back: no flush.

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self._now(self.q["source"], (item_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def source_document(self, item_id: str) -> str | None:
        row = self._now(self.q["source_document"], (item_id,)).fetchone()
        return row[0] if row else None

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None, str | None]]:
        if not item_ids:
            return {}
        rows = self._now(
            self.q["small_sources"], (self.x.array(list(item_ids)), max_chars)
        ).fetchall()
        return {item_id: (html, text, document) for item_id, html, text, document in rows}

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        return [item_row(r) for r in self._all("retries_due", (now, limit))]

    def next_retry_at(self) -> int | None:
        row = self._one("next_retry_at")
        return int(row[0]) if row and row[0] is not None else None

    # --- leases ---------------------------------------------------------------------

    def queue_due(self, now: int) -> bool:
        return self._one("queue_due", (now,)) is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        # Only items rows: nothing held back bears on it.
        rows = self._now(
            self.q["claim_items"],
            {"owner": owner, "until": lease_until, "now": now, "limit": limit},
        ).fetchall()
        items = [item_row(r) for r in rows]
        items.sort(key=lambda i: (i.priority, i.created_at))
        return items

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        ids = list(item_ids)
        if not ids:
            return set()
        args = {"until": until, "owner": owner, "ids": self.x.array(ids)}
        return {r[0] for r in self._now(self.q["renew_leases"], args).fetchall()}

    def held_by(self, owner: str) -> list[ItemRow]:
        return [item_row(r) for r in self._all("held_by", (owner,))]

    def holds_lease(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None
    ) -> bool:
        sql = self.q["holds_lease_locked" if self.writing else "holds_lease"]
        return self._now(sql, (item_id, owner, run_id, token)).fetchone() is not None

    def update_fenced(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None, **fields: Any
    ) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id``."""
        m = self.x.mark
        return self._update_item(
            f"id = {m} AND status = 'PROCESSING' AND lease_owner = {m}"
            f" AND current_run_id = {m} AND lease_token = coalesce({m}, lease_token)",
            fields,
            (item_id, owner, run_id, token),
        )

    def lost_leases(
        self, expired_before: int | None, *, at_least: int = 0, owned_by: str | None = None
    ) -> list[ItemRow]:
        args = {"before": _before(expired_before), "at_least": at_least, "mine": owned_by}
        return [item_row(r) for r in self._all("lost_leases", args)]

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
        """PROCESSING → QUEUED, at once, for every lost lease of an item lost fewer than
        ``below`` times counting this one (see the Protocol).

        The lost rows are taken first (where rows lock, ``SKIP LOCKED``: two daemons
        recovering at once split them, and neither requeues an item twice).
        """
        args: dict[str, Any] = {
            "before": _before(expired_before),
            "below": below,
            "mine": owned_by,
            "now": now,
            "reason": reason,
            "code": error_code,
            "stamp": attempt_stamp,
            "sample": sample,
        }
        # (how many, their ids where the statements below need them)
        total, args["ids"] = self._one("take_lost_below", args)
        if not total:
            return 0, []
        rows = self._all("sample_lost", args)
        # Events and runs first: they read the items before these change.
        for name in (
            "requeue_lost_events",
            "requeue_lost_runs",
            "end_lost_attempts",
            "resume_lost_runs",
            "settle_lost_chunks",
            "requeue_lost_items",
        ):
            self._run(self.q[name], args)
        return int(total), [(r[0], r[1], int(r[2])) for r in rows]

    # --- runs -----------------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None:
        self._run(self.q["insert_run"], [getattr(run, c) for c in RUN_COLUMNS])

    def _run_held(self, run_ids: Iterable[str]) -> None:
        """Write the held rows first if any of ``run_ids`` has a step or update held."""
        held = self.held
        if (held.steps or held.run_updates) and any(
            r in held.steps or r in held.run_updates for r in run_ids
        ):
            self.flush()

    def update_run(self, run_id: str, **fields: Any) -> None:
        sets, values = self._sets(fields, RUN_SETTABLE)  # a wrong column fails here
        if self.x.hold_run_updates:
            held = self.held.run_updates.setdefault(run_id, {})
            if run_id in self.held.steps:
                # The step held back goes out with this update (which wins if it sets one).
                held["current_step"] = self.held.steps.pop(run_id)
            held.update(fields)
            return
        self._run_held((run_id,))
        self._now(f"UPDATE runs SET {sets} WHERE run_id = {self.x.mark}", [*values, run_id])

    def set_current_step(self, run_id: str, step: str | None) -> None:
        self.held.steps[run_id] = step

    def run(self, run_id: str) -> RunRow | None:
        self._run_held((run_id,))
        row = self._now(self.q["run_by_id"], (run_id,)).fetchone()
        return run_row(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        return [run_row(r) for r in self._all("runs_of_item", (item_id,))]

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running (one statement); returns the updated rows."""
        if not run_ids:
            return {}
        self._run_held(run_ids)  # the rows returned must show the step held back
        rows = self._now(self.q["start_runs"], (owner, now, self.x.array(list(run_ids)))).fetchall()
        return {run.run_id: run for run in map(run_row, rows)}

    def ready_from_runs(self) -> list[str]:
        return [str(r[0]) for r in self._all("ready_from_runs")]

    def insert_attempt(self, attempt: AttemptRow) -> None:
        if self.x.hold_attempts:
            self.held.add_attempt(attempt)
        else:
            self._run(self.q["insert_attempt"], [getattr(attempt, c) for c in ATTEMPT_COLUMNS])

    def _attempts_held(self, run_ids: Iterable[str]) -> None:
        runs = self.held.attempt_runs
        if runs and not runs.isdisjoint(run_ids):
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
        The step it reached is the run's current step."""
        tail = (status, now, error_code, error_message, run_id)
        update = self.held.run_updates.pop(run_id, None)
        if update is not None:
            # Sent with the run's update held back, in one statement.
            if run_id in self.held.steps:  # a step set after the update: it wins
                update = {**update, "current_step": self.held.steps.pop(run_id)}
            sets, values = self._sets(update, RUN_SETTABLE)
            sql = self.q["end_attempt_after_update"].replace("{sets}", sets)
            return self._now(sql, [*values, run_id, *tail]).rowcount > 0
        # It reads the run's current step, which may be held back.
        self._run_held((run_id,))
        self._attempts_held((run_id,))
        return self._now(self.q["end_attempt"], tail).rowcount > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        self._attempts_held((run_id,))
        row = self._now(self.q["last_attempt"], (run_id,)).fetchone()
        return _attempt(row) if row else None

    def start_attempts(
        self, run_ids: Sequence[str], owner: str, now: int, new_id: Callable[[int], str]
    ) -> None:
        """The claimed runs' queued attempts start running (one is added where none waits)."""
        if not run_ids:
            return
        self._attempts_held(run_ids)
        self._run_held(run_ids)  # first_step is the run's current step
        rows = self._now(
            self.q["start_attempts"], (owner, now, self.x.array(list(run_ids)))
        ).fetchall()
        if len(rows) == len(run_ids):
            return
        started = {r[0] for r in rows}
        for run_id in run_ids:
            if run_id not in started:
                self._now(self.q["add_running_attempt"], (new_id(now), owner, now, now, run_id))

    def spend(self, run_id: str, prompt: int, completion: int, cached: int) -> None:
        if not (prompt or completion or cached):
            return
        self._attempts_held((run_id,))
        self._now(self.q["spend_on_attempt"], (prompt, completion, cached, run_id))
        for name, value in _tokens(prompt, completion, cached):
            self._now(self.q["add_to_counter"], (name, value))

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        return [_attempt(r) for r in self._all("attempts_of_item", (item_id,))]

    # --- artifacts ------------------------------------------------------------------

    def _index_body(self, item_id: str, payload: str | None, *, by_user: bool) -> None:
        """Where the unit keeps search vectors: the extraction ``payload`` becomes the
        item's searchable body, a person's (or the one shown once theirs was set
        aside) always, the system's unless a person's is shown."""
        if self.x.search.vectors:
            self.held.set_body(item_id, self.x.search.body(payload), always=by_user)

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
        row = self._one(
            "insert_next_artifact",
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
        )
        if artifact_type == "extraction":
            self._index_body(item_id, payload, by_user=created_by == "user")
        return int(row[0])

    # The reads below see this item's artifacts held back as if they were written: what
    # the database answers, plus the held rows that match (a system's, never set aside).

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        rows = self._now(self.q["artifacts_of_run"], (item_id, run_id)).fetchall()
        found = {a.artifact_type: a for a in map(_artifact, rows)}
        for held in self.held.of_item(item_id):
            if held.run_id == run_id:
                found[held.artifact_type] = held.row()
        return found

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        rows = self._now(
            self.q["run_payloads"], (item_id, run_id, self.x.array(list(types)))
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {r[0]: (r[1], r[2]) for r in rows}
        for held in self.held.of_item(item_id):
            if held.run_id == run_id and held.artifact_type in types:
                found[held.artifact_type] = (held.run_id, held.payload)
        return found

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        known = self.gates.pop((item_id, run_id), None)
        if known is not None and known[0].issuperset(types):
            rows = [r for r in known[1] if r[0] in types]
        else:
            rows = self._now(
                self.q["gate_inputs"], (item_id, self.x.array(list(types)), run_id)
            ).fetchall()
        found: dict[str, tuple[str | None, str]] = {}
        mine: tuple[int, str] | None = None
        for kind, of_run, payload, created_by, version in rows:
            if created_by == "system":
                found[kind] = (of_run, payload)
            elif mine is None or version > mine[0]:
                mine = (version, payload)
        for held in self.held.of_item(item_id):
            if held.run_id == run_id and held.artifact_type in types:
                found[held.artifact_type] = (held.run_id, held.payload)
        return found, mine[1] if mine else None

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str, *, token: int | None = None
    ) -> Slot:
        """All a step's commit needs to know, in one statement (or read ahead)."""
        known = self.slots.pop(StepSlot(item_id, artifact_type, owner, run_id, token), None)
        if known is not None:
            orphaned, newest, edited, existing = known
        else:
            row = self._now(
                self.q["step_slot_locked" if self.writing else "step_slot"],
                (item_id, owner, run_id, token, run_id, item_id, artifact_type),
            ).fetchone()
            orphaned, newest, edited, existing = row[0], int(row[1]), bool(row[2]), row[3]
        for held in self.held.of_item(item_id):
            if held.artifact_type == artifact_type:
                newest = max(newest, held.version)
                if held.run_id == run_id:
                    existing = held.version if existing is None else max(existing, held.version)
        return orphaned, newest, edited, existing

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
        self.held.add_artifact(
            HeldArtifact(item_id, artifact_type, version, run_id, payload, meta, now)
        )
        if artifact_type == "extraction":
            self._index_body(item_id, payload, by_user=False)

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version, a person's edit winning over any system version."""
        row = self._now(self.q["latest_artifact"], (item_id, artifact_type)).fetchone()
        best = _artifact(row) if row else None
        if best is not None and best.created_by == "user":
            return best
        for held in self.held.of_item(item_id):
            if held.artifact_type == artifact_type and (
                best is None or held.version > best.version
            ):
                best = held.row()
        return best

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self._one("artifact_version", (item_id, artifact_type, version))
        return _artifact(row) if row else None

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        # A person's versions are never held back.
        row = self._now(self.q["user_version"], (item_id, artifact_type)).fetchone()
        return _artifact(row) if row else None

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        count = self._run(self.q["discard_user_versions"], (item_id, artifact_type)).rowcount
        if artifact_type == "extraction" and count:
            if self.x.search.vectors:
                shown = self.latest_artifact(item_id, "extraction")
                self._index_body(item_id, None if shown is None else shown.payload, by_user=True)
            else:
                self._run(self.q["reindex_extraction"], (item_id, item_id))
        return int(count)

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        rows = self._all("shown_artifacts", {"item": item_id, "run": run_id})
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        return [_artifact(r) for r in self._all("all_artifacts", (item_id,))]

    # --- chunks ---------------------------------------------------------------------
    # Nothing held back bears on a chunk but a run's settling (where it is held back):
    # these flush only when the run they touch has one held.

    def _settled(self, run_id: str) -> None:
        if run_id in self.held.settles:
            self.flush()

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        self._settled(run_id)
        if step is None:
            rows = self._now(self.q["chunks_of_run"], (run_id,)).fetchall()
        else:
            rows = self._now(self.q["chunks_of_step"], (run_id, step)).fetchall()
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in rows]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        self._settled(run_id)
        self._now(self.q["delete_chunks"], (run_id, step))
        if total > 0:
            args = {"run": run_id, "step": step, "model": model, "now": now, "total": total}
            self._now(self.q["insert_pending_chunks"], args)

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        self._settled(run_id)
        self._now(self.q["reopen_chunks"], (model, now, run_id, step))

    def retry_chunks(self, run_id: str, now: int) -> None:
        self._settled(run_id)
        self._now(self.q["retry_chunks"], (now, run_id))

    def settle_chunks(self, run_id: str, now: int) -> None:
        if self.x.hold_settles:
            self.held.settles[run_id] = now
        else:
            self._now(self.q["settle_chunks"], (now, run_id))

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        self._settled(run_id)
        sets, values = self._sets(fields, CHUNK_SETTABLE)
        m = self.x.mark
        self._now(
            f"UPDATE chunks SET {sets} WHERE run_id = {m} AND step = {m} AND idx = {m}",
            [*values, run_id, step, idx],
        )

    # --- records: events, requests, settings, exports -------------------------------

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
            HeldEvent(at, item_id, run_id, kind, from_status, to_status, trigger, detail)
        )

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger: (at, item_id, run_id, kind, from, to, detail) each."""
        self.held.events.extend(
            HeldEvent(r[0], r[1], r[2], r[3], r[4], r[5], trigger, r[6]) for r in rows
        )

    def events_for(self, item_id: str) -> list[EventRow]:
        return [_event(r) for r in self._all("events_of_item", (item_id,))]

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        row = self._one("request_by_id", (request_id,))
        return (row[0], row[1], row[2]) if row else None

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        self._run(self.q["insert_request"], (request_id, method, item_id, response, now))

    def setting(self, key: str) -> str | None:
        row = self._one("setting", (key,))
        return row[0] if row else None

    def set_setting(self, key: str, value: str) -> None:
        self._run(self.q["set_setting"], (key, value))

    def export(self, export_key: str) -> ExportRow | None:
        row = self._one("export_by_key", (export_key,))
        return ExportRow(**dict(zip(EXPORT_COLUMNS, row, strict=True))) if row else None

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        values = [getattr(row, c) for c in EXPORT_COLUMNS]
        return self._run(self.q["insert_export"], values).rowcount == 1

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        return [r[0] for r in self._all("export_files", (item_id, fmt))]

    # --- reports and retention ------------------------------------------------------

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        return [(r[0], int(r[1]), r[2]) for r in self._all("run_outcomes_since", (since,))]

    def backlog(self) -> tuple[int, int | None]:
        row = self._one("backlog")
        return int(row[0]), None if row[1] is None else int(row[1])

    def failures_since(self, since: int) -> int:
        return int(self._one("failures_since", (since,))[0])

    def count_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._all("items_by_status")}

    def runs_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._all("runs_by_status")}

    def attempts_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._all("attempts_by_status")}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        return [(str(r[0]), float(r[1])) for r in self._all("step_durations", (limit,))]

    def token_totals(self) -> tuple[int, int]:
        row = self._one("token_totals")
        return int(row[0]), int(row[1])

    def prune_history(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove (or only count) what retention allows, of every item; never what an
        item shows."""
        args = {
            "finished": finished_before,
            "cancelled": cancelled_before,
            "failed": failed_before,
            "newest": max(finished_before, cancelled_before, failed_before),
            "keep": keep_versions,
        }
        counts = {
            kind: int(self._one(f"count_prunable_{kind}", args)[0])
            for kind in ("runs", "attempts", "events", "artifacts", "chunks")
        }
        if dry_run:
            return counts
        for kind in ("events", "chunks", "attempts", "runs", "artifacts"):
            self._run(self.q[f"prune_{kind}"], args)
        return counts

    # --- feeds ----------------------------------------------------------------------

    def insert_feed(self, row: FeedRow) -> bool:
        values = [getattr(row, c) for c in FEED_COLUMNS]
        return self._run(self.q["insert_feed"], values).rowcount == 1

    def feed(self, feed_id: str) -> FeedRow | None:
        row = self._one("feed", (feed_id,))
        return _feed(row) if row else None

    def feed_by_url(self, url: str) -> FeedRow | None:
        row = self._one("feed_by_url", (url,))
        return _feed(row) if row else None

    def feeds(self) -> list[FeedRow]:
        return [_feed(r) for r in self._all("feeds")]

    def feeds_due(self, now: int, limit: int) -> list[FeedRow]:
        return [_feed(r) for r in self._all("feeds_due", (now, limit))]

    def next_feed_poll(self) -> int | None:
        row = self._one("next_feed_poll")
        return None if row is None or row[0] is None else int(row[0])

    def set_feed(self, feed_id: str, **fields: Any) -> bool:
        sets, values = self._sets(fields, FEED_SETTABLE)
        sql = f"UPDATE feeds SET {sets} WHERE id = {self.x.mark}"
        return self._run(sql, [*values, feed_id]).rowcount == 1

    def delete_feed(self, feed_id: str) -> bool:
        self._run(self.q["delete_feed_entries"], (feed_id,))
        return self._run(self.q["delete_feed"], (feed_id,)).rowcount == 1

    def feed_entries_seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        return {r[0] for r in self._all("feed_entries_seen", (feed_id, self.x.array(list(keys))))}

    def add_feed_entry(self, feed_id: str, key: str, item_id: str | None, at: int) -> None:
        self._run(self.q["add_feed_entry"], (feed_id, key, item_id, at))

    # --- todos ----------------------------------------------------------------------

    def todo_marks(self, item_id: str) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._all("todo_marks", (item_id,))}

    def mark_todo(self, item_id: str, key: str, done_at: int) -> bool:
        return self._run(self.q["mark_todo"], (item_id, key, done_at)).rowcount == 1

    def unmark_todo(self, item_id: str, key: str) -> bool:
        return self._run(self.q["unmark_todo"], (item_id, key)).rowcount == 1

    def items_with_todo_marks(self) -> list[str]:
        return [r[0] for r in self._all("items_with_todo_marks")]

    # --- daemons --------------------------------------------------------------------

    def register_daemon(self, row: DaemonRow) -> None:
        self._run(self.q["register_daemon"], [getattr(row, c) for c in DAEMON_COLUMNS])

    def beat_daemon(self, daemon_id: str, at: int, *, in_flight: int, paused: bool) -> bool:
        cur = self._run(self.q["beat_daemon"], (at, in_flight, paused, daemon_id))
        return cur.rowcount > 0

    def remove_daemon(self, daemon_id: str) -> bool:
        return self._run(self.q["remove_daemon"], (daemon_id,)).rowcount > 0

    def daemons(self) -> list[DaemonRow]:
        return [_daemon(r) for r in self._all("daemons")]

    def forget_daemons(self, silent_before: int, *, keep: str) -> list[str]:
        return sorted(r[0] for r in self._all("forget_daemons", (silent_before, keep)))


if TYPE_CHECKING:
    # mypy proves here that the unit fills every Protocol of the seam.
    _UNIT: type[UnitOfWork] = StoreUnit
