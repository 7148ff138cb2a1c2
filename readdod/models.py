"""Every stored or wire payload, as msgspec Structs.

Pure: no I/O. Artifact payloads carry their constraints (lengths, ranges,
enums) so that decoding *is* validation; :mod:`readdod.rubric` adds the
checks a type cannot express.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

Priority = Literal["P0", "P1", "P2", "P3"]
TodoKind = Literal["output", "action", "learn", "read"]
Recommendation = Literal["read", "skim", "skip"]
SourceType = Literal["url", "html", "text"]
ArtifactType = Literal["extraction", "summary", "score", "todos", "card"]
CreatedBy = Literal["system", "user"]
RunMode = Literal["PROCESS", "RETRY", "REGENERATE", "EXPORT"]
RunStatus = Literal["queued", "running", "succeeded", "failed", "timeout", "cancelled"]
ArchiveReason = Literal["USER_ARCHIVE", "SYSTEM_SKIP", "FAILURE_ARCHIVE"]

PRIORITIES: Final[tuple[Priority, ...]] = ("P0", "P1", "P2", "P3")
STEPS: Final[tuple[ArtifactType, ...]] = ("extraction", "summary", "score", "todos", "card")
AI_STEPS: Final[tuple[ArtifactType, ...]] = ("summary", "score", "todos", "card")

TL_DR_MAX: Final = 280

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Line = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Percent = Annotated[int, msgspec.Meta(ge=0, le=100)]


# --- artifact payloads -----------------------------------------------------


class Extraction(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The article as the extraction step found it."""

    url: str | None = None
    final_url: str | None = None
    http_status: int | None = None
    content_type: str | None = None
    title: str | None = None
    byline: str | None = None
    site_name: str | None = None
    published_at: str | None = None
    lang: str | None = None
    canonical_url: str | None = None
    text: NonEmpty
    markdown: str = ""
    word_count: Annotated[int, msgspec.Meta(ge=0)] = 0
    excerpt: str = ""
    source: Literal["fetched", "provided_html", "provided_text"]
    extractor: str
    fetched_at: str | None = None


class Summary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tl_dr: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]
    key_points: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=7)]
    intent_relevance: NonEmpty
    reading_time_min: Annotated[int, msgspec.Meta(ge=0)]
    lang: str | None = None


class Score(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    match_score: Percent
    priority: Priority
    reasons: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=10)]
    recommendation: Recommendation


class Todo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    kind: TodoKind
    estimate_min: Annotated[int, msgspec.Meta(ge=1, le=600)]


class Todos(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    items: Annotated[list[Todo], msgspec.Meta(min_length=3, max_length=7)]


class CardSource(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: str | None = None
    title: str | None = None
    site_name: str | None = None


class RenderSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    template: NonEmpty
    version: NonEmpty
    sections: Annotated[list[NonEmpty], msgspec.Meta(min_length=1)]


class Card(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    one_liner: Annotated[str, msgspec.Meta(min_length=1, max_length=280)]
    summary: NonEmpty
    key_points: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=7)]
    todos: Annotated[list[Todo], msgspec.Meta(min_length=3, max_length=7)]
    priority: Priority
    match_score: Percent
    tags: list[str] = []
    source: CardSource
    render_spec: RenderSpec


Payload = Extraction | Summary | Score | Todos | Card

PAYLOAD_TYPES: Final[dict[str, type[Payload]]] = {
    "extraction": Extraction,
    "summary": Summary,
    "score": Score,
    "todos": Todos,
    "card": Card,
}


class ArtifactMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Provenance of one artifact version."""

    run_id: str | None
    engine: str | None = None
    engine_version: str | None = None
    template_version: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int | None = None
    attempts: int = 1
    created_at: str | None = None


# --- records ---------------------------------------------------------------


class Failure(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why an item is FAILED_*; ``message`` is for people."""

    failed_step: str
    error_code: str
    message: str
    retryable: bool
    debug_message: str | None = None
    attempts: int = 1
    last_attempt_at: str | None = None


class Item(msgspec.Struct, kw_only=True):
    """An item as clients see it."""

    id: str
    status: str
    source_type: SourceType
    url: str | None
    final_url: str | None
    domain: str | None
    title: str | None
    intent: str
    priority: Priority | None
    match_score: int | None
    tags: list[str]
    failure: Failure | None
    archive_reason: ArchiveReason | None
    current_run_id: str | None
    capture_id: str | None
    created_at: str
    updated_at: str


class Artifact(msgspec.Struct, kw_only=True):
    item_id: str
    artifact_type: ArtifactType
    version: int
    created_by: CreatedBy
    run_id: str | None
    meta: ArtifactMeta
    payload: Any


class Run(msgspec.Struct, kw_only=True):
    run_id: str
    item_id: str
    mode: RunMode
    status: RunStatus
    current_step: str | None
    attempts: int
    worker_id: str | None
    error_code: str | None
    started_at: str | None
    finished_at: str | None
    created_at: str
    retries: int = 0
    last_error_code: str | None = None
    last_error_message: str | None = None


class Event(msgspec.Struct, kw_only=True):
    seq: int
    at: str
    item_id: str | None
    run_id: str | None
    kind: str
    from_status: str | None
    to_status: str | None
    trigger: str
    detail: dict[str, Any]
