"""SQLite reports: counts for health and stats, and the retention prune."""

from __future__ import annotations

from readdod.store.sqlite.base import SqliteUnitBase
from readdod.store.sqlite.queries import QUERIES as Q


class SqliteReportQueries(SqliteUnitBase):
    """The reports and retention of :class:`~readdod.store.api.ReportQueries`, on SQLite."""

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration in ms) of runs finished since ``since``."""
        rows = self.execute(Q["run_outcomes_since"], (since,)).fetchall()
        return [(r[0], int(r[1]), r[2]) for r in rows]

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items and since when the oldest of them has been waiting (ms)."""
        row = self.execute(Q["backlog"]).fetchone()
        return int(row[0]), row[1]

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since`` (every step, export included)."""
        return int(self.execute(Q["failures_since"], (since,)).fetchone()[0])

    def count_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["items_by_status"]).fetchall()}

    def runs_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["runs_by_status"]).fetchall()}

    def attempts_by_status(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(Q["attempts_by_status"]).fetchall()}

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` finished steps that recorded one."""
        rows = self.execute(Q["step_durations"], (limit,)).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens ever spent: the counters retention never lowers."""
        row = self.execute(Q["token_totals"]).fetchone()
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
        chunks = bool(self.execute(Q["has_chunks_table"]).fetchone())
        counts = {
            kind: int(self.execute(Q[f"count_prunable_{kind}"], args).fetchone()[0])
            for kind in ("runs", "attempts", "events", "artifacts")
        }
        counts["chunks"] = (
            int(self.execute(Q["count_prunable_chunks"], args).fetchone()[0]) if chunks else 0
        )
        if dry_run:
            return counts
        self.execute(Q["prune_events"], args)
        if chunks:
            self.execute(Q["prune_chunks"], args)
        self.execute(Q["prune_attempts"], args)
        self.execute(Q["prune_runs"], args)
        self.execute(Q["prune_artifacts"], args)
        return counts
        if self.execute(Q["has_chunks_table"]).fetchone():
            self.execute(Q["prune_chunks"], args)
        self.execute(Q["prune_runs"], args)
        self.execute(Q["prune_events"], args)
        self.execute(Q["prune_artifacts"], args)
        return counts
