"""The store seam: what the core asks of a database, as named methods only.

:class:`Store` runs units of work; a :class:`UnitOfWork` is the one view of
the data a unit gets, every query a method with a name. No SQL, no driver
type and no connection crosses this seam, so a second implementation
(PostgreSQL, or one in memory for a test) is a class with these methods
that passes the contract tests in ``tests/store_contract/``.

Rows come and go as the Structs of :mod:`readdod.store.rows`. Times are
integer milliseconds since the epoch. A unit of work is synchronous on
purpose: it runs whole inside one transaction, so a read-check-write
sequence within it is atomic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from readdod.store.rows import (
    ArtifactRow,
    AttemptRow,
    BackupResult,
    ChunkRow,
    EventRow,
    ExportRow,
    ItemRow,
    RunRow,
    StoreCounters,
)

T = TypeVar("T")


class UnitOfWork(Protocol):
    """The named queries one unit of work may run, inside the store's transaction.

    Whatever a unit wrote, it reads back within the same unit; whatever it
    wrote is gone if it raises. Methods that take ``**fields`` accept column
    names of the row Struct they update (never its key nor its creation time).
    """

    # --- items ---------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None: ...

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        """The item a capture with this idempotency key made, if any."""
        ...

    def insert_item(self, item: ItemRow) -> None: ...

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status (and ``fields`` with it); False, and
        nothing changed, when its status was not ``expected``."""
        ...

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        """Items captured from the same page, oldest id first."""
        ...

    def count_status(self, status: str) -> int: ...

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        """Items in any of ``statuses``, by id."""
        ...

    def list_items(
        self,
        statuses: Sequence[str] | None,
        priority: str | None,
        limit: int,
        before_id: str | None,
        *,
        tags: Sequence[str] = (),
        query: str | None = None,
    ) -> list[ItemRow]:
        """Newest id first, at most ``limit``, ids below ``before_id`` (the cursor).

        ``tags``: every one must be on the item. ``query``: a person's search
        words; every word must be found, as a prefix, in the title, url, intent
        or the extracted text the item shows (VALIDATION_ERROR without a word).
        """
        ...

    def insert_source(self, item_id: str, html: str | None, text: str | None) -> None:
        """Keep what a person handed in with a capture (page HTML or plain text)."""
        ...

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        """(html, text) handed in with the item; (None, None) when there was none."""
        ...

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None]]:
        """The sources of ``item_ids`` no longer than ``max_chars``; bigger ones left out."""
        ...

    # --- leases: claims, renewals, fenced writes -------------------------------

    def queue_due(self, now: int) -> bool:
        """Whether any QUEUED item is due (``next_attempt_at <= now``)."""
        ...

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Move up to ``limit`` due QUEUED items to PROCESSING under ``owner``'s lease,
        P0 first then oldest; the rows as they are now, in that order."""
        ...

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds among ``item_ids``; the ids renewed."""
        ...

    def held_by(self, owner: str) -> list[ItemRow]:
        """The PROCESSING items whose lease ``owner`` holds."""
        ...

    def holds_lease(self, item_id: str, owner: str, run_id: str) -> bool:
        """Whether ``owner`` still holds the item's lease for ``run_id``."""
        ...

    def update_fenced(self, item_id: str, owner: str, run_id: str, **fields: Any) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id``; False,
        and nothing changed, once it does not."""
        ...

    def lost_leases(self, expired_before: int | None, *, at_least: int = 0) -> list[ItemRow]:
        """PROCESSING items whose lease ran out before ``expired_before`` (None: every
        lease, for a daemon that holds the store alone), lost ``at_least`` times in a row
        before, by id."""
        ...

    def requeue_lost(
        self,
        expired_before: int | None,
        *,
        below: int,
        now: int,
        reason: str,
        error_code: str,
        attempt_stamp: str,
        sample: int,
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """PROCESSING → QUEUED for every lost lease (as :meth:`lost_leases` finds them) of
        an item lost fewer than ``below`` times counting this one, in a few statements
        whatever the count.

        Writes what a move per item would: a transition event, the run queued,
        its open attempt failed with ``error_code`` and a new RESUME attempt
        (id prefixed ``attempt_stamp``), chunks in flight pending, the orphan
        count up by one, the lease cleared. Returns how many, and the first
        ``sample`` by id as (id, run_id, orphan_count).
        """
        ...

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

    def attempts_for(self, item_id: str) -> list[AttemptRow]:
        """Every attempt of the item's runs, oldest first."""
        ...

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
        self, item_id: str, artifact_type: str, owner: str, run_id: str
    ) -> tuple[int | None, int, bool, int | None]:
        """What a step's commit needs: (the item's orphan count while ``owner`` holds
        its lease for ``run_id``, else None; the newest version of ``artifact_type``;
        whether a person's version is shown; the version this run committed, if any)."""
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

    def settle_chunks(self, run_id: str, now: int) -> None:
        """The run's chunks in flight (processing, retrying) go back to pending."""
        ...

    def update_chunk(self, run_id: str, step: str, idx: int, **fields: Any) -> None: ...

    # --- events --------------------------------------------------------------------

    def insert_event(
        self,
        at: int,
        item_id: str | None,
        run_id: str | None,
        kind: str,
        from_status: str | None,
        to_status: str | None,
        trigger: str,
        detail: str = "{}",
    ) -> None:
        """Append an event; events keep the order they were added in."""
        ...

    def insert_events(
        self, rows: Sequence[tuple[int, str, str, str, str, str, str]], trigger: str
    ) -> None:
        """Many events of one trigger: (at, item_id, run_id, kind, from, to, detail) each."""
        ...

    def events_for(self, item_id: str) -> list[EventRow]:
        """An item's events in the order they were added."""
        ...

    # --- idempotent requests and settings -----------------------------------------

    def request(self, request_id: str) -> tuple[str, str | None, str] | None:
        """(method, item_id, response) recorded for ``request_id``."""
        ...

    def insert_request(
        self, request_id: str, method: str, item_id: str | None, response: str, now: int
    ) -> None:
        """Record a request's response once; a second record of the id fails the unit."""
        ...

    def setting(self, key: str) -> str | None: ...

    def set_setting(self, key: str, value: str) -> None: ...

    # --- exports -------------------------------------------------------------------

    def export(self, export_key: str) -> ExportRow | None: ...

    def insert_export(self, row: ExportRow) -> bool:
        """Record an export; False when its key is already there (a concurrent twin)."""
        ...

    def export_files(self, item_id: str, fmt: str) -> list[str]:
        """The files (JSON lists) of an item's earlier exports in ``fmt``, newest first."""
        ...

    # --- automatic retries -----------------------------------------------------------

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        ...

    def next_retry_at(self) -> int | None:
        """When the soonest automatic retry falls due, if any is scheduled."""
        ...

    # --- reports: health and stats ------------------------------------------------------

    def count_by_status(self) -> dict[str, int]: ...

    def runs_by_status(self) -> dict[str, int]: ...

    def attempts_by_status(self) -> dict[str, int]: ...

    def backlog(self) -> tuple[int, int | None]:
        """QUEUED items, and since when the oldest of them has been waiting."""
        ...

    def run_outcomes_since(self, since: int) -> list[tuple[str, int, float | None]]:
        """(status, count, average duration) of runs finished since ``since``."""
        ...

    def failures_since(self, since: int) -> int:
        """Moves into a FAILED_* state since ``since``."""
        ...

    def step_durations(self, limit: int) -> list[tuple[str, float]]:
        """(step, duration_ms) of the newest ``limit`` step events that recorded one."""
        ...

    def token_totals(self) -> tuple[int, int]:
        """Prompt and completion tokens recorded in every artifact's meta."""
        ...

    # --- retention -------------------------------------------------------------------

    def prune_archived(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove (or with ``dry_run`` only count) the runs, events and superseded
        artifact versions retention allows; ARCHIVED items only, never what one shows."""
        ...


class Store(Protocol):
    """A database that runs units of work, each atomic and, once written, durable."""

    async def write(self, fn: Callable[[UnitOfWork], T], *, alone: bool = False) -> T:
        """Run ``fn`` in a transaction; return once it is durable. If ``fn`` raises,
        its writes are undone (and only its own) and the error is raised here.

        ``alone``: a long unit (a retention prune) that must not hold up the others.
        """
        ...

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run ``fn`` on one consistent snapshot of what is committed."""
        ...

    def counters(self) -> StoreCounters:
        """Work done since the store opened (``stats``, benchmarks)."""
        ...

    async def reclaim(self) -> None:
        """Give the space that pruning freed back to the file system."""
        ...

    async def backup(self, dest: str | Path) -> BackupResult:
        """A consistent copy of the whole database at ``dest``, while work goes on."""
        ...
