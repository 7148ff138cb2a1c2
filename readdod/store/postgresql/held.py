"""The rows a batch's units only append, held back to be written in a few statements.

Step artifacts, events and a run's current step are most of what the hot path
writes. Sent one by one, each costs a round trip to the server; held here,
they go out as one statement per table (arrays ``unnest``-ed into rows, one
statement shape whatever their number, so the server's prepared statement is
reused) when a statement that could see them is about to run, or before the
commit. The SQLite store holds the same rows (:mod:`readdod.store.sqlite.buffer`).
"""

from __future__ import annotations

from typing import Any

#: An artifact row as held: item, type, version, run, payload, meta, created_at.
HeldArtifact = tuple[str, str, int, str, str, str, int]
#: An event row as held: at, item, run, kind, from, to, trigger, detail.
HeldEvent = tuple[int, str | None, str | None, str, str | None, str | None, str, str]

INSERT_ARTIFACTS = (
    "INSERT INTO artifacts (item_id, artifact_type, version, run_id, payload, meta,"
    " created_at, created_by) SELECT *, 'system' FROM unnest(%s::text[], %s::text[],"
    " %s::integer[], %s::text[], %s::text[], %s::text[], %s::bigint[])"
)
INSERT_EVENTS = (
    "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)"
    " SELECT a, b, c, d, f, g, h, i FROM unnest(%s::bigint[], %s::text[], %s::text[],"
    " %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
    " WITH ORDINALITY AS e(a, b, c, d, f, g, h, i, n) ORDER BY n"
)
SET_STEPS = (
    "UPDATE runs SET current_step = v.step FROM unnest(%s::text[], %s::text[]) AS v(id, step)"
    " WHERE runs.run_id = v.id"
)


def _columns(rows: list[Any], width: int) -> list[list[Any]]:
    """``rows`` turned into one list per column (what ``unnest`` takes)."""
    return [[row[k] for row in rows] for k in range(width)]


class HeldRows:
    """The rows held back, in the order they were added (a table at a time)."""

    __slots__ = ("artifact_items", "artifacts", "events", "steps")

    def __init__(self) -> None:
        self.artifacts: list[HeldArtifact] = []
        #: The items with artifacts held, so a read of one item's flushes only for it.
        self.artifact_items: set[str] = set()
        self.events: list[HeldEvent] = []
        self.steps: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.artifacts or self.events or self.steps)

    def add_artifact(self, row: HeldArtifact) -> None:
        self.artifacts.append(row)
        self.artifact_items.add(row[0])

    def take(self) -> list[tuple[str, list[list[Any]]]]:
        """The held rows as statements (SQL, one array per column), forgotten here."""
        out: list[tuple[str, list[list[Any]]]] = []
        if self.artifacts:
            out.append((INSERT_ARTIFACTS, _columns(self.artifacts, 7)))
        if self.steps:
            out.append((SET_STEPS, [list(self.steps), list(self.steps.values())]))
        if self.events:
            out.append((INSERT_EVENTS, _columns(self.events, 8)))
        self.discard()
        return out

    def discard(self) -> None:
        """Forget the held rows (their unit failed and is rolled back, or they were sent)."""
        self.artifacts = []
        self.artifact_items = set()
        self.events = []
        self.steps = {}
