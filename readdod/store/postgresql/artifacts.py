"""PostgreSQL artifacts and chunks: versions, a person's winning, and a long text's pieces.

An extraction added here also becomes the item's searchable body when it is
the one the item shows (a person's, or the system's when no person's is
shown), as the SQLite store's trigger does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from readdod.store.api.artifacts import StepSlot
from readdod.store.postgresql import search
from readdod.store.postgresql.base import PostgresUnitBase, assignments, item_row
from readdod.store.postgresql.held import HeldArtifact
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import ARTIFACT_COLUMNS, CHUNK_COLUMNS, ArtifactRow, ChunkRow

_CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}


def _artifact(row: Sequence[Any]) -> ArtifactRow:
    return ArtifactRow(**dict(zip(ARTIFACT_COLUMNS, row, strict=True)))


def _held_artifact(held: HeldArtifact) -> ArtifactRow:
    item_id, artifact_type, version, run_id, payload, meta, created_at = held
    return _artifact(
        (item_id, artifact_type, version, "system", run_id, payload, meta, created_at, 0)
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


class PostgresArtifactQueries(PostgresUnitBase):
    """The artifacts and chunks of :class:`~readdod.store.api.ArtifactQueries`, on PostgreSQL."""

    def _index_extraction(self, item_id: str, payload: str | None, *, by_user: bool) -> None:
        """The extraction ``payload`` becomes the item's searchable body (held back): a
        person's (or the one shown after theirs was set aside) always, the system's
        unless a person's is shown."""
        body = search.body_vector(None if payload is None else extracted_text(payload))
        self.held.set_body(item_id, body, always=by_user)

    def insert_artifact(
        self,
        item_id: str,
        artifact_type: str,
        created_by: str,
        run_id: str | None,
        payload: str,
        meta: str,
        now: int,
    ) -> int:
        """Append the next version; returns it. Versions only grow."""
        row = self.one(
            Q["insert_next_artifact"],
            (
                item_id,
                artifact_type,
                created_by,
                run_id,
                payload,
                meta,
                now,
                item_id,
                artifact_type,
            ),
        )
        if artifact_type == "extraction":
            self._index_extraction(item_id, payload, by_user=created_by == "user")
        return int(row[0])

    # The reads below see this item's artifacts held back as if they were written: what
    # the database answers, plus the held rows that match (a system's, never set aside).

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        rows = self.execute_now(Q["artifacts_of_run"], (item_id, run_id)).fetchall()
        found = {a.artifact_type: a for a in map(_artifact, rows)}
        for held in self.held.of_item(item_id):
            if held[3] == run_id:
                found[held[1]] = _held_artifact(held)
        return found

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        rows = self.execute_now(Q["run_payloads"], (item_id, run_id, list(types))).fetchall()
        found = {r[0]: (r[1], r[2]) for r in rows}
        for held in self.held.of_item(item_id):
            if held[3] == run_id and held[1] in types:
                found[held[1]] = (held[3], held[4])
        return found

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        known = self.gates.pop((item_id, run_id), None)
        if known is not None and known[0].issuperset(types):
            rows = [r for r in known[1] if r[0] in types]
        else:
            rows = self.execute_now(Q["gate_inputs"], (item_id, list(types), run_id)).fetchall()
        rows += [
            (held[1], held[3], held[4], "system", held[2])
            for held in self.held.of_item(item_id)
            if held[3] == run_id and held[1] in types
        ]
        found: dict[str, tuple[str | None, str]] = {}
        mine: tuple[int, str] | None = None
        for kind, of_run, payload, created_by, version in rows:
            if created_by == "system":
                found[kind] = (of_run, payload)
            elif mine is None or version > mine[0]:
                mine = (version, payload)
        return found, mine[1] if mine else None

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str, *, token: int | None = None
    ) -> tuple[int | None, int, bool, int | None]:
        known = self.slots.pop(StepSlot(item_id, artifact_type, owner, run_id, token), None)
        if known is not None:
            orphaned, newest, edited, existing = known
        else:
            row: Any = self.execute_now(
                Q["step_slot_locked" if self.writing else "step_slot"],
                (item_id, owner, run_id, token, run_id, item_id, artifact_type),
            ).fetchone()
            orphaned, newest, edited, existing = row[0], int(row[1]), bool(row[2]), row[3]
        for held in self.held.of_item(item_id):
            if held[1] == artifact_type:
                newest = max(newest, held[2])
                if held[3] == run_id:
                    existing = held[2] if existing is None else max(existing, held[2])
        return orphaned, newest, edited, existing

    def read_slots(self, slots: Sequence[StepSlot]) -> None:
        """Read ``slots`` in one statement, locking the rows of the leases that hold, for
        the :meth:`step_slot` calls to come; they must come before anything else runs
        (:meth:`forget_slots`), as a write of another unit could change what was read."""
        keys = [slot._replace(gate=()) for slot in slots]
        columns = [list(c) for c in zip(*keys, strict=True)][:5]
        held: list[StepSlot] = []
        for row in self.execute_now(Q["step_slots_locked"], columns).fetchall():
            slot = keys[row[0] - 1]
            if row[4] is None:  # the lease does not hold
                self.slots[slot] = (None, int(row[1]), bool(row[2]), row[3])
                continue
            item = item_row(row[5:])
            self.slots[slot] = (item.orphan_count, int(row[1]), bool(row[2]), row[3])
            self.rows[item.id] = item
            held.append(slots[row[0] - 1])
        gated = [slot for slot in held if slot.gate]
        if gated:
            types = sorted({t for slot in gated for t in slot.gate})
            pairs = {(slot.item_id, slot.run_id): frozenset(types) for slot in gated}
            found: dict[tuple[str, str], list[Any]] = {pair: [] for pair in pairs}
            rows = self.execute_now(
                Q["gate_inputs_of_runs"],
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

    def forget_slots(self) -> None:
        self.slots.clear()
        self.rows.clear()
        self.gates.clear()

    def add_artifact(
        self,
        item_id: str,
        artifact_type: str,
        version: int,
        run_id: str,
        payload: str,
        meta: str,
        now: int,
    ) -> None:
        """Add a system artifact at the version :meth:`step_slot` found for it (held back)."""
        self.held.add_artifact((item_id, artifact_type, version, run_id, payload, meta, now))
        if artifact_type == "extraction":
            self._index_extraction(item_id, payload, by_user=False)

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        row = self.one(Q["latest_artifact"], (item_id, artifact_type))
        return _artifact(row) if row else None

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self.one(Q["artifact_version"], (item_id, artifact_type, version))
        return _artifact(row) if row else None

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        row = self.one(Q["user_version"], (item_id, artifact_type))
        return _artifact(row) if row else None

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        """Set a person's versions of a type aside; returns how many were shown before."""
        cur = self.execute(Q["discard_user_versions"], (item_id, artifact_type))
        count = self.changed(cur)
        if artifact_type == "extraction" and count:
            shown = self.latest_artifact(item_id, "extraction")
            payload = None if shown is None else shown.payload
            self._index_extraction(item_id, payload, by_user=True)
        return count

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        rows = self.all(Q["shown_artifacts"], {"item": item_id, "run": run_id})
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        return [_artifact(r) for r in self.all(Q["all_artifacts"], (item_id,))]

    # --- chunks ---------------------------------------------------------------
    # Nothing held back bears on a chunk but a run's settling (held back too): these
    # flush only when the run they touch has one held.

    def _settled(self, run_id: str) -> None:
        if run_id in self.held.settles:
            self.flush()

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        self._settled(run_id)
        if step is None:
            rows = self.execute_now(Q["chunks_of_run"], (run_id,)).fetchall()
        else:
            rows = self.execute_now(Q["chunks_of_step"], (run_id, step)).fetchall()
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in rows]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        self._settled(run_id)
        self.execute_now(Q["delete_chunks"], (run_id, step))
        if total > 0:
            self.execute_now(Q["insert_pending_chunks"], (run_id, step, model, now, total))

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        self._settled(run_id)
        self.execute_now(Q["reopen_chunks"], (model, now, run_id, step))

    def retry_chunks(self, run_id: str, now: int) -> None:
        """The run's failed chunks go back to pending: it was queued again."""
        self._settled(run_id)
        self.execute_now(Q["retry_chunks"], (now, run_id))

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight go back to pending (held back: a run stopping on the
        hot path seldom has any)."""
        self.held.settles[run_id] = now

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        self._settled(run_id)
        sets, values = assignments(fields, _CHUNK_SETTABLE)
        self.execute_now(
            f"UPDATE chunks SET {sets} WHERE run_id = %s AND step = %s AND idx = %s",
            [*values, run_id, step, idx],
        )
