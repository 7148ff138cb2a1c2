"""The plumbing every SQLite query runs through: one connection, counted, with writes held back.

:class:`SqliteUnitBase` owns what the named operations share: the
connection of the store's transaction, the count of statements run, and the
:class:`~readdod.store.sqlite.buffer.WriteBuffer` of rows held back on the hot
path. The operations themselves live one concept a module beside it and are
composed in :mod:`readdod.store.sqlite.unit`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from readdod.store.rows import ITEM_COLUMNS, RUN_COLUMNS, ItemRow, RunRow
from readdod.store.sqlite.buffer import WriteBuffer

#: Ids per statement of the ``IN (...)`` lists: well under SQLite's bound-parameter limit.
IDS_PER_STATEMENT = 500
#: Item columns a caller may set (never the key nor the creation time).
ITEM_SETTABLE = frozenset(ITEM_COLUMNS) - {"id", "created_at"}


def item_row(row: Sequence[Any]) -> ItemRow:
    return ItemRow(**dict(zip(ITEM_COLUMNS, row, strict=True)))


def run_row(row: Sequence[Any]) -> RunRow:
    return RunRow(**dict(zip(RUN_COLUMNS, row, strict=True)))


def marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def assignments(fields: dict[str, Any], allowed: frozenset[str]) -> tuple[str, list[Any]]:
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not settable: {sorted(bad)}")
    return ", ".join(f"{k} = ?" for k in fields), list(fields.values())


class SqliteUnitBase:
    """One connection inside the store's transaction, and the rows held back on it.

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
