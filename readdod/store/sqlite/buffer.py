"""The rows a batch's units only append, held back to be written in a few statements.

Step artifacts, events, a run's current step and new attempts are the bulk of
what the hot path writes. Written one by one on the event loop they would
cost a statement each; held here, what is still waiting when the batch's
units are done goes to the commit thread as one multi-row ``INSERT`` per
table (see :mod:`readdod.store.sqlite.store`).

Held rows are readdod's own values: ids, names from fixed sets, and JSON
that msgspec wrote.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec

from readdod.store.rows import ATTEMPT_COLUMNS, ArtifactRow
from readdod.store.sqlite.queries import QUERIES

#: An artifact row as held: the columns of :data:`ARTIFACT_FIELDS`, in order.
HeldArtifact = tuple[str, str, int, str, str, str, int, str]

ARTIFACT_FIELDS = (
    "item_id",
    "artifact_type",
    "version",
    "run_id",
    "payload",
    "meta",
    "created_at",
    "created_by",
)
EVENT_FIELDS = ("at", "item_id", "run_id", "kind", "from_status", "to_status", "trigger", "detail")

#: Most rows per multi-row INSERT of held-back rows: 9 values each stays well under
#: SQLite's 32,766 bound parameters.
HELD_ROWS_PER_STATEMENT = 1024

_JSON = msgspec.json.Encoder()


def _insert(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


_ARTIFACT_INSERT = _insert("artifacts", ARTIFACT_FIELDS)
_EVENT_INSERT = _insert("events", EVENT_FIELDS)
_ATTEMPT_INSERT = _insert("attempts", ATTEMPT_COLUMNS)
_SET_RUN_STEPS = QUERIES["set_run_steps"]


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


class WriteBuffer:
    """The rows held back, in the order they were added (a table at a time).

    The unit that owns the buffer reads :attr:`artifact_items`, :attr:`steps`
    and :attr:`attempt_runs` to decide whether a statement must see the held
    rows first.
    """

    __slots__ = ("artifact_items", "artifacts", "attempt_runs", "attempts", "events", "steps")

    def __init__(self) -> None:
        self.artifacts: list[HeldArtifact] = []
        #: The held artifact rows of each item, so that reading one item's is not a scan.
        self.artifact_items: dict[str, list[HeldArtifact]] = {}
        self.events: list[tuple[Any, ...]] = []
        self.steps: dict[str, str | None] = {}
        #: New attempts (a capture adds one), and the runs they belong to.
        self.attempts: list[tuple[Any, ...]] = []
        self.attempt_runs: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.artifacts or self.events or self.steps or self.attempts)

    def add_artifact(self, row: HeldArtifact) -> None:
        self.artifacts.append(row)
        self.artifact_items.setdefault(row[0], []).append(row)

    def held_artifacts(self, item_id: str) -> list[ArtifactRow]:
        """The artifacts of ``item_id`` held back, as rows."""
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
            for row in self.artifact_items.get(item_id, ())
        ]

    def add_attempt(self, run_id: str, row: tuple[Any, ...]) -> None:
        self.attempts.append(row)
        self.attempt_runs.add(run_id)

    def _take(
        self,
    ) -> tuple[list[Any], list[Any], list[tuple[str, str | None]], list[tuple[Any, ...]], int]:
        """The rows held back (artifacts, events, run steps, attempts), forgotten here,
        and how many statements they count as."""
        artifacts, self.artifacts = self.artifacts, []
        self.artifact_items.clear()
        events, self.events = self.events, []
        steps, self.steps = self.steps, {}
        attempts, self.attempts = self.attempts, []
        self.attempt_runs.clear()
        count = len(artifacts) + len(events) + (1 if steps else 0) + len(attempts)
        return artifacts, events, list(steps.items()), attempts, count

    def write(self, conn: sqlite3.Connection) -> int:
        """Write the rows held back now; the statements they count as.

        On the loop, executemany: a multi-row INSERT costs a prepare per shape
        of batch, which only pays off beside the loop (:meth:`take_statements`).
        """
        artifacts, events, steps, attempts, count = self._take()
        if artifacts:
            conn.executemany(_ARTIFACT_INSERT, artifacts)
        if steps:
            conn.execute(_SET_RUN_STEPS, (_JSON.encode(steps).decode(),))
        if events:
            conn.executemany(_EVENT_INSERT, events)
        if attempts:
            conn.executemany(_ATTEMPT_INSERT, attempts)
        return count

    def take_statements(self) -> tuple[list[tuple[str, list[Any]]], int]:
        """The rows held back as statements for the commit thread, forgotten here;
        and how many statements they count as.

        A multi-row INSERT per table (a run-step UPDATE from a small JSON
        array): the thread that runs them wins the GIL back once per table,
        not once per row as with executemany, and SQLite reads the kilobyte
        payloads as bound values rather than parsing them back out of JSON.
        """
        artifacts, events, steps, attempts, count = self._take()
        held = _held_statements("artifacts", ARTIFACT_FIELDS, artifacts)
        if steps:
            held.append((_SET_RUN_STEPS, [_JSON.encode(steps).decode()]))
        held += _held_statements("events", EVENT_FIELDS, events)
        held += _held_statements("attempts", ATTEMPT_COLUMNS, attempts)
        return held, count

    def discard(self) -> None:
        """Forget the rows held back (their unit failed and is rolled back)."""
        self.artifacts.clear()
        self.artifact_items.clear()
        self.events.clear()
        self.steps.clear()
        self.attempts.clear()
        self.attempt_runs.clear()
