"""Reports and retention: counts for health and stats, and what pruning removes."""

from __future__ import annotations

from typing import Protocol


class ReportQueries(Protocol):
    """Aggregates for health and stats (reads only), and the retention prune."""

    # --- reports: health and stats ------------------------------------------------------

    def count_by_status(self) -> dict[str, int]: ...

    def runs_by_status(self) -> dict[str, int]: ...

    def attempts_by_status(self) -> dict[str, int]: ...

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items, and since when the oldest of them has been waiting."""
        ...

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration in ms) of runs finished since ``since``; a
        run's duration runs from its start, or its creation if it never started."""
        ...

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since``."""
        ...

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` step events that recorded one."""
        ...

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens ever spent (:meth:`RunQueries.spend`): counters,
        not sums over rows, so retention does not lower them."""
        ...

    # --- retention -------------------------------------------------------------------

    def prune_history(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove (or with ``dry_run`` only count) the history retention allows, of every
        item whatever its state, each by its own age and outcome: finished runs (their
        attempts, chunks and events with them) older than their outcome's cut-off,
        events of no run older than ``finished_before`` (pause, resume, edits), and
        superseded artifact versions older than it beyond the newest ``keep_versions``.
        Never what an item shows: its current run (its latest outcome or failure), the
        run it shows, the versions it shows, its capture event. Returns the counts by
        kind: runs, attempts, events, artifacts, chunks."""
        ...
