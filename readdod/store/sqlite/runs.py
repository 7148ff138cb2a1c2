"""SQLite runs and attempts: a run's progress, each attempt's start and end."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from readdod.store.rows import ATTEMPT_COLUMNS, RUN_COLUMNS, AttemptRow, RunRow
from readdod.store.sqlite.base import IDS_PER_STATEMENT, SqliteUnitBase, assignments, marks, run_row
from readdod.store.sqlite.queries import QUERIES as Q

_RUN_LIST = ", ".join(RUN_COLUMNS)
_RUN_SETTABLE = frozenset(RUN_COLUMNS) - {"run_id", "item_id", "created_at"}


def _named(prompt: int, completion: int, cached: int) -> list[tuple[str, int]]:
    """The token counters a spend adds to, those it changes only."""
    named = (
        ("prompt_tokens", prompt),
        ("completion_tokens", completion),
        ("cached_tokens", cached),
    )
    return [(name, value) for name, value in named if value]


def _attempt(row: Sequence[Any]) -> AttemptRow:
    return AttemptRow(**dict(zip(ATTEMPT_COLUMNS, row, strict=True)))


class SqliteRunQueries(SqliteUnitBase):
    """The runs and attempts of :class:`~readdod.store.api.RunQueries`, on SQLite."""

    def insert_run(self, run: RunRow) -> None:
        self.execute(Q["insert_run"], [getattr(run, c) for c in RUN_COLUMNS])

    def update_run(self, run_id: str, **fields: Any) -> None:
        sets, values = assignments(fields, _RUN_SETTABLE)
        if run_id in self._held.steps:
            self.flush()
        self._execute_now(f"UPDATE runs SET {sets} WHERE run_id = ?", [*values, run_id])

    def set_current_step(self, run_id: str, step: str | None) -> None:
        """Record the step a run is at (held back: see :meth:`flush`)."""
        self._held.steps[run_id] = step

    def run(self, run_id: str) -> RunRow | None:
        if run_id in self._held.steps:
            self.flush()
        row = self._execute_now(Q["run_by_id"], (run_id,)).fetchone()
        return run_row(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        return [run_row(r) for r in self.execute(Q["runs_of_item"], (item_id,)).fetchall()]

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running (one statement per 500 runs); returns the updated rows."""
        out: dict[str, RunRow] = {}
        for start in range(0, len(run_ids), IDS_PER_STATEMENT):
            chunk = run_ids[start : start + IDS_PER_STATEMENT]
            if any(run_id in self._held.steps for run_id in chunk):
                self.flush()  # the rows returned must show the step held back
            rows = self._execute_now(
                "UPDATE runs SET status = 'running', attempts = attempts + 1, worker_id = ?,"
                f" started_at = coalesce(started_at, ?) WHERE run_id IN ({marks(chunk)})"
                f" RETURNING {_RUN_LIST}",
                [owner, now, *chunk],
            ).fetchall()
            for r in rows:
                run = run_row(r)
                out[run.run_id] = run
        return out

    def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY (not yet exported)."""
        return [str(r[0]) for r in self.execute(Q["ready_from_runs"]).fetchall()]

    # --- attempts -------------------------------------------------------------

    def insert_attempt(self, attempt: AttemptRow) -> None:
        """Add an attempt (held back: see :meth:`flush`). The run must have none open:
        end it first (:meth:`end_attempt`)."""
        self._held.add_attempt(attempt.run_id, tuple(getattr(attempt, c) for c in ATTEMPT_COLUMNS))

    def _flush_attempts_of(self, run_ids: Iterable[str]) -> None:
        if self._held.attempt_runs and not self._held.attempt_runs.isdisjoint(run_ids):
            self.flush()

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

        The step it reached is the run's current step. A terminal attempt is
        never matched again, so it never changes.
        """
        if run_id in self._held.steps:
            self.flush()
        self._flush_attempts_of((run_id,))
        cur = self._execute_now(Q["end_attempt"], (status, now, error_code, error_message, run_id))
        return cur.rowcount > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        self._flush_attempts_of((run_id,))
        row = self._execute_now(Q["last_attempt"], (run_id,)).fetchone()
        return _attempt(row) if row else None

    def start_attempts(self, run_ids: Sequence[str], owner: str, now: int, new_id: Any) -> None:
        """The claimed runs' queued attempts start running (one is added where none waits).

        ``new_id(now)`` names an added attempt.
        """
        self._flush_attempts_of(run_ids)
        for start in range(0, len(run_ids), IDS_PER_STATEMENT):
            chunk = run_ids[start : start + IDS_PER_STATEMENT]
            rows = self._execute_now(
                "UPDATE attempts SET status = 'running', worker_id = ?, started_at = ?,"
                " first_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
                f" WHERE status = 'queued' AND run_id IN ({marks(chunk)}) RETURNING run_id",
                [owner, now, *chunk],
            ).fetchall()
            if len(rows) == len(chunk):
                continue
            started = {r[0] for r in rows}
            for run_id in chunk:
                if run_id not in started:
                    self._execute_now(
                        Q["add_running_attempt"], (new_id(now), owner, now, now, run_id)
                    )

    def spend(self, run_id: str, prompt: int, completion: int, cached: int) -> None:
        if not (prompt or completion or cached):
            return
        self._flush_attempts_of((run_id,))
        self._execute_now(Q["spend_on_attempt"], (prompt, completion, cached, run_id))
        for name, value in _named(prompt, completion, cached):
            self._execute_now(Q["add_to_counter"], (name, value))

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        return [_attempt(r) for r in self.execute(Q["attempts_of_item"], (item_id,)).fetchall()]
