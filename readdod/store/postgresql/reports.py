"""PostgreSQL reports: counts for health and stats, and the retention prune."""

from __future__ import annotations

from readdod.store.postgresql.base import PostgresUnitBase
from readdod.store.postgresql.queries import QUERIES as Q


class PostgresReportQueries(PostgresUnitBase):
    """The reports and retention of :class:`~readdod.store.api.ReportQueries`, on PostgreSQL."""

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        return [(r[0], int(r[1]), r[2]) for r in self.all(Q["run_outcomes_since"], (since,))]

    def backlog(self) -> tuple[int, int | None]:
        row = self.one(Q["backlog"])
        return int(row[0]), None if row[1] is None else int(row[1])

    def failures_since(self, since: int) -> int:
        return int(self.one(Q["failures_since"], (since,))[0])

    def count_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.all(Q["items_by_status"])}

    def runs_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.all(Q["runs_by_status"])}

    def attempts_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.all(Q["attempts_by_status"])}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        return [(str(r[0]), float(r[1])) for r in self.all(Q["step_durations"], (limit,))]

    def token_totals(self) -> tuple[int, int]:
        row = self.one(Q["token_totals"])
        return int(row[0]), int(row[1])

    # --- retention ------------------------------------------------------------

    def prune_history(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove (or only count) what retention allows, of every item; never what an
        item shows."""
        args = {
            "finished": finished_before,
            "cancelled": cancelled_before,
            "failed": failed_before,
            "newest": max(finished_before, cancelled_before, failed_before),
            "keep": keep_versions,
        }
        counts = {
            kind: int(self.one(Q[f"count_prunable_{kind}"], args)[0])
            for kind in ("runs", "attempts", "events", "artifacts", "chunks")
        }
        if dry_run:
            return counts
        for kind in ("events", "chunks", "attempts", "runs", "artifacts"):
            self.execute(Q[f"prune_{kind}"], args)
        return counts
        for name in ("prune_chunks", "prune_runs", "prune_events", "prune_artifacts"):
            self.execute(Q[name], args)
        return counts
