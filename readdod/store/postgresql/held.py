"""The rows a batch's units only append, held back to be written in a few statements.

Step artifacts, events and a run's current step are most of what the hot path
writes. Sent one by one, each costs a round trip to the server; held here,
they go out as one statement per table (arrays ``unnest``-ed into rows, one
statement shape whatever their number, so the server's prepared statement is
reused) when a statement that could see them is about to run, or before the
commit. The SQLite store holds the same rows (:mod:`readdod.store.sqlite.buffer`).

The arrays go in binary (``%b``): psycopg escapes a text array's elements
one by one in Python, some 70 µs for an artifact's JSON, where the binary
form copies the bytes.
"""

from __future__ import annotations

from typing import Any

#: An artifact row as held: item, type, version, run, payload, meta, created_at.
HeldArtifact = tuple[str, str, int, str, str, str, int]
#: An event row as held: at, item, run, kind, from, to, trigger, detail.
HeldEvent = tuple[int, str | None, str | None, str, str | None, str | None, str, str]

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


def _columns(rows: list[Any], width: int) -> list[list[Any]]:
    """``rows`` turned into one list per column (what ``unnest`` takes)."""
    return [[row[k] for row in rows] for k in range(width)]


class HeldRows:
    """The rows held back, in the order they were added (a table at a time)."""

    __slots__ = (
        "artifact_items",
        "artifacts",
        "bodies",
        "events",
        "heads",
        "run_updates",
        "settles",
        "steps",
    )

    def __init__(self) -> None:
        self.artifacts: list[HeldArtifact] = []
        #: The artifacts held, by item, so a read of one item's adds them to what the
        #: database answers instead of flushing.
        self.artifact_items: dict[str, list[HeldArtifact]] = {}
        self.events: list[HeldEvent] = []
        self.steps: dict[str, str | None] = {}
        self.heads: dict[str, str] = {}
        self.bodies: dict[str, tuple[str, bool]] = {}
        #: Runs whose chunks in flight go back to pending, and when.
        self.settles: dict[str, int] = {}
        #: Updates of runs (column: value), held so the attempt's end that follows goes
        #: out with its run's in one statement.
        self.run_updates: dict[str, dict[str, Any]] = {}

    def __bool__(self) -> bool:
        return bool(
            self.artifacts
            or self.events
            or self.steps
            or self.heads
            or self.bodies
            or self.settles
            or self.run_updates
        )

    def add_artifact(self, row: HeldArtifact) -> None:
        self.artifacts.append(row)
        self.artifact_items.setdefault(row[0], []).append(row)

    def of_item(self, item_id: str) -> list[HeldArtifact]:
        """The artifacts held for ``item_id`` (all a system's, none set aside)."""
        return self.artifact_items.get(item_id, [])

    def set_head(self, item_id: str, vector: str) -> None:
        self.heads[item_id] = vector

    def set_body(self, item_id: str, vector: str, *, always: bool) -> None:
        """The item's searchable body; ``always`` False: only while no person's extraction
        is shown, so it never replaces one held with ``always`` in this batch."""
        held = self.bodies.get(item_id)
        if always or held is None or not held[1]:
            self.bodies[item_id] = (vector, always)

    def take(self) -> list[tuple[str, list[Any]]]:
        """The held rows as statements (SQL, one array per column), forgotten here."""
        out: list[tuple[str, list[Any]]] = []
        for run_id, fields in self.run_updates.items():
            sets = ", ".join(f"{column} = %s" for column in fields)
            out.append((f"UPDATE runs SET {sets} WHERE run_id = %s", [*fields.values(), run_id]))
        if self.artifacts:
            out.append((INSERT_ARTIFACTS, _columns(self.artifacts, 7)))
        if self.steps:
            out.append((SET_STEPS, [list(self.steps), list(self.steps.values())]))
        if self.events:
            out.append((INSERT_EVENTS, _columns(self.events, 8)))
        if self.settles:
            out.append((SETTLE_CHUNKS, [list(self.settles), list(self.settles.values())]))
        if self.heads or self.bodies:
            # In key order, as every batch locks rows, so two batches never deadlock here.
            ids = sorted(self.heads.keys() | self.bodies.keys())
            bodies = [self.bodies.get(i) for i in ids]
            out.append(
                (
                    SET_SEARCH,
                    [
                        ids,
                        [self.heads.get(i) for i in ids],
                        [None if b is None else b[0] for b in bodies],
                        [b is not None and b[1] for b in bodies],
                    ],
                )
            )
        self.discard()
        return out

    def discard(self) -> None:
        """Forget the held rows (their unit failed and is rolled back, or they were sent)."""
        self.artifacts = []
        self.artifact_items = {}
        self.heads = {}
        self.bodies = {}
        self.settles = {}
        self.run_updates = {}
        self.events = []
        self.steps = {}
