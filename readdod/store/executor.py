"""What the store's logic asks of a database dialect: a handful of methods.

:class:`readdod.store.unit.StoreUnit` writes every named operation once,
against named SQL (each dialect's ``sql/*.sql``, the same names in both) and
an :class:`Executor`: run a statement, pass a list as one parameter, write
the rows held back. What truly differs between dialects stays behind it:
the statements themselves, how held rows are sent, what is held at all
(a statement costs a round trip on PostgreSQL, nothing on SQLite), and
full-text search (:class:`Search`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from readdod.store.held import HeldRows

Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    """A statement's outcome: its rows, or how many it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Search(Protocol):
    """How a dialect finds items by their words."""

    #: Whether the unit keeps the items' search vectors (PostgreSQL, made in Python)
    #: or the database does by itself (SQLite's FTS5 triggers).
    vectors: bool

    def query(self, text: str) -> str | None:
        """A person's words as the dialect's query (None: nothing can match);
        ValidationFailed when ``text`` has no word."""
        ...

    def head(self, title: str | None, url: str | None, intent: str | None) -> str:
        """The vector of an item's own fields (only with :attr:`vectors`)."""
        ...

    def body(self, payload: str | None) -> str:
        """The vector of the text of an extraction's payload (only with :attr:`vectors`)."""
        ...


class Executor(Protocol):
    """One connection inside the store's transaction, as the shared logic uses it."""

    #: The dialect's static statements and fragments, by name.
    queries: Mapping[str, str]
    #: The dialect's positional parameter (``?``, ``%s``), for the few statements the
    #: logic composes (the columns a caller sets, the conditions of a listing).
    mark: str
    search: Search
    #: What the dialect holds back besides artifacts, events and run steps.
    hold_attempts: bool
    hold_settles: bool
    hold_run_updates: bool

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        """Run one statement now."""
        ...

    def array(self, values: Sequence[Any]) -> Any:
        """``values`` as one parameter of a statement that takes a list."""
        ...

    def write_held(self, held: HeldRows) -> int:
        """Write the rows held back now, forget them; the statements they count as."""
        ...
