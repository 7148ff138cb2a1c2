"""PostgreSQL under the shared unit of work: one connection, arrays, vectors made here.

Each statement waits for the server's answer before the next goes out. Not
pipeline mode, which would save round trips: a daemon frozen (a paused VM,
SIGSTOP) between two pipelined statements, no Sync sent, holds its row locks
with no timeout to end them, and the other daemons could never take its
items; waiting for each answer keeps the session "idle in transaction",
which the server ends (``IDLE_IN_TRANSACTION_MS``). ``IN`` lists are arrays
(``= ANY(%s)``), one statement shape whatever their length, so the server's
prepared statements are reused.

As every statement is a round trip, the executor holds back more than
SQLite's: run updates (sent with the attempt's end that follows, in one
statement) and chunk settling too, and the items' search vectors, which are
made in Python (:mod:`readdod.store.postgresql.search`). Held rows go out as
one statement per table, arrays ``unnest``-ed into rows, sent in binary
(``%b``): psycopg escapes a text array's elements one by one in Python, some
70 µs for an artifact's JSON, where the binary form copies the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import psycopg

from readdod.store.api.artifacts import StepSlot
from readdod.store.executor import Params

if TYPE_CHECKING:
    from readdod.store.executor import Executor, Search
from readdod.store.held import HeldRows
from readdod.store.postgresql import search
from readdod.store.postgresql.queries import QUERIES
from readdod.store.unit import StoreUnit, item_row

INSERT_ARTIFACTS = (
    "INSERT INTO artifacts (item_id, artifact_type, version, run_id, payload, meta,"
    " created_at, created_by) SELECT *, 'system' FROM unnest(%b::text[], %b::text[],"
    " %b::integer[], %b::text[], %b::text[], %b::text[], %b::bigint[])"
)
INSERT_EVENTS = (
    "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)"
    " SELECT a, b, c, d, f, g, h, i FROM unnest(%b::bigint[], %b::text[], %b::text[],"
    " %b::text[], %b::text[], %b::text[], %b::text[], %b::text[])"
    " WITH ORDINALITY AS e(a, b, c, d, f, g, h, i, n) ORDER BY n"
)
#: An item's search vectors as held: the head (title, url, intent), the body, and
#: whether the body is to be shown whatever (a person's extraction, or the one shown
#: once theirs was set aside) or only while no person's extraction is shown.
SET_SEARCH = (
    "UPDATE items SET search_head = coalesce(v.head::tsvector, items.search_head),"
    " search_body = CASE WHEN v.body IS NOT NULL AND (v.always OR NOT EXISTS ("
    "SELECT 1 FROM artifacts a WHERE a.item_id = items.id AND a.artifact_type = 'extraction'"
    " AND a.created_by = 'user' AND a.discarded = 0)) THEN v.body::tsvector"
    " ELSE items.search_body END"
    " FROM unnest(%b::text[], %b::text[], %b::text[], %b::boolean[]) AS v(id, head, body, always)"
    " WHERE items.id = v.id"
)
#: The chunks in flight of runs that stopped go back to pending.
SETTLE_CHUNKS = (
    "UPDATE chunks SET status = 'pending', updated_at = v.at"
    " FROM unnest(%b::text[], %b::bigint[]) AS v(run_id, at)"
    " WHERE chunks.run_id = v.run_id AND chunks.status IN ('processing', 'retrying')"
)
SET_STEPS = (
    "UPDATE runs SET current_step = v.step FROM unnest(%b::text[], %b::text[]) AS v(id, step)"
    " WHERE runs.run_id = v.id"
)


class _Text(msgspec.Struct):
    text: Any = None


def extracted_text(payload: str) -> str | None:
    """The ``text`` of an extraction's payload (None when it has none, or is no JSON object)."""
    try:
        found = msgspec.json.decode(payload, type=_Text).text
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return found if isinstance(found, str) else None if found is None else str(found)


class VectorSearch:
    """``tsvector``/``tsquery`` made in Python; the unit keeps the items' vectors."""

    vectors = True

    def query(self, text: str) -> str | None:
        return search.query(text)

    def head(self, title: str | None, url: str | None, intent: str | None) -> str:
        return search.head_vector(title, url, intent)

    def body(self, payload: str | None) -> str:
        return search.body_vector(None if payload is None else extracted_text(payload))


_SEARCH = VectorSearch()


def _columns(rows: Sequence[Any], *names: str) -> list[list[Any]]:
    """Rows as one list per column, for ``unnest``."""
    return [[getattr(row, name) for row in rows] for name in names]


def held_statements(held: HeldRows) -> list[tuple[str, list[Any]]]:
    """The held rows as statements (SQL, one array per column), forgotten."""
    out: list[tuple[str, list[Any]]] = []
    for run_id, fields in held.run_updates.items():
        sets = ", ".join(f"{column} = %s" for column in fields)
        out.append((f"UPDATE runs SET {sets} WHERE run_id = %s", [*fields.values(), run_id]))
    if held.artifacts:
        out.append(
            (
                INSERT_ARTIFACTS,
                _columns(
                    held.artifacts,
                    "item_id",
                    "artifact_type",
                    "version",
                    "run_id",
                    "payload",
                    "meta",
                    "created_at",
                ),
            )
        )
    if held.steps:
        out.append((SET_STEPS, [list(held.steps), list(held.steps.values())]))
    if held.events:
        out.append(
            (
                INSERT_EVENTS,
                _columns(
                    held.events,
                    "at",
                    "item_id",
                    "run_id",
                    "kind",
                    "from_status",
                    "to_status",
                    "trigger",
                    "detail",
                ),
            )
        )
    if held.settles:
        out.append((SETTLE_CHUNKS, [list(held.settles), list(held.settles.values())]))
    if held.heads or held.bodies:
        # In key order, as every batch locks rows, so two batches never deadlock here.
        ids = sorted(held.heads.keys() | held.bodies.keys())
        bodies = [held.bodies.get(i) for i in ids]
        out.append(
            (
                SET_SEARCH,
                [
                    ids,
                    [held.heads.get(i) for i in ids],
                    [None if b is None else b.vector for b in bodies],
                    [b is not None and b.always for b in bodies],
                ],
            )
        )
    held.discard()
    return out


class PostgresExecutor:
    """One psycopg connection, inside the store's transaction."""

    __slots__ = ("_cursor", "conn")

    queries = QUERIES
    mark = "%s"
    search: Search = _SEARCH
    hold_attempts = False
    hold_settles = True
    hold_run_updates = True

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        # One cursor for the unit's statements (a new one each costs a fifth of a small
        # statement's client time): a statement's rows are read before the next is sent.
        self._cursor = conn.cursor()

    def execute(self, sql: str, params: Params = ()) -> psycopg.Cursor[Any]:
        """Placeholders are always read, so a literal ``%`` is ``%%``."""
        return self._cursor.execute(sql, params)

    def array(self, values: Sequence[Any]) -> list[Any]:
        return list(values)

    def write_held(self, held: HeldRows) -> int:
        statements = held_statements(held)
        for sql, columns in statements:
            self._cursor.execute(sql, columns)
        return len(statements)


class PostgresUnitOfWork(StoreUnit):
    """The shared unit of work over one pooled connection; step slots read a batch at once."""

    def __init__(self, conn: psycopg.Connection[Any], *, writing: bool) -> None:
        super().__init__(PostgresExecutor(conn), writing=writing)
        self.conn = conn

    def read_slots(self, slots: Sequence[StepSlot]) -> None:
        """Read ``slots`` in one statement, locking the rows of the leases that hold, for
        the :meth:`step_slot` calls to come; they must come before anything else runs
        (:meth:`forget_slots`), as a write of another unit could change what was read."""
        keys = [slot._replace(gate=()) for slot in slots]
        columns = [list(c) for c in zip(*keys, strict=True)][:5]
        held: list[StepSlot] = []
        for row in self._now(self.q["step_slots_locked"], columns).fetchall():
            slot = keys[row[0] - 1]
            if row[4] is None:  # the lease does not hold
                self.slots[slot] = (None, int(row[1]), bool(row[2]), row[3])
                continue
            item = item_row(row[5:])
            self.slots[slot] = (item.orphan_count, int(row[1]), bool(row[2]), row[3])
            self.rows[item.id] = item
            held.append(slots[row[0] - 1])
        gated = [slot for slot in held if slot.gate]
        if not gated:
            return
        types = sorted({t for slot in gated for t in slot.gate})
        pairs = {(slot.item_id, slot.run_id): frozenset(types) for slot in gated}
        found: dict[tuple[str, str], list[Any]] = {pair: [] for pair in pairs}
        rows = self._now(
            self.q["gate_inputs_of_runs"],
            ([p[0] for p in pairs], [p[1] for p in pairs], types),
        ).fetchall()
        for item_id, kind, of_run, payload, created_by, version in rows:
            entry = (kind, of_run, payload, created_by, version)
            if created_by == "system":
                if (item_id, of_run) in found:
                    found[item_id, of_run].append(entry)
                continue
            # A person's score counts for every run of the item.
            for (of_item, _), got in found.items():
                if of_item == item_id:
                    got.append(entry)
        self.gates.update({pair: (pairs[pair], got) for pair, got in found.items()})


if TYPE_CHECKING:
    _EXECUTOR: type[Executor] = PostgresExecutor
