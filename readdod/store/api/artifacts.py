"""Artifacts and chunks: what steps produce, versioned, and the pieces of a long text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from readdod.store.rows import ArtifactRow, ChunkRow


class StepSlot(NamedTuple):
    """The arguments of a :meth:`ArtifactQueries.step_slot` a unit of work will make: told
    to :meth:`~readdod.store.api.Store.write` ahead, a store may read the slots of a
    whole batch of units in one statement."""

    item_id: str
    artifact_type: str
    owner: str
    run_id: str
    token: int | None
    #: The types the unit's READY gate reads (:meth:`ArtifactQueries.gate_inputs`), if
    #: the step ends its run.
    gate: tuple[str, ...] = ()


class ArtifactQueries(Protocol):
    """What steps produce, versioned (a person's version winning), and the chunks of a long text."""

    # --- artifacts ---------------------------------------------------------------

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
        """Append the next version of an item's artifact; returns it. Versions only grow."""
        ...

    def step_slot(
        self, item_id: str, artifact_type: str, owner: str, run_id: str, *, token: int | None = None
    ) -> tuple[int | None, int, bool, int | None]:
        """What a step's commit needs: (the item's orphan count while ``owner`` holds
        its lease for ``run_id``, from the claim that issued ``token``, else None; the
        newest version of ``artifact_type``; whether a person's version is shown; the
        version this run committed, if any)."""
        ...

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
        """Add a system artifact at the version :meth:`step_slot` found for it."""
        ...

    def artifact(self, item_id: str, artifact_type: str, version: int) -> ArtifactRow | None: ...

    def artifacts_of_run(self, item_id: str, run_id: str) -> dict[str, ArtifactRow]:
        """The run's system artifacts by type."""
        ...

    def run_payloads(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> dict[str, tuple[str | None, str]]:
        """``{type: (run_id, payload)}`` of the run's system artifacts of ``types``."""
        ...

    def gate_inputs(
        self, item_id: str, run_id: str, types: Sequence[str]
    ) -> tuple[dict[str, tuple[str | None, str]], str | None]:
        """:meth:`run_payloads`, and the payload of a person's newest score not set
        aside, if any: what the READY gate judges."""
        ...

    def latest_artifact(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """The newest version not set aside, a person's winning over any system one."""
        ...

    def user_version(self, item_id: str, artifact_type: str) -> ArtifactRow | None:
        """A person's newest version of ``artifact_type`` not set aside."""
        ...

    def discard_user_versions(self, item_id: str, artifact_type: str) -> int:
        """Set a person's versions of a type aside (kept, no longer shown); how many
        were shown before."""
        ...

    def shown_artifacts(self, item_id: str, run_id: str | None) -> dict[str, ArtifactRow]:
        """For each type, the version a person sees: their newest not set aside, else
        the system's of ``run_id``; an extraction that run reused is the newest before."""
        ...

    def all_artifacts(self, item_id: str) -> list[ArtifactRow]:
        """Every version, set aside or not, by type then version."""
        ...

    # --- chunks of a long text ----------------------------------------------------

    def chunks(self, run_id: str, step: str | None = None) -> list[ChunkRow]:
        """A run's chunks (of one ``step``), by step then index."""
        ...

    def reset_chunks(self, run_id: str, step: str, total: int, model: str | None, now: int) -> None:
        """Start ``step``'s chunks afresh: ``total`` pending rows."""
        ...

    def reopen_chunks(self, run_id: str, step: str, model: str | None, now: int) -> None:
        """The step's chunks not done go back to pending, to be asked of ``model``."""
        ...

    def retry_chunks(self, run_id: str, now: int) -> None:
        """The run's failed chunks (``error``) go back to pending: the run is queued
        again (a retry, by a person or the policy), and they wait to be taken up (seed 004)."""
        ...

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight (processing, retrying) go back to pending."""
        ...

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None: ...
