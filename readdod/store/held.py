"""The rows a batch's units only append, held back to be written in a few statements.

Step artifacts, events and a run's current step are most of what the hot path
writes. Written one by one, each costs a statement (on PostgreSQL a round
trip); held here, they go out a table at a time: before a statement that
could see them, or by the store before it commits. Each dialect's executor
turns them into its own statements (``sqlite/executor.py``,
``postgresql/executor.py``); what a dialect holds beyond these is its
executor's choice (:class:`readdod.store.executor.Executor`).

Held rows are readdod's own values: ids, names from fixed sets, and JSON
that msgspec wrote.
"""

from __future__ import annotations

from typing import Any

import msgspec

from readdod.store.rows import ArtifactRow, AttemptRow


class HeldArtifact(msgspec.Struct, gc=False):
    """A system artifact held back (a system's is never set aside)."""

    item_id: str
    artifact_type: str
    version: int
    run_id: str
    payload: str
    meta: str
    created_at: int

    def row(self) -> ArtifactRow:
        return ArtifactRow(
            item_id=self.item_id,
            artifact_type=self.artifact_type,
            version=self.version,
            created_by="system",
            run_id=self.run_id,
            payload=self.payload,
            meta=self.meta,
            created_at=self.created_at,
        )


class HeldEvent(msgspec.Struct, gc=False):
    at: int
    item_id: str | None
    run_id: str | None
    kind: str
    from_status: str | None
    to_status: str | None
    trigger: str
    detail: str


class HeldBody(msgspec.Struct, gc=False):
    """An item's searchable body; ``always`` False: only while no person's extraction
    is shown."""

    vector: str
    always: bool


#: The columns of the held rows, in the order the executors write them.
HELD_ARTIFACT_FIELDS = HeldArtifact.__struct_fields__
HELD_EVENT_FIELDS = HeldEvent.__struct_fields__


class HeldRows:
    """The rows held back, in the order they were added (a table at a time)."""

    __slots__ = (
        "artifact_items",
        "artifacts",
        "attempt_runs",
        "attempts",
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
        #: Each run's current step.
        self.steps: dict[str, str | None] = {}
        #: New attempts, and the runs they belong to.
        self.attempts: list[AttemptRow] = []
        self.attempt_runs: set[str] = set()
        #: Runs whose chunks in flight go back to pending, and when.
        self.settles: dict[str, int] = {}
        #: Updates of runs (column: value), so the attempt's end that follows may go out
        #: with its run's in one statement.
        self.run_updates: dict[str, dict[str, Any]] = {}
        #: Search vectors of items (where the dialect computes them): heads and bodies.
        self.heads: dict[str, str] = {}
        self.bodies: dict[str, HeldBody] = {}

    def __bool__(self) -> bool:
        return bool(
            self.artifacts
            or self.events
            or self.steps
            or self.attempts
            or self.settles
            or self.run_updates
            or self.heads
            or self.bodies
        )

    def add_artifact(self, row: HeldArtifact) -> None:
        self.artifacts.append(row)
        self.artifact_items.setdefault(row.item_id, []).append(row)

    def of_item(self, item_id: str) -> list[HeldArtifact]:
        """The artifacts held for ``item_id``."""
        return self.artifact_items.get(item_id, [])

    def add_attempt(self, row: AttemptRow) -> None:
        self.attempts.append(row)
        self.attempt_runs.add(row.run_id)

    def set_body(self, item_id: str, vector: str, *, always: bool) -> None:
        """The item's searchable body; ``always`` False never replaces one held with
        ``always`` in this batch."""
        held = self.bodies.get(item_id)
        if always or held is None or not held.always:
            self.bodies[item_id] = HeldBody(vector, always)

    def discard(self) -> None:
        """Forget the held rows (their unit failed and is rolled back, or they were sent)."""
        self.artifacts = []
        self.artifact_items = {}
        self.events = []
        self.steps = {}
        self.attempts = []
        self.attempt_runs = set()
        self.settles = {}
        self.run_updates = {}
        self.heads = {}
        self.bodies = {}
