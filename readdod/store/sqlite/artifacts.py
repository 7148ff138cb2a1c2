"""SQLite artifacts and chunks: versions (some held back until commit) and a long text's pieces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.rows import ARTIFACT_COLUMNS, CHUNK_COLUMNS, ArtifactRow, ChunkRow
from readdod.store.sqlite.base import SqliteUnitBase, assignments, marks
from readdod.store.sqlite.queries import QUERIES as Q

_CHUNK_SETTABLE = frozenset(CHUNK_COLUMNS) - {"run_id", "step", "idx"}


def _artifact(row: Sequence[Any]) -> ArtifactRow:
    return ArtifactRow(**dict(zip(ARTIFACT_COLUMNS, row, strict=True)))


class SqliteArtifactQueries(SqliteUnitBase):
    """The artifacts and chunks of :class:`~readdod.store.api.ArtifactQueries`, on SQLite."""

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
        row = self.execute(
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
        ).fetchone()
        return int(row[0])

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        rows = self._execute_now(Q["artifacts_of_run"], (item_id, run_id)).fetchall()
        found = {a.artifact_type: a for a in map(_artifact, rows)}
        for art in self._held.held_artifacts(item_id):
            if art.run_id == run_id:
                found[art.artifact_type] = art
        return found

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        """``{type: (run_id, payload)}`` of the run's system artifacts of ``types``.

        What the READY gate reads: only the columns it judges, so the run's
        extraction (kilobytes of text) is neither read nor copied.
        """
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload FROM artifacts WHERE item_id = ?"
            f" AND run_id = ? AND created_by = 'system' AND artifact_type IN ({marks(types)})",
            (item_id, run_id, *types),
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {r[0]: (r[1], r[2]) for r in rows}
        for row in self._held.artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        """:meth:`run_payloads`, and the payload of a person's newest score (not set
        aside), if any: what a run that passes the gate makes the item show. One read.
        """
        rows = self._execute_now(
            "SELECT artifact_type, run_id, payload, created_by, version FROM artifacts"
            f" WHERE item_id = ? AND artifact_type IN ({marks(types)}) AND (created_by = 'system'"
            " AND run_id = ? OR created_by = 'user' AND discarded = 0"
            " AND artifact_type = 'score')",
            (item_id, *types, run_id),
        ).fetchall()
        found: dict[str, tuple[str | None, str]] = {}
        mine: tuple[int, str] | None = None
        for kind, of_run, payload, created_by, version in rows:
            if created_by == "system":
                found[kind] = (of_run, payload)
            elif mine is None or version > mine[0]:
                mine = (version, payload)
        for row in self._held.artifact_items.get(item_id, ()):
            if row[3] == run_id and row[1] in types:
                found[row[1]] = (row[3], row[4])
        return found, mine[1] if mine else None

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str, *, token: int | None = None
    ) -> tuple[int | None, int, bool, int | None]:
        """All a step's commit needs to know, in one statement.

        (the item's orphan count while ``owner`` holds its lease for ``run_id``,
        else None; the newest version of ``artifact_type``; whether a person
        edited it; the version this run already committed, if any).
        """
        if item_id in self._held.artifact_items:
            self.flush()
        row = self._execute_now(
            Q["step_slot"], (item_id, owner, run_id, token, run_id, item_id, artifact_type)
        ).fetchone()
        return row[0], int(row[1]), bool(row[2]), row[3]

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
        self._held.add_artifact(
            (item_id, artifact_type, version, run_id, payload, meta, now, "system")
        )

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version, a user's edit winning over any system version."""
        row = self._execute_now(Q["latest_artifact"], (item_id, artifact_type)).fetchone()
        best = _artifact(row) if row else None
        if best is not None and best.created_by == "user":
            return best
        for art in self._held.held_artifacts(item_id):
            if art.artifact_type == artifact_type and (best is None or art.version > best.version):
                best = art
        return best

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None:
        row = self.execute(Q["artifact_version"], (item_id, artifact_type, version)).fetchone()
        return _artifact(row) if row else None

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """A person's newest version of ``artifact_type`` that is not set aside."""
        row = self._execute_now(Q["user_version"], (item_id, artifact_type)).fetchone()
        return _artifact(row) if row else None

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        """Set a person's versions of a type aside; returns how many were shown before."""
        cur = self.execute(Q["discard_user_versions"], (item_id, artifact_type))
        if artifact_type == "extraction" and cur.rowcount:
            self.execute(Q["reindex_extraction"], (item_id, item_id))
        return int(cur.rowcount)

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        """For each type, the version a person sees.

        A person's newest version (not set aside) first; else the system's
        version of ``run_id``, the run the item shows, so a card never mixes
        runs. An extraction that run reused (a regenerate without refetch) is
        the newest one before it.
        """
        rows = self.execute(Q["shown_artifacts"], (item_id, run_id, run_id)).fetchall()
        shown: dict[str, ArtifactRow] = {}
        for art in map(_artifact, rows):
            shown.setdefault(art.artifact_type, art)
        return shown

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        return [_artifact(r) for r in self.execute(Q["all_artifacts"], (item_id,)).fetchall()]

    # --- chunks ---------------------------------------------------------------

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        if step is None:
            cur = self.execute(Q["chunks_of_run"], (run_id,))
        else:
            cur = self.execute(Q["chunks_of_step"], (run_id, step))
        return [ChunkRow(**dict(zip(CHUNK_COLUMNS, r, strict=True))) for r in cur.fetchall()]

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        """Start ``step``'s chunks afresh: ``total`` pending rows."""
        self.execute(Q["delete_chunks"], (run_id, step))
        self.executemany(
            Q["insert_pending_chunk"], [(run_id, step, i, model, now) for i in range(total)]
        )

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        """Chunks left unfinished by a failure go back to pending, to be asked of ``model``."""
        self.execute(Q["reopen_chunks"], (model, now, run_id, step))

    def retry_chunks(self, run_id: str, now: int) -> None:
        """The run's failed chunks go back to pending: it was queued again."""
        self.execute(Q["retry_chunks"], (now, run_id))

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight (``processing``/``retrying``) go back to pending."""
        self.execute(Q["settle_chunks"], (now, run_id))

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None:
        sets, values = assignments(fields, _CHUNK_SETTABLE)
        self.execute(
            f"UPDATE chunks SET {sets} WHERE run_id = ? AND step = ? AND idx = ?",
            [*values, run_id, step, idx],
        )
