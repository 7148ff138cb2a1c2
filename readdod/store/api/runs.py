"""Runs and their attempts: one run per try at an item, one attempt per lease of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from readdod.store.rows import AttemptRow, RunRow


class RunQueries(Protocol):
    """Runs and their attempts: what a run has reached, and how each attempt at it ended."""

    # --- runs ----------------------------------------------------------------

    def insert_run(self, run: RunRow) -> None: ...

    def update_run(self, run_id: str, **fields: Any) -> None: ...

    def set_current_step(self, run_id: str, step: str | None) -> None:
        """Record the step a run is at (the hot path: may be written at commit)."""
        ...

    def run(self, run_id: str) -> RunRow | None: ...

    def runs_for(self, item_id: str) -> list[RunRow]:
        """An item's runs, oldest first."""
        ...

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running for ``owner`` (one more attempt each); the rows."""
        ...

    def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY, by id."""
        ...

    # --- attempts --------------------------------------------------------------

    def insert_attempt(self, attempt: AttemptRow) -> None:
        """Add an attempt; the run must have none open (end it first)."""
        ...

    def end_attempt(
        self,
        run_id: str,
        status: str,
        now: int,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> bool:
        """Give the run's open attempt its terminal ``status``; False if none was open.

        Its last step is the run's current step. A terminal attempt never changes.
        """
        ...

    def last_attempt(self, run_id: str) -> AttemptRow | None: ...

    def start_attempts(
        self, run_ids: Sequence[str], owner: str, now: int, new_id: Callable[[int], str]
    ) -> None:
        """The claimed runs' queued attempts start running for ``owner``; a run with
        none waiting gets a RESUME attempt named ``new_id(now)``."""
        ...

    def spend(self, run_id: str, prompt: int, completion: int, cached: int) -> None:
        """Add tokens a model server reported to the run's open attempt (the one that
        spent them) and to the store's token counters, which pruning never lowers."""
        ...

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        """Every attempt of the item's runs, oldest first."""
        ...
