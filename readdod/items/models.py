"""Every stored or wire payload, as msgspec Structs.

Pure: no I/O. Artifact payloads carry their constraints (lengths, ranges,
enums) so that decoding *is* validation; :mod:`readdod.steps.rubric` adds the
checks a type cannot express.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

from readdod.items.states import Status

Priority = Literal["P0", "P1", "P2", "P3"]
TodoKind = Literal["output", "action", "learn", "read"]
Recommendation = Literal["read", "skim", "skip"]
SourceType = Literal["url", "html", "text"]
ArtifactType = Literal["extraction", "summary", "score", "todos", "card"]
CreatedBy = Literal["system", "user"]
RunMode = Literal["PROCESS", "RETRY", "REGENERATE", "EXPORT"]
RunStatus = Literal["queued", "running", "succeeded", "failed", "timeout", "cancelled"]
ArchiveReason = Literal["USER_ARCHIVE", "SYSTEM_SKIP", "FAILURE_ARCHIVE"]
#: A step as ``failure.failed_step`` names it on the wire (seed 000 §6.1).
WireStep = Literal["extract", "summarize", "score", "todos", "card", "export"]

PRIORITIES: Final[tuple[Priority, ...]] = ("P0", "P1", "P2", "P3")


TL_DR_MAX: Final = 280

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Line = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
Percent = Annotated[int, msgspec.Meta(ge=0, le=100)]
#: Same bounds as a capture's tags, so any captured tag fits on the card.
Tag = Annotated[str, msgspec.Meta(max_length=100)]


# --- artifact payloads -----------------------------------------------------


class CaptureOrigin(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Where a capture came from when not typed in: an import or a feed.

    Kept with the capture's event, so an item brought from elsewhere keeps when
    it was first saved there and the note it had.
    """

    #: ``import:pocket``, ``feed:https://example.org/feed.xml``, ...
    source: Annotated[str, msgspec.Meta(min_length=1, max_length=8_300)]
    #: When it was saved there: ISO 8601 with a UTC offset.
    saved_at: Annotated[str, msgspec.Meta(max_length=40)] | None = None
    note: Annotated[str, msgspec.Meta(max_length=10_000)] | None = None
    #: What the source said of the page (a publisher's teaser): never the intent.
    description: Annotated[str, msgspec.Meta(max_length=10_000)] | None = None
    #: When the person archived it there (ISO 8601 with a UTC offset).
    archived_at: Annotated[str, msgspec.Meta(max_length=40)] | None = None
    #: The passages the person highlighted there.
    highlights: (
        Annotated[
            list[Annotated[str, msgspec.Meta(max_length=10_000)]], msgspec.Meta(max_length=200)
        ]
        | None
    ) = None


class ProvidedDocument(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, frozen=True
):
    """What a client read off a document it extracted itself (``capture --pdf FILE``).

    It comes with the document's ``text`` and is kept beside that text, so the
    extraction of that text carries what the same document fetched by its URL
    would: the author, the date, the page count, the extractor that read it.
    """

    content_type: Literal["application/pdf"]
    extractor: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    byline: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    #: ISO 8601 with a UTC offset.
    published_at: Annotated[str, msgspec.Meta(max_length=40)] | None = None
    page_count: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None


class CaptureRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a client hands in to capture; the bounds keep one request from bloating the store."""

    intent: Annotated[str, msgspec.Meta(max_length=2_000)]
    url: Annotated[str, msgspec.Meta(max_length=8_192)] | None = None
    html: str | None = None
    text: str | None = None
    title: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    priority: str | None = None
    tags: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=100)]], msgspec.Meta(max_length=50)
    ] = []
    capture_id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    origin: CaptureOrigin | None = None
    #: With ``text`` only: the document that text was read from.
    document: ProvidedDocument | None = None
    #: The person finished with it elsewhere (an import's read state): the item is written
    #: ARCHIVED (USER_ARCHIVE) and is neither fetched nor processed until asked.
    archived: bool = False
    #: When ``capture_id`` names an item not yet processed that differs only by its intent,
    #: give it this intent (a re-import with ``--intent``) instead of refusing the repeat.
    set_intent: bool = False


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
    #: Pages of a PDF; None for a web page or a text.
    page_count: Annotated[int, msgspec.Meta(ge=0)] | None = None


class Summary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the text says, for the reader's intent: a tl;dr and 3-7 key points."""

    tl_dr: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]
    key_points: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=7)]
    intent_relevance: Annotated[str, msgspec.Meta(min_length=1, max_length=1_000)]
    reading_time_min: Annotated[int, msgspec.Meta(ge=0, le=100_000)]
    lang: str | None = None


class Score(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How well the text serves the intent (0-100), with at least 3 concrete reasons."""

    match_score: Percent
    priority: Priority
    reasons: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=10)]
    recommendation: Recommendation


class Todo(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One thing to do; kind ``output`` is something the reader produces."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    kind: TodoKind
    estimate_min: Annotated[int, msgspec.Meta(ge=1, le=600)]


class Todos(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """3-7 todos, at least one of kind ``output``."""

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
    """Everything a person needs to decide, in one place."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    one_liner: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]
    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]
    key_points: Annotated[list[Line], msgspec.Meta(min_length=3, max_length=7)]
    todos: Annotated[list[Todo], msgspec.Meta(min_length=3, max_length=7)]
    priority: Priority
    match_score: Percent
    tags: Annotated[list[Tag], msgspec.Meta(max_length=50)] = []
    source: CardSource
    render_spec: RenderSpec


Payload = Extraction | Summary | Score | Todos | Card


# --- a person's versions -----------------------------------------------------
#
# A person's own version is checked for structure (types, lengths, required
# fields), not held to the machine's quality rubric: two todos and none of
# kind ``output`` are their right. Same fields and string bounds as above;
# only the counts the rubric asks of the machine are lifted.

#: Most entries a person's list may hold.
USER_LIST_MAX: Final = 50


class UserSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    tl_dr: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]
    key_points: Annotated[list[Line], msgspec.Meta(max_length=USER_LIST_MAX)]
    intent_relevance: Annotated[str, msgspec.Meta(max_length=1_000)] = ""
    reading_time_min: Annotated[int, msgspec.Meta(ge=0, le=100_000)] = 0
    lang: str | None = None


class UserScore(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    match_score: Percent
    priority: Priority
    reasons: Annotated[list[Line], msgspec.Meta(max_length=USER_LIST_MAX)] = []
    recommendation: Recommendation = "read"


class UserTodos(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    items: Annotated[list[Todo], msgspec.Meta(max_length=USER_LIST_MAX)]


class UserCard(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A card as a person may write it, and as the card shown is composed."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    one_liner: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]
    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]
    key_points: Annotated[list[Line], msgspec.Meta(max_length=USER_LIST_MAX)]
    todos: Annotated[list[Todo], msgspec.Meta(max_length=USER_LIST_MAX)]
    priority: Priority
    match_score: Percent
    tags: Annotated[list[Tag], msgspec.Meta(max_length=50)] = []
    source: CardSource = msgspec.field(default_factory=CardSource)
    render_spec: RenderSpec


UserPayload = Extraction | UserSummary | UserScore | UserTodos | UserCard


class ArtifactMeta(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Provenance of one artifact version."""

    run_id: str | None
    engine: str | None = None
    engine_version: str | None = None
    template_version: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: Of the prompt tokens, those the server took from its prompt cache (where it says).
    cached_tokens: int | None = None
    latency_ms: int | None = None
    attempts: int = 1
    created_at: str | None = None


# --- records ---------------------------------------------------------------


class Failure(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Why an item is FAILED_*; ``message`` is for people."""

    failed_step: WireStep
    error_code: str
    message: str
    retryable: bool
    debug_message: str | None = None
    attempts: int = 1
    last_attempt_at: str | None = None
    #: When the [retry] policy queues the item again by itself; None: it will not.
    next_attempt_at: str | None = None
    #: Automatic retries made so far since the last success or user action.
    auto_retries: int = 0


class Item(msgspec.Struct, kw_only=True):
    """An item as clients see it."""

    id: str
    status: Status
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
    canonical_url: str | None = None
    #: The first item captured for the same page with another intent.
    sibling_of: str | None = None
    #: The run whose card the item shows: the one that made it READY.
    ready_run_id: str | None = None
    #: While PROCESSING: the worker (daemon) that holds the item's lease, and until when
    #: (RFC 3339) unless renewed; past that time another worker may take the item over.
    lease_owner: str | None = None
    lease_expires_at: str | None = None


class Artifact(msgspec.Struct, kw_only=True):
    item_id: str
    artifact_type: ArtifactType
    version: int
    created_by: CreatedBy
    run_id: str | None
    meta: ArtifactMeta
    payload: Any
    #: A person's version set aside by ``edit --discard`` (kept, no longer shown).
    discarded: bool = False


class AttemptFailure(msgspec.Struct, kw_only=True):
    """One failed attempt of a run, as the ledger in ``show`` lists it."""

    at: str
    step: str | None
    error_code: str | None
    message: str | None = None
    #: What the failed step had cost when it failed, as the model server reported it.
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


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
    #: Why the run failed, for people.
    error_message: str | None = None
    #: The steps this run produced an artifact for, in order.
    steps_done: list[str] = []
    models: list[str] = []
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Of the prompt tokens, those the model server took from its prompt cache.
    cached_tokens: int = 0
    #: Every failed attempt of this run, oldest first.
    failures: list[AttemptFailure] = []


AttemptMode = Literal["PROCESS", "RETRY", "RESUME", "REGENERATE", "EXPORT"]


class Attempt(msgspec.Struct, kw_only=True):
    """One execution of a run: queued → running → succeeded | failed | timeout | cancelled.

    A terminal attempt never changes again; a retry or a resume after a
    crash is a new attempt of the same run, starting at its first missing step.
    """

    attempt_id: str
    run_id: str
    mode: AttemptMode
    status: RunStatus
    #: The step the attempt started at, and the one it had reached when it ended, as
    #: the contract names steps (``extract``, ``summarize``, ...; see readdod.steps.WIRE_STEPS).
    first_step: str | None
    last_step: str | None
    worker_id: str | None
    error_code: str | None
    error_message: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    #: Tokens the model server reported for this attempt's requests (what it spent).
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class ArtifactVersion(msgspec.Struct, kw_only=True):
    """One stored version of an artifact, without its payload (``show --versions``)."""

    artifact_type: ArtifactType
    version: int
    created_by: CreatedBy
    run_id: str | None
    created_at: str
    shown: bool
    discarded: bool = False


#: The states of a chunk being worked on; people see them as one "active" figure.
CHUNK_ACTIVE: Final = ("processing", "retrying")


class ChunkProgress(msgspec.Struct, kw_only=True):
    """How far a long text's chunks of one step have got, in the item's current run.

    ``active`` counts the chunks in flight, ``processing`` and ``retrying``
    together (``retrying`` is a wait inside an attempt, not a queue).
    """

    done: int
    total: int
    active: int = 0
    retrying: int = 0
    error: int = 0
    retries: int = 0


class Chunk(msgspec.Struct, kw_only=True):
    """One chunk of a long text in the item's current run, as ``get`` lists it.

    ``last_error_*`` may be kept after the chunk is done: it says the chunk
    was retried, not that it is failing. ``model`` is the model of its
    latest (or next) attempt.
    """

    step: str
    idx: int
    status: Literal["pending", "processing", "retrying", "done", "error"]
    retries: int
    last_error_code: str | None
    last_error_message: str | None
    model: str | None
    updated_at: str


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


class ExportResult(msgspec.Struct, kw_only=True):
    """The answer to ``export``: where the card went, and whether this call wrote it."""

    item: Item
    export_key: str
    files: list[str]
    reused: bool
    #: Of ``files``, those a reused export_key found gone and wrote again (the same
    #: content under the same name); empty when nothing was missing.
    rewritten: list[str] = []


class Feed(msgspec.Struct, kw_only=True):
    """A feed readdod follows, as ``feed_list`` and ``feed_add`` show it."""

    id: str
    url: str
    intent: str
    tags: list[str]
    title: str | None
    created_at: str
    next_poll_at: str
    last_polled_at: str | None
    last_ok_at: str | None
    #: Failed polls since the last good one; the feed backs off while it fails.
    failures: int
    last_error_code: str | None
    last_error: str | None
    entries_captured: int
