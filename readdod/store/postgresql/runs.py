"""PostgreSQL runs and attempts: a run's progress, each attempt's start and end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from readdod.store.postgresql.base import PostgresUnitBase, assignments, run_row
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import ATTEMPT_COLUMNS, RUN_COLUMNS, AttemptRow, RunRow

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


class PostgresRunQueries(PostgresUnitBase):
    """The runs and attempts of :class:`~readdod.store.api.RunQueries`, on PostgreSQL."""

    def insert_run(self, run: RunRow) -> None:
        self.execute(Q["insert_run"], [getattr(run, c) for c in RUN_COLUMNS])

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Held back until the next statement that is not the end of this run's attempt."""
        assignments(fields, _RUN_SETTABLE)  # a wrong column fails here, not at the flush
        held = self.held.run_updates.setdefault(run_id, {})
        if run_id in self.held.steps:
            # The step held back goes out with this update (which wins if it sets one too).
            held["current_step"] = self.held.steps.pop(run_id)
        held.update(fields)

    def set_current_step(self, run_id: str, step: str | None) -> None:
        self.held.steps[run_id] = step

    def run(self, run_id: str) -> RunRow | None:
        row = self.one(Q["run_by_id"], (run_id,))
        return run_row(row) if row else None

    def runs_for(self, item_id: str) -> list[RunRow]:
        return [run_row(r) for r in self.all(Q["runs_of_item"], (item_id,))]

    def start_runs(self, run_ids: Sequence[str], owner: str, now: int) -> dict[str, RunRow]:
        """Mark claimed runs running (one statement); returns the updated rows."""
        if not run_ids:
            return {}
        rows = self.all(Q["start_runs"], (owner, now, list(run_ids)))
        return {run.run_id: run for run in map(run_row, rows)}

    def ready_from_runs(self) -> list[str]:
        return [str(r[0]) for r in self.all(Q["ready_from_runs"])]

    # --- attempts -------------------------------------------------------------

    def insert_attempt(self, attempt: AttemptRow) -> None:
        self.execute(Q["insert_attempt"], [getattr(attempt, c) for c in ATTEMPT_COLUMNS])

    def end_attempt(
        self,
        run_id: str,
        status: str,
        now: int,
        *,
        error_code: str | None = None,
        error_message: str | None = None,
    ) -> bool:
        tail = (status, now, error_code, error_message, run_id)
        update = self.held.run_updates.pop(run_id, None)
        if update is not None:
            if run_id in self.held.steps:  # a step set after the update: it wins
                update = {**update, "current_step": self.held.steps.pop(run_id)}
            sets, values = assignments(update, _RUN_SETTABLE)
            cur = self.execute_now(
                f"WITH r AS (UPDATE runs SET {sets} WHERE run_id = %s RETURNING current_step) "
                + Q["end_attempt_after_update"],
                [*values, run_id, *tail],
            )
            return self.changed(cur) > 0
        # It reads the run's current step, which may be held back.
        if run_id in self.held.steps:
            self.flush()
        cur = self.execute_now(Q["end_attempt"], tail)
        return self.changed(cur) > 0

    def last_attempt(self, run_id: str) -> AttemptRow | None:
        row = self.one(Q["last_attempt"], (run_id,))
        return _attempt(row) if row else None

    def start_attempts(
        self, run_ids: Sequence[str], owner: str, now: int, new_id: Callable[[int], str]
    ) -> None:
        """The claimed runs' queued attempts start running (one is added where none waits)."""
        if not run_ids:
            return
        started = {r[0] for r in self.all(Q["start_attempts"], (owner, now, list(run_ids)))}
        for run_id in run_ids:
            if run_id not in started:
                self.execute(Q["add_running_attempt"], (new_id(now), owner, now, now, run_id))

    def spend(self, run_id: str, prompt: int, completion: int, cached: int) -> None:
        if not (prompt or completion or cached):
            return
        self.execute(Q["spend_on_attempt"], (prompt, completion, cached, run_id))
        for name, value in _named(prompt, completion, cached):
            self.execute(Q["add_to_counter"], (name, value))

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        return [_attempt(r) for r in self.all(Q["attempts_of_item"], (item_id,))]
