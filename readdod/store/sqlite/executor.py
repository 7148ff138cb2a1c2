"""SQLite under the shared unit of work: one connection, lists as JSON, FTS5 search.

A statement costs no round trip here, so the executor holds back only what
the hot path appends (artifacts, events, run steps, new attempts): written
on the loop with executemany when a statement must see them
(:meth:`SqliteExecutor.write_held`), or handed to the commit thread as a few
multi-row INSERTs (:func:`held_statements`), whose thread wins the GIL back
once per table, not once per row, while SQLite reads the kilobyte payloads
as bound values. Run updates and chunk settling run at once. A list
parameter is a JSON array the statement reads with ``json_each``: one
statement shape whatever its length, and no bound-parameter limit.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from readdod.errors import ValidationFailed
from readdod.store.executor import Params

if TYPE_CHECKING:
    from readdod.store.executor import Executor, Search
from readdod.store.held import HELD_ARTIFACT_FIELDS, HELD_EVENT_FIELDS, HeldRows
from readdod.store.rows import ATTEMPT_COLUMNS
from readdod.store.sqlite.queries import QUERIES
from readdod.store.unit import StoreUnit

#: Most words of a search: every one is an FTS5 prefix term.
SEARCH_WORDS_MAX = 32
#: Most rows per multi-row INSERT of held-back rows: 9 values each stays well under
#: SQLite's 32,766 bound parameters.
HELD_ROWS_PER_STATEMENT = 1024

_JSON = msgspec.json.Encoder()
#: Held artifacts are a system's.
_ARTIFACT_COLUMNS = (*HELD_ARTIFACT_FIELDS, "created_by")


def search_query(text: str) -> str:
    """A person's words as an FTS5 query: every word must match, as a prefix.

    Quoted, so no word is read as FTS5 syntax (AND, NEAR, a column filter).
    """
    words = re.findall(r"\w+", text)
    if not words:
        raise ValidationFailed("query needs at least one word to search for")
    return " ".join(f'"{w}"*' for w in words[:SEARCH_WORDS_MAX])


class FtsSearch:
    """FTS5: the database's triggers keep the index; the unit only asks."""

    vectors = False

    def query(self, text: str) -> str:
        return search_query(text)

    def head(self, title: str | None, url: str | None, intent: str | None) -> str:
        raise NotImplementedError("FTS5 triggers index an item's fields")

    def body(self, payload: str | None) -> str:
        raise NotImplementedError("FTS5 triggers index an extraction")


_SEARCH = FtsSearch()


def _insert(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


_ARTIFACT_INSERT = _insert("artifacts", _ARTIFACT_COLUMNS)
_EVENT_INSERT = _insert("events", HELD_EVENT_FIELDS)
_ATTEMPT_INSERT = _insert("attempts", ATTEMPT_COLUMNS)
_SET_RUN_STEPS = QUERIES["set_run_steps"]


def _rows(
    held: HeldRows,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The held artifacts, events and attempts as rows of values, in column order."""
    artifacts = [(*msgspec.structs.astuple(a), "system") for a in held.artifacts]
    events = [msgspec.structs.astuple(e) for e in held.events]
    attempts = [msgspec.structs.astuple(a) for a in held.attempts]
    return artifacts, events, attempts


def _count(held: HeldRows) -> int:
    """The statements the held rows count as (a row each, the run steps one)."""
    return len(held.artifacts) + len(held.events) + (1 if held.steps else 0) + len(held.attempts)


@functools.lru_cache(maxsize=32)
def _insert_values(table: str, columns: tuple[str, ...], rows: int) -> str:
    """One INSERT of up to ``rows`` rows, the values bound. Each row starts with a
    mark: 1 for a row to write, NULL for padding (see :func:`_multi_row`)."""
    row = f"({', '.join('?' * (len(columns) + 1))})"
    picks = ", ".join(f"column{i + 2}" for i in range(len(columns)))
    return (
        f"INSERT INTO {table} ({', '.join(columns)})"
        f" SELECT {picks} FROM (VALUES {', '.join([row] * rows)}) WHERE column1 IS NOT NULL"
    )


def _multi_row(
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


def held_statements(held: HeldRows) -> tuple[list[tuple[str, list[Any]]], int]:
    """The rows held back as statements for the commit thread, forgotten; and how many
    statements they count as. A multi-row INSERT per table (the run steps: an UPDATE
    from one small JSON array)."""
    count = _count(held)
    artifacts, events, attempts = _rows(held)
    out = _multi_row("artifacts", _ARTIFACT_COLUMNS, artifacts)
    if held.steps:
        out.append((_SET_RUN_STEPS, [_JSON.encode(list(held.steps.items())).decode()]))
    out += _multi_row("events", HELD_EVENT_FIELDS, events)
    out += _multi_row("attempts", ATTEMPT_COLUMNS, attempts)
    held.discard()
    return out, count


class SqliteExecutor:
    """One ``sqlite3`` connection, inside the store's transaction."""

    __slots__ = ("conn",)

    queries = QUERIES
    mark = "?"
    search: Search = _SEARCH
    hold_attempts = True
    hold_settles = False
    hold_run_updates = False

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def array(self, values: Sequence[Any]) -> str:
        return _JSON.encode(values).decode()

    def write_held(self, held: HeldRows) -> int:
        """On the loop, executemany: a multi-row INSERT costs a prepare per shape of
        batch, which only pays off beside the loop (:func:`held_statements`)."""
        count = _count(held)
        artifacts, events, attempts = _rows(held)
        conn = self.conn
        if artifacts:
            conn.executemany(_ARTIFACT_INSERT, artifacts)
        if held.steps:
            conn.execute(_SET_RUN_STEPS, (_JSON.encode(list(held.steps.items())).decode(),))
        if events:
            conn.executemany(_EVENT_INSERT, events)
        if attempts:
            conn.executemany(_ATTEMPT_INSERT, attempts)
        held.discard()
        return count


class SqliteUnitOfWork(StoreUnit):
    """The shared unit of work over one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(SqliteExecutor(conn))
        self.conn = conn

    def execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """A statement of its own (migrations' checks, tests), after the rows held back."""
        cur = self._run(sql, params)
        assert isinstance(cur, sqlite3.Cursor)
        return cur

    def take_held(self) -> list[tuple[str, list[Any]]]:
        """The rows held back as statements for the commit thread, forgotten here."""
        statements, count = held_statements(self.held)
        self.statements += count
        return statements


if TYPE_CHECKING:
    _EXECUTOR: type[Executor] = SqliteExecutor
