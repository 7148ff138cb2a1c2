"""The plumbing every PostgreSQL query runs through: one connection inside the store's
transaction, and the statements it ran, counted.

Each statement waits for the server's answer before the next goes out. Not
pipeline mode, which would save round trips: a daemon frozen (a paused VM,
SIGSTOP) between two pipelined statements, no Sync sent, holds its row locks
with no timeout to end them, and the other daemons could never take its
items; waiting for each answer keeps the session "idle in transaction",
which the server ends (``IDLE_IN_TRANSACTION_MS``).
``IN`` lists are arrays (``= ANY(%s)``), one statement shape whatever their
length, so the server's prepared statements are reused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from readdod.store.api.artifacts import StepSlot
from readdod.store.postgresql import search
from readdod.store.postgresql.held import HeldRows
from readdod.store.rows import ITEM_COLUMNS, RUN_COLUMNS, ItemRow, RunRow

#: Item columns a caller may set (never the key nor the creation time).
ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}
#: The columns the head of the search vector is made of.
_SEARCHED = frozenset({"title", "url", "intent_text"})

Params = Sequence[Any] | Mapping[str, Any]


def item_row(row: Sequence[Any]) -> ItemRow:
    return ItemRow(**dict(zip(ITEM_COLUMNS, row, strict=True)))


def run_row(row: Sequence[Any]) -> RunRow:
    return RunRow(**dict(zip(RUN_COLUMNS, row, strict=True)))


def assignments(fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    """``col = %s, ...`` for ``fields``, each a column of ``allowed`` (ValueError if not)."""
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return ", ".join(f"{k} = %s" for k in fields), list(fields.values())


class PostgresUnitBase:
    """One connection inside the store's transaction, the rows held back on it, and the
    count of statements sent.

    Appends on the hot path (step artifacts, events, a run's current step)
    are held back (:class:`~readdod.store.postgresql.held.HeldRows`) and sent
    as one statement per table: before any statement that could see them, or
    by the store before it commits (:meth:`flush`). So whatever a unit reads
    sees all that was written before it, in order. The few statements on the
    hot path that only touch the item row, or one item's artifacts, skip the
    flush when nothing of theirs is held (:meth:`execute_now`).
    """

    def __init__(self, conn: psycopg.Connection[Any], *, writing: bool) -> None:
        self.conn = conn
        #: Inside a writing unit: a lease check locks the item's row until the commit.
        self.writing = writing
        #: Statements sent through this unit (a flush of held rows: one per table).
        self.statements = 0
        self.held = HeldRows()
        #: Step slots read ahead for the batch's units (:meth:`read_slots`), by their key.
        self.slots: dict[StepSlot, tuple[int | None, int, bool, int | None]] = {}
        #: The rows of the items those slots hold, by id, until the unit writes one.
        self.rows: dict[str, ItemRow] = {}
        #: What the READY gates of those slots' runs read, by (item, run): the types
        #: read and the rows (type, run, payload, created_by, version).
        self.gates: dict[tuple[str, str], tuple[frozenset[str], list[Any]]] = {}
        # One cursor for the unit's statements (a new one each costs a fifth of a small
        # statement's client time): a statement's rows are read before the next is sent.
        self._cursor = conn.cursor()

    def execute(self, sql: str, params: Params = ()) -> psycopg.Cursor[Any]:
        """Run one statement; placeholders are always read, so a literal ``%`` is ``%%``."""
        if self.held:
            self.flush()
        self.statements += 1
        return self._cursor.execute(sql, params)

    def execute_now(self, sql: str, params: Params = ()) -> psycopg.Cursor[Any]:
        """A statement the rows held back cannot bear on: sent without a flush."""
        self.statements += 1
        return self._cursor.execute(sql, params)

    def flush(self) -> None:
        """Send the rows held back, in the order they were added (a table at a time)."""
        for sql, columns in self.held.take():
            self.statements += 1
            self._cursor.execute(sql, columns)

    def changed(self, cur: psycopg.Cursor[Any]) -> int:
        """The rows ``cur``'s statement changed."""
        return cur.rowcount

    def one(self, sql: str, params: Params = ()) -> Any:
        """The first row of ``sql``, or None."""
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        return self.execute(sql, params).fetchall()

    def update_item(self, where: str, fields: dict[str, Any], args: Sequence[Any]) -> bool:
        """``UPDATE items SET fields WHERE where``; True if it matched. The search head
        follows the columns it is made of. ``where`` starts ``id = %s``: the row read
        ahead for that item (:attr:`rows`) is read again after this."""
        self.rows.pop(args[0], None)
        sets, values = assignments(fields, ITEM_SETTABLE)
        if _SEARCHED.isdisjoint(fields):
            # Only the item row: nothing held back bears on it.
            cur = self.execute_now(f"UPDATE items SET {sets} WHERE {where}", [*values, *args])
            return self.changed(cur) == 1
        row = self.execute_now(
            f"UPDATE items SET {sets} WHERE {where} RETURNING id, title, url, intent_text",
            [*values, *args],
        ).fetchone()
        if row is None:
            return False
        self.held.set_head(row[0], search.head_vector(row[1], row[2], row[3]))
        return True
