"""Rows as the store hands them out: plain Structs in column order."""

from __future__ import annotations

import msgspec


class ItemRow(msgspec.Struct, kw_only=True):
    id: str
    capture_id: str | None
    capture_hash: str | None
    source_type: str
    url: str | None
    final_url: str | None
    domain: str | None
    title: str | None
    intent_text: str
    status: str
    priority: str
    match_score: int | None
    tags: str
    failure: str | None
    archive_reason: str | None
    lease_owner: str | None
    lease_expires_at: int | None
    current_run_id: str | None
    orphan_count: int
    next_attempt_at: int
    created_at: int
    updated_at: int
    canonical_url: str | None = None
    sibling_of: str | None = None
    auto_retries: int = 0
    #: The run whose artifacts the item shows (set when a run makes it READY).
    ready_run_id: str | None = None
    #: The fencing token of the item's latest claim: one more at every claim, never less.
    lease_token: int = 0


class RunRow(msgspec.Struct, kw_only=True):
    run_id: str
    item_id: str
    mode: str
    status: str
    refetch: int
    current_step: str | None
    attempts: int
    worker_id: str | None
    error_code: str | None
    created_at: int
    started_at: int | None
    finished_at: int | None
    retries: int = 0
    last_error_code: str | None = None
    last_error_message: str | None = None
    error_message: str | None = None


class ArtifactRow(msgspec.Struct, kw_only=True):
    item_id: str
    artifact_type: str
    version: int
    created_by: str
    run_id: str | None
    payload: str
    meta: str
    created_at: int
    #: A person's version set aside by ``edit --discard`` (kept, no longer shown).
    discarded: int = 0


class AttemptRow(msgspec.Struct, kw_only=True):
    """One execution of a run; once its status is terminal the row never changes."""

    attempt_id: str
    run_id: str
    item_id: str
    mode: str
    status: str
    first_step: str | None
    last_step: str | None
    worker_id: str | None
    error_code: str | None
    error_message: str | None
    created_at: int
    started_at: int | None
    finished_at: int | None
    #: Tokens the model server reported for this attempt's requests (it spent them).
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class EventRow(msgspec.Struct, kw_only=True):
    seq: int
    at: int
    item_id: str | None
    run_id: str | None
    kind: str
    from_status: str | None
    to_status: str | None
    trigger: str
    detail: str


class ExportRow(msgspec.Struct, kw_only=True):
    export_key: str
    item_id: str
    card_version: int
    template_version: str
    format: str
    files: str
    created_at: int


class ChunkRow(msgspec.Struct, kw_only=True):
    run_id: str
    step: str
    idx: int
    status: str
    retries: int
    last_error_code: str | None
    last_error_message: str | None
    model: str | None
    output: str | None
    updated_at: int
    #: Tokens the chunk's requests cost, over every attempt that asked for it.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class FeedRow(msgspec.Struct, kw_only=True):
    """A feed readdod follows: where it is, what its entries are captured with, how
    its last polls went. ``failures`` counts failed polls since the last good one."""

    id: str
    url: str
    intent: str
    #: JSON list of tags given to every entry's item.
    tags: str
    title: str | None
    etag: str | None
    last_modified: str | None
    created_at: int
    next_poll_at: int
    last_polled_at: int | None
    last_ok_at: int | None
    failures: int
    last_error_code: str | None
    last_error: str | None
    entries_captured: int


ITEM_COLUMNS = tuple(ItemRow.__struct_fields__)
RUN_COLUMNS = tuple(RunRow.__struct_fields__)


class DaemonRow(msgspec.Struct, kw_only=True):
    """One daemon of the fleet that shares the store, as it last told the registry."""

    daemon_id: str
    host: str
    pid: int
    version: str
    started_at: int
    heartbeat_at: int
    #: Whether it claims nothing now (the stored pause, as that daemon last saw it).
    paused: bool = False
    #: Items it was processing at its last heartbeat.
    in_flight: int = 0


ARTIFACT_COLUMNS = tuple(ArtifactRow.__struct_fields__)
EVENT_COLUMNS = tuple(EventRow.__struct_fields__)
EXPORT_COLUMNS = tuple(ExportRow.__struct_fields__)
CHUNK_COLUMNS = tuple(ChunkRow.__struct_fields__)
ATTEMPT_COLUMNS = tuple(AttemptRow.__struct_fields__)
FEED_COLUMNS = tuple(FeedRow.__struct_fields__)
DAEMON_COLUMNS = tuple(DaemonRow.__struct_fields__)


class StoreCounters(msgspec.Struct, kw_only=True):
    """Work the store has done since the daemon started (``stats``, benchmarks)."""

    transactions: int
    units: int
    statements: int
    reads: int
    read_statements: int


class BackupResult(msgspec.Struct, frozen=True):
    """An online copy of the database: where it went, its size and how long it took."""

    path: str
    bytes: int
    pages: int
    duration_ms: float
