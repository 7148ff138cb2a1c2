"""The plumbing every PostgreSQL query runs through: one connection inside the store's
transaction, and the statements it ran, counted.

The connection is in pipeline mode: a statement whose answer nobody reads
(an event appended, a run's step) goes out without waiting for the server,
together with the next one; reading rows waits for them, and so does
:meth:`PostgresUnitBase.changed` (a compare-and-set's row count). A unit of
a few writes and one read costs about one round trip, not one a statement.
``IN`` lists are arrays (``= ANY(%s)``), one statement shape whatever their
length, so the server's prepared statements are reused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from readdod.store.postgresql import search
from readdod.store.postgresql.queries import QUERIES as Q
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
    """One connection inside the store's transaction, and the count of statements run."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        *,
        writing: bool,
        pipeline: psycopg.Pipeline | None = None,
    ) -> None:
        self.conn = conn
        self.pipeline = pipeline
        #: Inside a writing unit: a lease check locks the item's row until the commit.
        self.writing = writing
        #: Statement executions through this unit.
        self.statements = 0

    def execute(self, sql: str, params: Params = ()) -> psycopg.Cursor[Any]:
        """Run one statement; placeholders are always read, so a literal ``%`` is ``%%``."""
        self.statements += 1
        return self.conn.execute(sql, params)

    def changed(self, cur: psycopg.Cursor[Any]) -> int:
        """The rows ``cur``'s statement changed, once the server has answered it."""
        if self.pipeline is not None:
            self.pipeline.sync()
        return cur.rowcount

    def one(self, sql: str, params: Params = ()) -> Any:
        """The first row of ``sql``, or None."""
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Params = ()) -> list[Any]:
        return self.execute(sql, params).fetchall()

    def update_item(self, where: str, fields: dict[str, Any], args: Sequence[Any]) -> bool:
        """``UPDATE items SET fields WHERE where``; True if it matched. The search head
        follows the columns it is made of."""
        sets, values = assignments(fields, ITEM_SETTABLE)
        if _SEARCHED.isdisjoint(fields):
            cur = self.execute(f"UPDATE items SET {sets} WHERE {where}", [*values, *args])
            return self.changed(cur) == 1
        row = self.one(
            f"UPDATE items SET {sets} WHERE {where} RETURNING id, title, url, intent_text",
            [*values, *args],
        )
        if row is None:
            return False
        self.execute(Q["set_search_head"], (search.head_vector(row[1], row[2], row[3]), row[0]))
        return True
