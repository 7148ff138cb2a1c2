"""The orchestrator: every status change in readdod goes through here.

Each operation is one unit of work in one transaction: read the item, check
the move against :mod:`readdod.states`, compare-and-set the status, and
append an event row. Actors never write a status; they hand results and
typed errors to the methods under "actor side", which are fenced by
``(lease_owner, run_id)`` so a worker that lost its lease cannot write.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Final, Protocol, TypeVar

import anyio
import msgspec

from readdod import collector, faults, ids, retry_policy, rubric, sniff, states, urls
from readdod import export as exporting
from readdod import health as hc
from readdod.clock import Clock, iso
from readdod.config import FetchConfig, RetryConfig
from readdod.errors import (
    ErrorCode,
    ExportError,
    ExportFailed,
    IdempotencyConflict,
    InvalidTransition,
    NotFound,
    PayloadTooLarge,
    StepError,
    UnsupportedContent,
    ValidationFailed,
    is_retryable,
)
from readdod.events import EventBus
from readdod.export import naming
from readdod.export.writer import Exporter
from readdod.logging import get_logger
from readdod.models import (
    AI_STEPS,
    CHUNK_ACTIVE,
    PAYLOAD_TYPES,
    PRIORITIES,
    STEPS,
    WIRE_STEPS,
    Artifact,
    ArtifactMeta,
    ArtifactVersion,
    ExportResult,
    Failure,
    Item,
    UserCard,
    UserScore,
    decode_failure,
    wire_step,
)
from readdod.states import Status, Trigger
from readdod.store import (
    ArtifactRow,
    AttemptRow,
    BackupResult,
    ExportRow,
    ItemRow,
    RunRow,
    Store,
    Tx,
)
from readdod.views import (
    artifact_view,
    attempt_view,
    chunk_progress,
    chunk_view,
    event_view,
    item_view,
    ledger,
    shown_view,
)

T = TypeVar("T")
log = get_logger("readdod.orchestrator")

S = Status
PAUSED_KEY: Final = "paused"
#: What ``get`` adds to an item on request.
GET_INCLUDES: Final = ("chunks",)
#: Captured sources up to this size travel with the claim (no read per item); bigger ones
#: are read by the actor when it needs them, so thousands in flight stay small in memory.
CLAIM_SOURCE_MAX_CHARS: Final = 64 * 1024
_json = msgspec.json.Encoder()


class Lease(msgspec.Struct, frozen=True):
    """What an actor holds: the right to write for one run of one item."""

    item_id: str
    owner: str
    run_id: str


class LeaseChunks:
    """A run's chunk ledger for an engine, written through the orchestrator under the lease."""

    def __init__(self, orch: Orchestrator, lease: Lease) -> None:
        self.orch = orch
        self.lease = lease

    async def begin(self, step: str, total: int, model: str | None) -> dict[int, str]:
        return await self.orch.chunks_begin(self.lease, step, total, model)

    async def update(
        self,
        step: str,
        idx: int,
        status: str,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
    ) -> None:
        await self.orch.chunk_update(
            self.lease, step, idx, status, error=error, output=output, model=model
        )
        if status == "done":
            faults.crash_point(f"chunk:{step}:{idx}")


class Claimed(msgspec.Struct, frozen=True):
    """A claimed item as an actor needs it."""

    lease: Lease
    item: ItemRow
    run_mode: str
    refetch: bool
    done: dict[str, ArtifactRow]
    #: The captured (html, text), read with the claim when small; None: read it when needed.
    source: tuple[str | None, str | None] | None = None


class Dispatcher(Protocol):
    """Who may take a new capture's lease in the capture's own transaction (the supervisor).

    ``reserve`` holds a free slot before the transaction; ``settle`` is
    called once after it with what became of it: the claimed item to start
    at once, or None to give the slot back.
    """

    owner: str
    lease_ttl_ms: int

    def reserve(self) -> bool: ...

    def settle(self, claimed: Claimed | None) -> None: ...


class CaptureRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a client hands in; the bounds keep one request from bloating the store."""

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


class _Note(msgspec.Struct):
    event: str
    fields: dict[str, Any]


def _dumps(obj: Any) -> str:
    return _json.encode(obj).decode()


def _transition_note(
    item_id: str,
    run_id: str | None,
    src: str,
    dst: str,
    trigger: str,
    detail: dict[str, Any] | None = None,
) -> _Note:
    """The ``item.transition`` line (and watch event) of one status change."""
    return _Note(
        "item.transition",
        {
            "item_id": item_id,
            "run_id": run_id,
            "from": src,
            "to": dst,
            "trigger": trigger,
            **(detail or {}),
        },
    )


def _record_transition(
    tx: Tx,
    notes: list[_Note],
    now: int,
    item_id: str,
    run_id: str | None,
    src: str,
    dst: str,
    trigger: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """A status change's event row and its note; the status itself is the caller's."""
    tx.insert_event(now, item_id, run_id, "transition", src, dst, trigger, _dumps(detail or {}))
    notes.append(_transition_note(item_id, run_id, src, dst, trigger, detail))


#: The failure message of an item whose worker was lost too often (printf: count, step, id).
WORKER_LOST_MESSAGE: Final = (
    "the worker processing this item was lost %d times in a row during step %s;"
    " it may crash readdod. Retry with `readdod process %s`."
)
#: Orphans logged one by one (a transition line each); the rest are counted in one line.
ORPHAN_LINES: Final = 100


def _shown_run(row: ItemRow) -> str | None:
    """The run whose system artifacts the item shows: the one it is READY on, if any."""
    return row.ready_run_id or row.current_run_id


def _score_fields(raw: str | None) -> tuple[str, int | None]:
    """(priority, match_score) an item takes from a score payload (none: P2, unscored)."""
    if raw is None:
        return "P2", None
    score = _score_decoder.decode(raw)
    return score.priority, score.match_score


_score_decoder = msgspec.json.Decoder(UserScore)


def _failed_state(step: str) -> Status:
    return S.FAILED_EXTRACTION if step == "extraction" else S.FAILED_AI


def _next_step(step: str) -> str:
    i = STEPS.index(step)
    return STEPS[i + 1] if i + 1 < len(STEPS) else "gate"


#: Marks capture hashes made from what identifies a capture (see :func:`_capture_hash`).
CAPTURE_HASH_PREFIX: Final = "c2:"


def _capture_hash(canonical_url: str | None, req: CaptureRequest) -> str:
    """What identifies a capture: the page (its canonical URL), the intent as
    :func:`urls.normalise_intent` compares it, and the content handed in.

    Two captures with the same hash are the same capture: a repeated
    capture_id conflicts only when this differs, and a page captured again
    with its HTML through another spelling of its URL is the same item.
    """
    title = req.title.strip() if req.title else None
    h = hashlib.sha256()
    for part in (canonical_url, urls.normalise_intent(req.intent), req.html, req.text, title):
        h.update(b"\x00" if part is None else b"\x01" + part.encode())
    return CAPTURE_HASH_PREFIX + h.hexdigest()[:32]


def _legacy_capture_hash(req: CaptureRequest) -> str:
    """The hash items captured before :data:`CAPTURE_HASH_PREFIX` carry: the raw fields."""
    h = hashlib.sha256()
    for part in (req.url, req.intent, req.html, req.text, req.title):
        h.update(b"\x00" if part is None else b"\x01" + part.encode())
    return h.hexdigest()[:32]


def _same_capture(stored: str | None, digest: str, req: CaptureRequest) -> bool:
    if stored is None or stored.startswith(CAPTURE_HASH_PREFIX):
        return stored == digest
    return stored == _legacy_capture_hash(req)


def _check_content(req: CaptureRequest, max_bytes: int) -> None:
    """Refuse html or text that is too big to capture, or binary."""
    for field, content, expected in (
        ("html", req.html, "a web page"),
        ("text", req.text, "text"),
    ):
        if content is None:
            continue
        size = len(content) if content.isascii() else len(content.encode())
        if size > max_bytes:
            raise PayloadTooLarge(
                f"the {field} is {size / 2**20:.1f} MB; readdod captures at most"
                f" {max_bytes / 2**20:.1f} MB of {field} (fetch.max_bytes)"
            )
        kind = sniff.binary_kind(content)
        if kind is not None:
            raise UnsupportedContent(
                f"the {field} looks like {kind}, not {expected}: readdod captures HTML pages"
                " and plain text only"
            )


def _check_url(url: str) -> tuple[str, str]:
    """(domain, canonical url) of ``url``, or VALIDATION_ERROR."""
    try:
        canonical = urls.canonical(url)
    except urls.BadURL as exc:
        raise ValidationFailed(
            f"url must be an absolute http(s) address such as https://example.org/page, got {url!r}"
        ) from exc
    host = urllib.parse.urlsplit(canonical).hostname
    assert host is not None
    return host, canonical


class _ExportPlan(msgspec.Struct, frozen=True):
    """What an export needs from the store, read in one snapshot."""

    row: ItemRow
    #: What the item shows, the card composed from a person's edits (views.shown_view).
    shown: dict[str, Artifact]
    key: str
    done: ExportRow | None
    previous: list[str]

    @property
    def card(self) -> Artifact | None:
        return self.shown.get("card")


_EXPORT_HINTS: Final = {
    S.CAPTURED: " It has no card yet: process it, then export it once it is READY.",
    S.QUEUED: " It has no card yet: export it once it is READY.",
    S.PROCESSING: " It is being processed; export it once it is READY.",
    S.FAILED_EXTRACTION: " Its processing failed: `readdod process` it first.",
    S.FAILED_AI: " Its processing failed: `readdod process` it first.",
    S.ARCHIVED: " Unarchive it first.",
}


def _export_doc(plan: _ExportPlan, now: int) -> exporting.ExportDoc:
    """The renderer's input; raises when the stored card cannot be read."""
    row = plan.row
    card = plan.card
    if card is None:
        raise ValueError("the item has no card")
    score = plan.shown.get("score")
    return exporting.ExportDoc(
        item_id=row.id,
        url=row.url,
        final_url=row.final_url,
        title=row.title,
        intent=row.intent_text,
        tags=msgspec.json.decode(row.tags, type=list[str]),
        created_at=iso(row.created_at) or "",
        exported_at=iso(now) or "",
        card=msgspec.convert(card.payload, type=UserCard),
        card_version=card.version,
        card_created_by=card.created_by,
        score=msgspec.convert(score.payload, type=UserScore) if score else None,
    )


class Orchestrator:
    """The single source of truth for item state."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        auto_process: bool = True,
        max_orphanings: int = 3,
        retry: RetryConfig | None = None,
        skip_below: int = 0,
        exporter: Exporter | None = None,
        max_capture_bytes: int = FetchConfig().max_bytes,
    ) -> None:
        self.store = store
        #: The largest html or text a capture may hand in, in UTF-8 bytes (fetch.max_bytes).
        self.max_capture_bytes = max_capture_bytes
        self.clock = clock
        self.auto_process = auto_process
        self.max_orphanings = max_orphanings
        self.retry = retry or RetryConfig()
        self.skip_below = skip_below
        self._listeners: list[Callable[[], None]] = []
        self._retry_listeners: list[Callable[[], None]] = []
        self.exporter = exporter or Exporter()
        self._ready_listeners: list[Callable[[str], None]] = []
        #: Committed events for ``watch`` subscribers (published after each commit).
        self.bus = EventBus(clock)
        #: Set by the supervisor: a capture arriving while it has room starts at once.
        self.dispatcher: Dispatcher | None = None

    def on_enqueue(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after any commit that made an item QUEUED."""
        self._listeners.append(callback)

    def on_retry_scheduled(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after any commit that scheduled an automatic retry."""
        self._retry_listeners.append(callback)

    # --- plumbing ----------------------------------------------------------

    async def _commit(self, fn: Callable[[Tx, list[_Note]], T], *, alone: bool = False) -> T:
        notes: list[_Note] = []

        def unit(tx: Tx) -> T:
            notes.clear()
            return fn(tx, notes)

        result = await self.store.write(unit, alone=alone)
        enqueued = scheduled = False
        # Per item: did this commit end with a run having made it READY?
        ready: dict[str, bool] = {}
        for note in notes:
            log.info(note.event, **note.fields)
            self.bus.publish(note.event, **note.fields)
            to = note.fields.get("to")
            enqueued = enqueued or to == S.QUEUED or note.event == "daemon.resumed"
            scheduled = scheduled or note.event == "retry.scheduled"
            if note.event == "item.transition":
                ready[note.fields["item_id"]] = (
                    note.fields.get("from") == S.PROCESSING and to == S.READY
                )
        if enqueued:
            for callback in self._listeners:
                callback()
        if scheduled:
            for callback in self._retry_listeners:
                callback()
        for item_id, made_ready in ready.items():
            if made_ready:
                for on_ready in self._ready_listeners:
                    on_ready(item_id)
        return result

    def _row(self, tx: Tx, item_id: str) -> ItemRow:
        row = tx.item(item_id)
        if row is None:
            raise NotFound(f"no item with id {item_id!r}; `readdod ls` lists the items")
        return row

    def _move(
        self,
        tx: Tx,
        notes: list[_Note],
        row: ItemRow,
        dst: Status,
        trigger: Trigger,
        *,
        now: int,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> ItemRow:
        """Check and apply one transition, with its event row."""
        src = Status(row.status)
        if not states.allowed(src, dst, trigger):
            code = ErrorCode(states.refusal_code(src))
            hint = " It is being processed; wait for it to finish." if src is S.PROCESSING else ""
            raise InvalidTransition(
                f"item {row.id} is {src}; it cannot go to {dst}.{hint}",
                src=src,
                dst=dst,
                code=code,
            )
        fields.setdefault("updated_at", now)
        if not tx.set_status(row.id, src, dst, **fields):
            raise InvalidTransition(
                f"item {row.id} changed while this request ran; try again", src=src, dst=dst
            )
        run_id = fields.get("current_run_id", row.current_run_id)
        if src is S.PROCESSING and row.current_run_id:
            # A run that stops has no chunk in flight: those not done start again as pending.
            tx.settle_chunks(row.current_run_id, now)
        _record_transition(tx, notes, now, row.id, run_id, src, dst, trigger, detail)
        return msgspec.structs.replace(row, status=dst.value, **fields)

    def _new_run(
        self,
        tx: Tx,
        item_id: str,
        mode: str,
        now: int,
        *,
        refetch: bool = False,
        run_id: str | None = None,
        running_by: str | None = None,
    ) -> str:
        """Insert a run with its first attempt: queued, or already running for
        ``running_by`` (claimed at capture)."""
        run_id = run_id or ids.ulid(now)
        tx.insert_run(
            RunRow(
                run_id=run_id,
                item_id=item_id,
                mode=mode,
                status="queued" if running_by is None else "running",
                refetch=int(refetch),
                current_step="extraction",
                attempts=0 if running_by is None else 1,
                worker_id=running_by,
                error_code=None,
                created_at=now,
                started_at=None if running_by is None else now,
                finished_at=None,
            )
        )
        self._new_attempt(tx, run_id, item_id, mode, now, running_by=running_by)
        return run_id

    @staticmethod
    def _new_attempt(
        tx: Tx,
        run_id: str,
        item_id: str,
        mode: str,
        now: int,
        *,
        running_by: str | None = None,
    ) -> None:
        """A new execution of ``run_id``: queued, or running for ``running_by``."""
        tx.insert_attempt(
            AttemptRow(
                attempt_id=ids.ulid(now),
                run_id=run_id,
                item_id=item_id,
                mode=mode,
                status="queued" if running_by is None else "running",
                first_step="extraction" if running_by is not None else None,
                last_step=None,
                worker_id=running_by,
                error_code=None,
                error_message=None,
                created_at=now,
                started_at=None if running_by is None else now,
                finished_at=None,
            )
        )

    def _enqueue(
        self,
        tx: Tx,
        notes: list[_Note],
        row: ItemRow,
        trigger: Trigger,
        now: int,
        *,
        new_run: str | None,
        refetch: bool = False,
        detail: dict[str, Any] | None = None,
        auto_retries: int = 0,
    ) -> ItemRow:
        """Queue ``row``: on a new run of ``new_run`` mode, or resuming its current run.

        ``auto_retries`` is what the item's count of automatic retries becomes:
        0 for anything but the retry scheduler.
        """
        if new_run is not None or row.current_run_id is None:
            run_id = self._new_run(tx, row.id, new_run or "PROCESS", now, refetch=refetch)
        else:
            run_id = row.current_run_id
            tx.update_run(
                run_id, status="queued", error_code=None, error_message=None, finished_at=None
            )
            last = tx.last_attempt(run_id)
            if last is not None and last.status in ("queued", "running"):
                # Never expected (the item is not QUEUED or PROCESSING), but a run
                # must not have two attempts open.
                tx.end_attempt(run_id, "cancelled", now, error_message="superseded")
            # A run stopped before it could fail resumes; one that failed is retried.
            resumed = last is not None and last.status == "cancelled"
            self._new_attempt(tx, run_id, row.id, "RESUME" if resumed else "RETRY", now)
        return self._move(
            tx,
            notes,
            row,
            S.QUEUED,
            trigger,
            now=now,
            detail=detail,
            current_run_id=run_id,
            failure=None,
            archive_reason=None,
            next_attempt_at=0,
            lease_owner=None,
            lease_expires_at=None,
            auto_retries=auto_retries,
        )

    # --- user side ---------------------------------------------------------

    async def capture(self, req: CaptureRequest) -> tuple[Item, bool]:
        intent = req.intent.strip()
        if not intent:
            raise ValidationFailed("intent is required: say why you saved this, in a few words")
        if req.html is not None and req.text is not None:
            raise ValidationFailed("give html or text, not both")
        if req.url is None and not req.html and not req.text:
            raise ValidationFailed("one of url, html or text is required")
        if req.html is not None and not req.html.strip():
            raise ValidationFailed("html is empty")
        if req.text is not None and not req.text.strip():
            raise ValidationFailed("text is empty")
        _check_content(req, self.max_capture_bytes)
        domain, canonical = _check_url(req.url) if req.url is not None else (None, None)
        same_intent = urls.normalise_intent(intent)
        if req.priority is not None and req.priority not in PRIORITIES:
            raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
        tags = sorted({t.strip() for t in req.tags if t.strip()})
        source_type = "text" if req.text else "html" if req.html else "url"
        digest = _capture_hash(canonical, req)

        dispatcher = self.dispatcher if self.auto_process else None
        slot = dispatcher is not None and dispatcher.reserve()

        def unit(tx: Tx, notes: list[_Note]) -> tuple[ItemRow, bool, Claimed | None]:
            if req.capture_id:
                found = tx.item_by_capture_id(req.capture_id)
                if found is not None:
                    if not _same_capture(found.capture_hash, digest, req):
                        raise IdempotencyConflict(
                            f"capture_id {req.capture_id!r} was already used for different"
                            f" content (item {found.id}); use a new capture_id"
                        )
                    return found, False, None
            sibling_of = None
            if canonical is not None:
                same_page = tx.items_by_canonical_url(canonical)
                for other in same_page:
                    # A page sent with its own HTML (say, after a fetch hit a bot wall)
                    # is new content: only an exact repeat of it is the same item.
                    same_source = (
                        source_type == "url" and other.source_type == "url"
                    ) or _same_capture(other.capture_hash, digest, req)
                    if same_source and urls.normalise_intent(other.intent_text) == same_intent:
                        return other, False, None
                sibling_of = same_page[0].id if same_page else None
            now = self.clock.now_ms()
            row = ItemRow(
                id=ids.ulid(now),
                capture_id=req.capture_id,
                capture_hash=digest,
                source_type=source_type,
                url=req.url.strip() if req.url else None,
                final_url=None,
                domain=domain,
                title=req.title.strip() if req.title and req.title.strip() else None,
                intent_text=intent,
                status=S.CAPTURED,
                priority=req.priority or "P2",
                match_score=None,
                tags=_dumps(tags),
                failure=None,
                archive_reason=None,
                lease_owner=None,
                lease_expires_at=None,
                current_run_id=None,
                orphan_count=0,
                next_attempt_at=0,
                created_at=now,
                updated_at=now,
                canonical_url=canonical,
                sibling_of=sibling_of,
            )
            run_id = None
            # Claimed here when the supervisor has room and nothing older waits.
            owner = dispatcher.owner if slot and dispatcher else None
            if owner is not None and tx.queue_due(now):
                owner = None
            if self.auto_process:
                # Written QUEUED (or PROCESSING) at once, one row write; the events
                # still record every step: CAPTURED, → QUEUED, → PROCESSING.
                assert states.allowed(S.CAPTURED, S.QUEUED, Trigger.SYSTEM)
                assert states.allowed(S.QUEUED, S.PROCESSING, Trigger.SYSTEM)
                run_id = ids.ulid(now)
                row = msgspec.structs.replace(row, status=S.QUEUED, current_run_id=run_id)
                if owner is not None and dispatcher is not None:
                    row = msgspec.structs.replace(
                        row,
                        status=S.PROCESSING,
                        lease_owner=owner,
                        lease_expires_at=now + dispatcher.lease_ttl_ms,
                    )
            tx.insert_item(row)
            if run_id is not None:
                self._new_run(tx, row.id, "PROCESS", now, run_id=run_id, running_by=owner)
            if req.html or req.text:
                tx.insert_source(row.id, req.html, req.text)
            detail = _dumps({"sibling_of": sibling_of}) if sibling_of else "{}"
            tx.insert_event(now, row.id, None, "capture", None, S.CAPTURED, Trigger.USER, detail)
            notes.append(_Note("item.captured", {"item_id": row.id, "source_type": source_type}))
            faults.crash_point("tx:capture")
            if run_id is not None:
                _record_transition(
                    tx, notes, now, row.id, run_id, S.CAPTURED, S.QUEUED, Trigger.SYSTEM
                )
            if run_id is None or owner is None:
                return row, True, None
            _record_transition(
                tx,
                notes,
                now,
                row.id,
                run_id,
                S.QUEUED,
                S.PROCESSING,
                Trigger.SYSTEM,
                {"worker_id": owner},
            )
            small = len(req.html or "") + len(req.text or "") <= CLAIM_SOURCE_MAX_CHARS
            claimed = Claimed(
                lease=Lease(row.id, owner, run_id),
                item=row,
                run_mode="PROCESS",
                refetch=False,
                done={},
                source=(req.html, req.text) if small and (req.html or req.text) else None,
            )
            return row, True, claimed

        claimed: Claimed | None = None
        try:
            row, created, claimed = await self._commit(unit)
        finally:
            if slot and dispatcher is not None:
                dispatcher.settle(claimed)
        return item_view(row), created

    async def process(
        self,
        item_id: str,
        *,
        regenerate: bool = False,
        refetch: bool = False,
        request_id: str | None = None,
    ) -> tuple[Item, str]:
        """Queue an item: first run, retry of a failed run, or a new run.

        With ``request_id``, a repeated request answers what the first one did
        and queues nothing more.
        """

        def unit(tx: Tx, notes: list[_Note]) -> tuple[ItemRow, str]:
            if request_id is not None:
                seen = tx.request(request_id)
                if seen is not None:
                    method, seen_item, response = seen
                    if method != "process" or seen_item != item_id:
                        raise IdempotencyConflict(
                            f"process_request_id {request_id!r} was already used for"
                            f" {method} on item {seen_item}; use a new id"
                        )
                    first = msgspec.json.decode(response)
                    return self._row(tx, item_id), str(first["run_id"])
            row = self._row(tx, item_id)
            src = Status(row.status)
            now = self.clock.now_ms()
            if src is S.READY and not regenerate:
                raise InvalidTransition(
                    f"item {item_id} is already READY; use regenerate to make new versions",
                    src=src,
                    dst=S.QUEUED,
                )
            if src is S.QUEUED:
                raise InvalidTransition(
                    f"item {item_id} is already QUEUED; it runs as soon as a worker is free",
                    src=src,
                    dst=S.QUEUED,
                )
            if src is S.SHIPPED:
                raise InvalidTransition(
                    f"item {item_id} is SHIPPED; to make new versions, archive it"
                    f" (`readdod archive {item_id}`), then"
                    f" `readdod process {item_id} --regenerate`",
                    src=src,
                    dst=S.QUEUED,
                )
            resume = src in (S.FAILED_EXTRACTION, S.FAILED_AI) and not (regenerate or refetch)
            if src is S.CAPTURED:
                mode: str | None = "PROCESS"
            elif resume:
                mode = None
            else:
                mode = "REGENERATE"
            new = self._enqueue(
                tx,
                notes,
                row,
                Trigger.USER,
                now,
                new_run=mode,
                refetch=refetch,
                detail={"op": "process", "regenerate": regenerate, "refetch": refetch},
            )
            if request_id is not None:
                tx.insert_request(
                    request_id, "process", item_id, _dumps({"run_id": new.current_run_id}), now
                )
            assert new.current_run_id is not None
            return new, new.current_run_id

        row, run_id = await self._commit(unit)
        return item_view(row), run_id

    async def archive(
        self, item_id: str, *, reason: str | None = None, cancel: bool = False
    ) -> tuple[Item, bool]:
        """Archive an item; with ``cancel``, a PROCESSING one too.

        Returns the item and whether a run was cancelled: the caller must then
        stop that run's actor. Its lease is gone the moment this commits, so
        whatever the actor still tries to write is refused by the fence.
        """
        if reason is not None and reason not in ("USER_ARCHIVE", "FAILURE_ARCHIVE"):
            raise ValidationFailed("reason must be USER_ARCHIVE or FAILURE_ARCHIVE")

        def unit(tx: Tx, notes: list[_Note]) -> tuple[ItemRow, bool]:
            row = self._row(tx, item_id)
            src = Status(row.status)
            why = reason or ("FAILURE_ARCHIVE" if src in states.FAILED else "USER_ARCHIVE")
            now = self.clock.now_ms()
            cancelled = False
            if src is S.PROCESSING and cancel:
                row = self._move(
                    tx,
                    notes,
                    row,
                    S.QUEUED,
                    Trigger.SYSTEM,
                    now=now,
                    detail={"reason": "cancel"},
                    lease_owner=None,
                    lease_expires_at=None,
                )
                src = S.QUEUED
                cancelled = True
            # An archived item is never retried by itself: its failure must not say so.
            kept: dict[str, Any] = {}
            if row.failure:
                failure = decode_failure(row.failure)
                if failure.next_attempt_at is not None:
                    kept["failure"] = _dumps(msgspec.structs.replace(failure, next_attempt_at=None))
            new = self._move(
                tx,
                notes,
                row,
                S.ARCHIVED,
                Trigger.USER,
                now=now,
                detail={"op": "archive", "reason": why},
                archive_reason=why,
                next_attempt_at=0,
                **kept,
            )
            if src is S.QUEUED and row.current_run_id:
                tx.update_run(row.current_run_id, status="cancelled", finished_at=now)
                tx.end_attempt(
                    row.current_run_id,
                    "cancelled",
                    now,
                    error_message="archived" + (" while it ran" if cancelled else ""),
                )
            return new, cancelled

        row, cancelled = await self._commit(unit)
        return item_view(row), cancelled

    async def unarchive(self, item_id: str, *, regenerate: bool = False) -> Item:
        def unit(tx: Tx, notes: list[_Note]) -> ItemRow:
            row = self._row(tx, item_id)
            now = self.clock.now_ms()
            if row.status != S.ARCHIVED:
                raise InvalidTransition(
                    f"item {item_id} is {row.status}, not ARCHIVED",
                    src=row.status,
                    dst=S.QUEUED if regenerate else S.READY,
                    code=ErrorCode(states.refusal_code(Status(row.status))),
                )
            complete = None if regenerate else self._complete_run(tx, row)
            if complete is not None:
                run_score = tx.run_payloads(row.id, complete, ("score",))["score"][1]
                priority, match = self._shown_score(tx, row.id, run_score)
                return self._move(
                    tx,
                    notes,
                    row,
                    S.READY,
                    Trigger.USER,
                    now=now,
                    detail={"op": "unarchive", "run_id": complete},
                    archive_reason=None,
                    current_run_id=complete,
                    ready_run_id=complete,
                    priority=priority,
                    match_score=match,
                    failure=None,
                    next_attempt_at=0,
                )
            run = tx.run(row.current_run_id) if row.current_run_id else None
            finished = run is not None and run.status == "succeeded"
            return self._enqueue(
                tx,
                notes,
                row,
                Trigger.USER,
                now,
                new_run="REGENERATE" if regenerate or finished else None,
                detail={"op": "unarchive", "regenerate": regenerate},
            )

        return item_view(await self._commit(unit))

    async def ship(self, item_id: str) -> Item:
        def unit(tx: Tx, notes: list[_Note]) -> ItemRow:
            row = self._row(tx, item_id)
            if row.status == S.SHIPPED:
                return row
            return self._move(
                tx,
                notes,
                row,
                S.SHIPPED,
                Trigger.USER,
                now=self.clock.now_ms(),
                detail={"op": "ship"},
                # A FAILED_EXPORT item marked done is no longer failed.
                failure=None,
            )

        return item_view(await self._commit(unit))

    # --- export ------------------------------------------------------------

    def on_ready(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(item_id)`` after a run's commit made an item READY."""
        self._ready_listeners.append(callback)

    def _check_exportable(self, row: ItemRow, trigger: Trigger) -> None:
        src = Status(row.status)
        if states.allowed(src, S.SHIPPED, trigger):
            return
        raise InvalidTransition(
            f"item {row.id} is {src}; only READY, FAILED_EXPORT and SHIPPED items can be"
            f" exported.{_EXPORT_HINTS.get(src, '')}",
            src=src,
            dst=S.SHIPPED,
            code=ErrorCode(states.refusal_code(src)),
        )

    def _export_run(
        self, tx: Tx, item_id: str, started: int, now: int, error: ExportError | None = None
    ) -> str:
        """Record one export attempt as an EXPORT run (the item's current run stays)."""
        run_id = ids.ulid(started)
        tx.insert_run(
            RunRow(
                run_id=run_id,
                item_id=item_id,
                mode="EXPORT",
                status="failed" if error else "succeeded",
                refetch=0,
                current_step="export" if error else None,
                attempts=1,
                worker_id=None,
                error_code=error.error_code if error else None,
                error_message=error.message if error else None,
                created_at=started,
                started_at=started,
                finished_at=now,
            )
        )
        tx.insert_attempt(
            AttemptRow(
                attempt_id=run_id,
                run_id=run_id,
                item_id=item_id,
                mode="EXPORT",
                status="failed" if error else "succeeded",
                first_step="export",
                last_step="export",
                worker_id=None,
                error_code=error.error_code if error else None,
                error_message=error.message[:1000] if error else None,
                created_at=started,
                started_at=started,
                finished_at=now,
            )
        )
        return run_id

    async def export(
        self,
        item_id: str,
        *,
        fmt: str | None = None,
        export_key: str | None = None,
        out_dir: str | None = None,
        trigger: Trigger = Trigger.USER,
    ) -> ExportResult:
        """Write the item's card (a user's edit first) as a file: READY/FAILED_EXPORT → SHIPPED.

        Files are written before the commit and outside it, atomically; a crash
        in between leaves a complete file that the next export of the item
        recognises as its own and rewrites, so a retry converges. A key already
        in ``exports`` answers the files it wrote and writes nothing.
        """
        fmt = fmt or self.exporter.default_format
        if fmt not in exporting.FORMATS:
            raise ValidationFailed(f"format must be one of {', '.join(exporting.FORMATS)}")
        if export_key is not None and not 1 <= len(export_key) <= 200:
            raise ValidationFailed("export_key must be 1 to 200 characters long")
        folder = self.exporter.folder(out_dir)

        def read(tx: Tx) -> _ExportPlan:
            row = self._row(tx, item_id)
            self._check_exportable(row, trigger)
            shown = shown_view(tx.shown_artifacts(item_id, _shown_run(row)))
            card, score = shown.get("card"), shown.get("score")
            key = export_key or exporting.default_key(
                item_id,
                card.version if card else 0,
                score.version if score else None,
                fmt,
                str(folder),
                # A person's summary or todos change what the card shows.
                edits={
                    kind: shown[kind].version
                    for kind in ("summary", "todos")
                    if kind in shown and shown[kind].created_by == "user"
                },
            )
            previous = [
                path
                for files in tx.export_files(item_id, fmt)
                for path in msgspec.json.decode(files, type=list[str])
            ]
            return _ExportPlan(row, shown, key, tx.export(key), previous)

        plan = await self.store.read(read)
        if plan.done is not None:
            return await self._export_reused(plan, fmt, trigger)
        started = self.clock.now_ms()
        try:
            doc = _export_doc(plan, started)
            data = exporting.render(fmt, doc)
        except Exception as exc:
            err = ExportError(
                f"cannot render item {item_id}'s card as {fmt} ({type(exc).__name__}: {exc})."
                f" Fix the card with `readdod edit {item_id} card` or regenerate it.",
                code=ErrorCode.EXPORT_RENDER_FAILED,
                debug=repr(exc),
            )
            raise await self._export_failed(item_id, fmt, err, trigger, started) from exc
        date = (iso(plan.row.created_at) or "")[:10]
        slug = naming.slugify(doc.card.title or plan.row.title or plan.row.domain or "")

        def candidate(n: int) -> str:
            return naming.file_name(
                self.exporter.pattern,
                date=date,
                slug=slug,
                ext=exporting.EXTENSIONS[fmt],
                item_id=item_id,
                fmt=fmt,
                n=n,
            )

        marker = exporting.marker(fmt, item_id)
        # A file written under an earlier card's title, unrecorded because of a crash.
        kin = (
            naming.any_title(
                self.exporter.pattern,
                date=date,
                ext=exporting.EXTENSIONS[fmt],
                item_id=item_id,
                fmt=fmt,
            )
            if doc.card_version > 1
            else None
        )
        try:
            path = await anyio.to_thread.run_sync(
                self.exporter.write, folder, candidate, plan.previous, marker, data, kin
            )
        except ExportError as exc:
            raise await self._export_failed(item_id, fmt, exc, trigger, started) from exc
        faults.crash_point("export:written")
        files = [str(path)]
        card_version = doc.card_version

        def unit(tx: Tx, notes: list[_Note]) -> tuple[ItemRow, list[str]]:
            twin = tx.export(plan.key)
            if twin is not None:
                return self._row(tx, item_id), msgspec.json.decode(twin.files, type=list[str])
            row = self._row(tx, item_id)
            self._check_exportable(row, trigger)
            now = self.clock.now_ms()
            tx.insert_export(
                ExportRow(
                    export_key=plan.key,
                    item_id=item_id,
                    card_version=card_version,
                    template_version=exporting.TEMPLATE_VERSIONS[fmt],
                    format=fmt,
                    files=_dumps(files),
                    created_at=now,
                )
            )
            run_id = self._export_run(tx, item_id, started, now)
            faults.crash_point("tx:export")
            detail = {"op": "export", "format": fmt, "export_key": plan.key, "files": files}
            shipped = self._move(
                tx,
                notes,
                row,
                S.SHIPPED,
                trigger,
                now=now,
                detail={**detail, "export_run_id": run_id},
                failure=None,
            )
            return shipped, files

        with anyio.CancelScope(shield=True):
            row, files = await self._commit(unit)
        return ExportResult(item=item_view(row), export_key=plan.key, files=files, reused=False)

    async def _export_reused(self, plan: _ExportPlan, fmt: str, trigger: Trigger) -> ExportResult:
        done = plan.done
        assert done is not None
        if done.item_id != plan.row.id or done.format != fmt:
            raise IdempotencyConflict(
                f"export_key {plan.key!r} was already used to export item {done.item_id} as"
                f" {done.format}; use a new export_key"
            )
        files = msgspec.json.decode(done.files, type=list[str])
        if plan.row.status == S.SHIPPED:
            return ExportResult(
                item=item_view(plan.row), export_key=plan.key, files=files, reused=True
            )

        def unit(tx: Tx, notes: list[_Note]) -> ItemRow:
            row = self._row(tx, plan.row.id)
            self._check_exportable(row, trigger)
            if row.status == S.SHIPPED:
                return row
            detail = {"op": "export", "export_key": plan.key, "files": files, "reused": True}
            return self._move(
                tx,
                notes,
                row,
                S.SHIPPED,
                trigger,
                now=self.clock.now_ms(),
                detail=detail,
                failure=None,
            )

        row = await self._commit(unit)
        return ExportResult(item=item_view(row), export_key=plan.key, files=files, reused=True)

    async def _export_failed(
        self, item_id: str, fmt: str, err: ExportError, trigger: Trigger, started: int
    ) -> ExportFailed:
        """Record a failed export and return the error to answer.

        READY and FAILED_EXPORT items become FAILED_EXPORT with the failure; a
        SHIPPED item stays SHIPPED (§3) and the event log keeps the failure.
        """

        def unit(tx: Tx, notes: list[_Note]) -> ItemRow:
            row = self._row(tx, item_id)
            now = self.clock.now_ms()
            run_id = self._export_run(tx, item_id, started, now, err)
            detail = {
                "op": "export",
                "format": fmt,
                "error_code": err.error_code,
                "path": err.path,
                "export_run_id": run_id,
            }
            src = Status(row.status)
            if src is S.SHIPPED:
                tx.insert_event(
                    now,
                    row.id,
                    row.current_run_id,
                    "export",
                    src,
                    src,
                    trigger,
                    _dumps({**detail, "message": err.message}),
                )
                notes.append(_Note("export.failed", {"item_id": row.id, **detail}))
                return row
            prev = decode_failure(row.failure) if row.failure else None
            failure = Failure(
                failed_step="export",
                error_code=err.error_code,
                message=err.message,
                retryable=is_retryable(err.code, err.retryable),
                debug_message=err.debug,
                attempts=prev.attempts + 1 if prev and prev.failed_step == "export" else 1,
                last_attempt_at=iso(now),
            )
            return self._move(
                tx,
                notes,
                row,
                S.FAILED_EXPORT,
                Trigger.SYSTEM,
                now=now,
                detail=detail,
                failure=_dumps(failure),
            )

        with anyio.CancelScope(shield=True):
            row = await self._commit(unit)
        return ExportFailed(
            f"{err.message} Item {item_id} is {row.status}; export it again once that is fixed.",
            code=err.code,
            item_status=row.status,
            path=err.path,
        )

    async def set_paused(self, paused: bool) -> bool:
        def unit(tx: Tx, notes: list[_Note]) -> bool:
            was = tx.setting(PAUSED_KEY) == "1"
            if was != paused:
                tx.set_setting(PAUSED_KEY, "1" if paused else "0")
                tx.insert_event(
                    self.clock.now_ms(),
                    None,
                    None,
                    "pause" if paused else "resume",
                    None,
                    None,
                    Trigger.USER,
                )
                notes.append(_Note("daemon.paused" if paused else "daemon.resumed", {}))
            return paused

        return await self._commit(unit)

    async def is_paused(self) -> bool:
        return await self.store.read(lambda tx: tx.setting(PAUSED_KEY) == "1")

    # --- health, stats, retention --------------------------------------------

    async def health(self, thresholds: hc.Thresholds, *, circuit: str, paused: bool) -> hc.Report:
        """The Cecelia §7 metrics on one snapshot, judged against ``thresholds``."""
        now = self.clock.now_ms()
        since = now - hc.WINDOW_MS

        def read(tx: Tx) -> hc.Metrics:
            outcomes = {
                status: (n, avg)
                for status, n, avg in tx.run_outcomes_since(since)
                if status != "cancelled"
            }
            finished = sum(n for n, _ in outcomes.values())
            succeeded = outcomes.get("succeeded", (0, None))[0]
            total_ms = sum(n * avg for n, avg in outcomes.values() if avg is not None)
            backlog, waiting_since = tx.backlog()
            counts = tx.count_by_status()
            return hc.Metrics(
                runs_finished_24h=finished,
                runs_succeeded_24h=succeeded,
                success_rate_24h=round(succeeded / finished, 4) if finished else None,
                avg_run_s_24h=round(total_ms / finished / 1000, 3) if finished else None,
                backlog=backlog,
                oldest_queued_s=(
                    round(max(0, now - waiting_since) / 1000, 3)
                    if waiting_since is not None
                    else None
                ),
                failed_items=sum(counts.get(s, 0) for s in states.FAILED),
                failures_24h=tx.failures_since(since),
                circuit=circuit,
                paused=paused,
            )

        return hc.evaluate(await self.store.read(read), thresholds)

    async def stats(self, step_samples: int = 20_000) -> hc.Stats:
        def read(tx: Tx) -> hc.Stats:
            counts = tx.count_by_status()
            prompt, completion = tx.token_totals()
            return hc.Stats(
                items_by_status=counts,
                items_total=sum(counts.values()),
                runs_by_outcome=tx.runs_by_status(),
                attempts_by_outcome=tx.attempts_by_status(),
                step_durations_ms=hc.step_times(tx.step_durations(step_samples)),
                tokens=hc.Tokens(prompt=prompt, completion=completion, total=prompt + completion),
            )

        stats = await self.store.read(read)
        stats.store = self.store.counters()
        stats.collector = collector.counters()
        return stats

    async def prune(
        self,
        *,
        finished_before: int,
        cancelled_before: int,
        failed_before: int,
        keep_versions: int,
        dry_run: bool,
    ) -> dict[str, int]:
        """Remove what retention allows from ARCHIVED items, then shrink the file."""

        def unit(tx: Tx, notes: list[_Note]) -> dict[str, int]:
            counts = tx.prune_archived(
                finished_before=finished_before,
                cancelled_before=cancelled_before,
                failed_before=failed_before,
                keep_versions=keep_versions,
                dry_run=dry_run,
            )
            notes.append(_Note("retention.pruned", {"dry_run": dry_run, **counts}))
            return counts

        counts = await self._commit(unit, alone=True)
        if not dry_run and any(counts.values()):
            await self.store.reclaim()
        return counts

    async def backup(self, dest: str) -> BackupResult:
        """An online copy of the database, made off the event loop."""
        result = await self.store.backup(dest)
        log.info(
            "backup.done",
            path=result.path,
            bytes=result.bytes,
            pages=result.pages,
            duration_ms=result.duration_ms,
        )
        return result

    async def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY.

        What ``daemon.auto_export`` had yet to export when the daemon last
        stopped or crashed (its queue lives in memory).
        """

        return await self.store.read(lambda tx: tx.ready_from_runs())

    async def queued_count(self) -> int:
        """How many items wait in QUEUED (for systemd's STATUS= line)."""
        return await self.store.read(lambda tx: tx.count_status(S.QUEUED))

    # --- reads -------------------------------------------------------------

    async def get(
        self,
        item_id: str,
        *,
        history: bool = False,
        versions: bool = False,
        include: Sequence[str] = (),
    ) -> dict[str, Any]:
        """An item with what it shows; ``include`` adds parts on request (``chunks``)."""
        unknown = sorted(set(include) - set(GET_INCLUDES))
        if unknown:
            raise ValidationFailed(
                f"include names {', '.join(map(repr, unknown))}, which `get` does not know;"
                f" it can include {', '.join(GET_INCLUDES)}"
            )

        def read(tx: Tx) -> dict[str, Any]:
            row = self._row(tx, item_id)
            shown = tx.shown_artifacts(item_id, _shown_run(row))
            every = tx.all_artifacts(item_id)
            out: dict[str, Any] = {
                "item": item_view(row),
                "artifacts": shown_view(shown),
                "runs": ledger(tx.runs_for(item_id), every, tx.events_for(item_id)),
                "attempts": [attempt_view(a) for a in tx.attempts_for(item_id)],
                "siblings": [
                    r.id
                    for r in (
                        tx.items_by_canonical_url(row.canonical_url) if row.canonical_url else []
                    )
                    if r.id != row.id
                ],
                # Every file the item's exports wrote: where a person finds the card.
                "exported": list(
                    dict.fromkeys(
                        path
                        for fmt in exporting.FORMATS
                        for files in tx.export_files(item_id, fmt)
                        for path in msgspec.json.decode(files, type=list[str])
                    )
                ),
            }
            if versions:
                out["versions"] = [
                    ArtifactVersion(
                        artifact_type=a.artifact_type,  # type: ignore[arg-type]
                        version=a.version,
                        created_by=a.created_by,  # type: ignore[arg-type]
                        run_id=a.run_id,
                        created_at=iso(a.created_at) or "",
                        shown=a.artifact_type in shown
                        and shown[a.artifact_type].version == a.version,
                        discarded=bool(a.discarded),
                    )
                    for a in every
                ]
            if history:
                out["events"] = [event_view(e) for e in tx.events_for(item_id)]
            if row.current_run_id:
                chunks = tx.chunks(row.current_run_id)
                progress = chunk_progress(chunks)
                if progress:
                    out["chunks"] = progress
                if "chunks" in include:
                    out["chunk_list"] = [chunk_view(c) for c in chunks]
            elif "chunks" in include:
                out["chunk_list"] = []
            return out

        return await self.store.read(read)

    async def artifact(self, item_id: str, artifact_type: str, version: int | None) -> Artifact:
        def read(tx: Tx) -> Artifact:
            self._row(tx, item_id)
            row = (
                tx.latest_artifact(item_id, artifact_type)
                if version is None
                else tx.artifact(item_id, artifact_type, version)
            )
            if row is None:
                which = "any version" if version is None else f"version {version}"
                raise NotFound(f"item {item_id} has no {artifact_type} artifact ({which})")
            return artifact_view(row)

        return await self.store.read(read)

    async def list_items(
        self,
        *,
        statuses: Sequence[str] | None = None,
        priority: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        tags: Sequence[str] = (),
        query: str | None = None,
    ) -> tuple[list[Item], str | None]:
        """Newest first. The cursor is the last id seen: ids never change, so a
        cursor stays valid however the items change between pages."""
        for s in statuses or ():
            if s not in Status.__members__:
                raise ValidationFailed(f"unknown status {s!r}")
        if priority is not None and priority not in PRIORITIES:
            raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
        rows = await self.store.read(
            lambda tx: tx.list_items(statuses, priority, limit + 1, cursor, tags=tags, query=query)
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return [item_view(r) for r in rows], (rows[-1].id if more and rows else None)

    async def edit(
        self, item_id: str, artifact_type: str, payload: Any, *, discard: bool = False
    ) -> Artifact:
        """Store a person's version of an artifact; it wins over every system version.

        A person's version is checked for structure only (readdod.rubric.validate_user).
        With ``discard``, their versions of the type are set aside (kept, not
        shown) and the answer is the version now shown.
        """
        if artifact_type not in PAYLOAD_TYPES:
            raise ValidationFailed(
                f"type must be one of {', '.join(PAYLOAD_TYPES)}, got {artifact_type!r}"
            )
        body = ""
        decoded: Any = None
        if not discard:
            decoded, problems = rubric.validate_user(artifact_type, payload)
            if decoded is None or problems:
                raise ValidationFailed(
                    f"the edited {artifact_type} is not valid: " + "; ".join(problems)
                )
            body = _dumps(decoded)

        def unit(tx: Tx, notes: list[_Note]) -> Artifact:
            row = self._row(tx, item_id)
            src = Status(row.status)
            if src is S.PROCESSING:
                raise InvalidTransition(
                    f"item {item_id} is being processed; edit it once it is done",
                    src=src,
                    dst=src,
                    code=ErrorCode.PROCESSING_IN_PROGRESS,
                )
            now = self.clock.now_ms()
            shown_run = _shown_run(row)
            if discard:
                if not tx.discard_user_versions(item_id, artifact_type):
                    raise NotFound(
                        f"item {item_id} has no version of yours of {artifact_type} to discard"
                    )
                detail: dict[str, Any] = {"op": "discard", "artifact_type": artifact_type}
            else:
                base = tx.shown_artifacts(item_id, shown_run).get(artifact_type)
                if base is None:
                    raise NotFound(f"item {item_id} has no {artifact_type} yet; process it first")
                meta = ArtifactMeta(run_id=base.run_id, engine="user", created_at=iso(now))
                version = tx.insert_artifact(
                    item_id, artifact_type, "user", base.run_id, body, _dumps(meta), now
                )
                detail = {"op": "edit", "artifact_type": artifact_type, "version": version}
            fields: dict[str, Any] = {"updated_at": now}
            if artifact_type == "score":
                run_score = (
                    tx.run_payloads(item_id, shown_run, ("score",)).get("score")
                    if shown_run
                    else None
                )
                priority, match = self._shown_score(
                    tx, item_id, run_score[1] if run_score else None
                )
                if match is not None:
                    fields.update(priority=priority, match_score=match)
            tx.set_status(item_id, src, src, **fields)
            tx.insert_event(now, item_id, None, "edit", None, None, Trigger.USER, _dumps(detail))
            notes.append(_Note("artifact.edited", {"item_id": item_id, **detail}))
            shown = shown_view(tx.shown_artifacts(item_id, shown_run))
            if artifact_type not in shown:
                raise NotFound(f"item {item_id} shows no {artifact_type} now")
            return shown[artifact_type]

        return await self._commit(unit)

    async def retry_failed(self, *, step: str | None = None, dry_run: bool = False) -> list[str]:
        """Queue every FAILED_EXTRACTION/FAILED_AI item again (those of ``step`` only).

        ``step`` is a wire name (``extract``, ``summarize``, ...) or the
        internal one (``extraction``, ``summary``, ..., ``gate`` for ``card``).
        """
        steps = [wire_step(s) for s in STEPS]
        wanted = WIRE_STEPS.get(step, step) if step is not None else None
        if wanted is not None and wanted not in steps:
            raise ValidationFailed(
                f"step must be one of {', '.join(steps)} (or {', '.join((*STEPS, 'gate'))});"
                f" got {step!r}"
            )

        def unit(tx: Tx, notes: list[_Note]) -> list[str]:
            now = self.clock.now_ms()
            picked = []
            for row in tx.failed_items((S.FAILED_EXTRACTION, S.FAILED_AI)):
                failure = decode_failure(row.failure) if row.failure else None
                if wanted is not None and (failure is None or failure.failed_step != wanted):
                    continue
                picked.append(row.id)
                if not dry_run:
                    self._enqueue(
                        tx,
                        notes,
                        row,
                        Trigger.USER,
                        now,
                        new_run=None,
                        detail={"op": "retry_failed", "step": step},
                    )
            return picked

        return await self._commit(unit)

    async def requeue_due(self, limit: int = 100) -> tuple[list[str], int | None]:
        """Queue the failed items whose automatic retry is due.

        Returns their ids and when the next one is due (epoch ms), if any.
        """

        def unit(tx: Tx, notes: list[_Note]) -> tuple[list[str], int | None]:
            now = self.clock.now_ms()
            done = []
            for row in tx.retries_due(now, limit):
                retry = row.auto_retries + 1
                self._enqueue(
                    tx,
                    notes,
                    row,
                    Trigger.SYSTEM,
                    now,
                    new_run=None,
                    detail={"op": "auto_retry", "retry": retry},
                    auto_retries=retry,
                )
                done.append(row.id)
            return done, tx.next_retry_at()

        return await self._commit(unit)

    # --- supervisor side ---------------------------------------------------

    def _run_passes_gate(self, tx: Tx, item_id: str, run_id: str) -> bool:
        code, _ = rubric.gate(run_id, tx.run_payloads(item_id, run_id, AI_STEPS))
        return code is None

    def _complete_run(self, tx: Tx, row: ItemRow) -> str | None:
        """The newest run whose artifacts pass the READY gate, the current one first."""
        candidates = [row.current_run_id] if row.current_run_id else []
        candidates += [r.run_id for r in reversed(tx.runs_for(row.id))]
        for run_id in dict.fromkeys(candidates):
            if self._run_passes_gate(tx, row.id, run_id):
                return run_id
        return None

    async def recover(self, owner: str) -> tuple[int, int]:
        """Startup: every PROCESSING row is an orphan (we hold the instance lock).

        Returns (requeued, failed). An item orphaned ``max_orphanings`` times
        in a row without finishing a step fails with WORKER_LOST, so a page
        that kills the process cannot crash-loop it.
        """

        def unit(tx: Tx, notes: list[_Note]) -> tuple[int, int]:
            return self._orphan(tx, notes, self.clock.now_ms(), reason="orphan_recovery")

        return await self._commit(unit)

    def _orphan(
        self, tx: Tx, notes: list[_Note], now: int, *, reason: str, expired: bool = False
    ) -> tuple[int, int]:
        """Requeue or fail every orphan (every PROCESSING item, or those whose lease expired).

        Set-based: a few statements whatever the count, so a restart after a
        crash with 100,000 items in flight takes a second or so rather than
        the many seconds of one move per item. Log lines go per item for the
        first ``ORPHAN_LINES`` orphans, then one ``recovery.unlisted`` line;
        the events table has a row for every one.
        """
        assert states.allowed(S.PROCESSING, S.QUEUED, Trigger.SYSTEM)
        assert states.allowed(S.PROCESSING, S.FAILED_AI, Trigger.SYSTEM)
        assert states.allowed(S.PROCESSING, S.FAILED_EXTRACTION, Trigger.SYSTEM)
        requeued, failed, sample = tx.orphan_processing(
            now,
            expired_before=now if expired else None,
            max_orphanings=self.max_orphanings,
            reason=reason,
            error_code=ErrorCode.WORKER_LOST,
            message_format=WORKER_LOST_MESSAGE,
            failed_at=iso(now) or "",
            sample=ORPHAN_LINES,
            attempt_stamp=ids.ulid(now)[:10],
        )
        for item_id, run_id, count, step, has_failed, message in sample:
            if has_failed:
                detail: dict[str, Any] = {
                    "step": step,
                    "error_code": ErrorCode.WORKER_LOST,
                    "message": (message or "")[:500],
                    "next_attempt_at": None,
                }
                dst = _failed_state(step)
            else:
                detail = {"reason": reason, "orphan_count": count}
                dst = S.QUEUED
            notes.append(
                _transition_note(item_id, run_id, S.PROCESSING, dst, Trigger.SYSTEM, detail)
            )
            if not has_failed:
                notes.append(
                    _Note(
                        "recovery.requeued",
                        {"item_id": item_id, "run_id": run_id, "reason": reason},
                    )
                )
        if requeued + failed > len(sample):
            notes.append(
                _Note(
                    "recovery.unlisted",
                    {
                        "reason": reason,
                        "count": requeued + failed - len(sample),
                        "requeued": requeued,
                        "failed": failed,
                    },
                )
            )
        return requeued, failed

    async def requeue_expired(self) -> int:
        """Return items whose lease ran out (a dead or stalled worker) to QUEUED."""

        def unit(tx: Tx, notes: list[_Note]) -> int:
            requeued, failed = self._orphan(
                tx, notes, self.clock.now_ms(), reason="lease_expired", expired=True
            )
            return requeued + failed

        return await self._commit(unit)

    async def claim(self, owner: str, limit: int, lease_ttl_ms: int) -> list[Claimed]:
        assert states.allowed(S.QUEUED, S.PROCESSING, Trigger.SYSTEM)

        def unit(tx: Tx, notes: list[_Note]) -> list[Claimed]:
            now = self.clock.now_ms()
            rows = tx.claim(owner, limit, now + lease_ttl_ms, now)
            run_ids = [r.current_run_id for r in rows if r.current_run_id]
            runs = tx.start_runs(run_ids, owner, now)
            tx.start_attempts(run_ids, owner, now, ids.ulid)
            sources = tx.small_sources(
                [r.id for r in rows if r.source_type != "url"], CLAIM_SOURCE_MAX_CHARS
            )
            detail = _dumps({"worker_id": owner})
            events = []
            out = []
            for row in rows:
                run = runs[row.current_run_id or ""]
                events.append(
                    (now, row.id, run.run_id, "transition", S.QUEUED, S.PROCESSING, detail)
                )
                notes.append(
                    _transition_note(
                        row.id,
                        run.run_id,
                        S.QUEUED,
                        S.PROCESSING,
                        Trigger.SYSTEM,
                        {"worker_id": owner},
                    )
                )
                # Only a run claimed before can have finished steps to resume from.
                resumed = run.attempts > 1
                out.append(
                    Claimed(
                        lease=Lease(row.id, owner, run.run_id),
                        item=row,
                        run_mode=run.mode,
                        refetch=bool(run.refetch),
                        done=tx.artifacts_of_run(row.id, run.run_id) if resumed else {},
                        source=sources.get(row.id),
                    )
                )
            tx.insert_events(events, Trigger.SYSTEM)
            return out

        return await self._commit(unit)

    async def renew(self, owner: str, item_ids: Sequence[str], lease_ttl_ms: int) -> set[str]:
        until = self.clock.now_ms() + lease_ttl_ms
        return await self.store.write(lambda tx: tx.renew_leases(owner, item_ids, until))

    # --- actor side (fenced) -----------------------------------------------

    async def source(self, item_id: str) -> tuple[str | None, str | None]:
        return await self.store.read(lambda tx: tx.source(item_id))

    async def latest_extraction(self, item_id: str) -> ArtifactRow | None:
        return await self.store.read(lambda tx: tx.latest_artifact(item_id, "extraction"))

    async def put_artifact(
        self,
        lease: Lease,
        step: str,
        payload: bytes,
        meta: ArtifactMeta,
        *,
        item_fields: dict[str, Any] | None = None,
        duration_ms: float | None = None,
        finish: bool = False,
    ) -> int | None:
        """Commit one step's artifact for the lease's run; None if the lease is gone.

        ``duration_ms`` (the step's own time) goes into the step event for
        ``stats`` and the ``step.finished`` line. ``finish`` also runs the
        READY gate in the same transaction: the last step and the run's
        outcome commit together, one transaction fewer per item.

        The item row is written only when something on it changes (title,
        priority, score, a crash-loop count to clear); otherwise the read that
        checks the lease is all it costs.
        """

        def unit(tx: Tx, notes: list[_Note]) -> int | None:
            orphaned, newest, edited, existing = tx.step_slot(
                lease.item_id, step, lease.owner, lease.run_id
            )
            fields = dict(item_fields or {})
            if edited:
                # A person's edit keeps deciding what the item shows.
                for key in ("priority", "match_score", "title"):
                    fields.pop(key, None)
            now = self.clock.now_ms()
            held = orphaned is not None
            if held and existing is None and (fields or orphaned):
                # A finished step ends a crash loop: the orphan count starts again.
                held = tx.update_fenced(
                    lease.item_id,
                    lease.owner,
                    lease.run_id,
                    updated_at=now,
                    orphan_count=0,
                    **fields,
                )
            if not held:
                notes.append(
                    _Note(
                        "lease.lost",
                        {
                            "item_id": lease.item_id,
                            "run_id": lease.run_id,
                            "step": step,
                            "worker_id": lease.owner,
                        },
                    )
                )
                return None
            if existing is not None:
                version = int(existing)
            else:
                version = newest + 1
                tx.add_artifact(
                    lease.item_id,
                    step,
                    version,
                    lease.run_id,
                    payload.decode(),
                    _dumps(msgspec.structs.replace(meta, run_id=lease.run_id, created_at=iso(now))),
                    now,
                )
                faults.crash_point(f"tx:step:{step}")
                if not finish:
                    tx.set_current_step(lease.run_id, _next_step(step))
                tx.insert_event(
                    now,
                    lease.item_id,
                    lease.run_id,
                    "step",
                    None,
                    None,
                    Trigger.SYSTEM,
                    _dumps(
                        {"step": step, "version": version}
                        if duration_ms is None
                        else {
                            "step": step,
                            "version": version,
                            "duration_ms": round(duration_ms, 2),
                        }
                    ),
                )
            notes.append(
                _Note(
                    "step.finished",
                    {
                        "item_id": lease.item_id,
                        "run_id": lease.run_id,
                        "worker_id": lease.owner,
                        "step": step,
                        "version": version,
                        "duration_ms": round(duration_ms or 0.0, 2),
                    },
                )
            )
            if finish:
                row = tx.item(lease.item_id)
                assert row is not None
                self._finish_run(tx, notes, row, lease.run_id, now)
            return version

        return await self._commit(unit)

    async def note_retry(
        self, lease: Lease, step: str, attempt: int, error: StepError, delay_s: float
    ) -> bool:
        """Record ``step`` as ``retrying`` after a retryable error; False if the lease is gone."""

        def unit(tx: Tx, notes: list[_Note]) -> bool:
            if not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return False
            now = self.clock.now_ms()
            run = tx.run(lease.run_id)
            retries = (run.retries if run is not None else 0) + 1
            message = urls.redact_credentials(error.message)[:1000]
            tx.update_run(
                lease.run_id,
                retries=retries,
                last_error_code=error.error_code,
                last_error_message=message,
            )
            detail = {
                "step": step,
                "state": "retrying",
                "attempt": attempt,
                "error_code": error.error_code,
                "message": message,
                "delay_s": round(delay_s, 3),
            }
            tx.insert_event(
                now, lease.item_id, lease.run_id, "step", None, None, Trigger.SYSTEM, _dumps(detail)
            )
            notes.append(
                _Note(
                    "step.retrying",
                    {
                        "item_id": lease.item_id,
                        "run_id": lease.run_id,
                        "worker_id": lease.owner,
                        "step": step,
                        "attempt": attempt,
                        "error_code": error.error_code,
                        "delay_s": round(delay_s, 3),
                    },
                )
            )
            return True

        return await self._commit(unit)

    async def note_step(self, lease: Lease, step: str, event: str, detail: dict[str, Any]) -> bool:
        """Record something about a running step (e.g. it waits for the model server)."""

        def unit(tx: Tx, notes: list[_Note]) -> bool:
            if not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return False
            full = {"step": step, "event": event, **detail}
            tx.insert_event(
                self.clock.now_ms(),
                lease.item_id,
                lease.run_id,
                "step",
                None,
                None,
                Trigger.SYSTEM,
                _dumps(full),
            )
            notes.append(
                _Note(
                    event,
                    {
                        "item_id": lease.item_id,
                        "run_id": lease.run_id,
                        "worker_id": lease.owner,
                        "step": step,
                        **detail,
                    },
                )
            )
            return True

        return await self._commit(unit)

    async def chunks_begin(
        self, lease: Lease, step: str, total: int, model: str | None
    ) -> dict[int, str]:
        """Set up ``step``'s chunks for the lease's run; the outputs of chunks already done.

        The same run resumed (after a crash or a retry) keeps its done chunks
        when the text splits into as many chunks as before; otherwise it
        starts over.
        """

        def unit(tx: Tx, notes: list[_Note]) -> dict[int, str]:
            if not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return {}
            now = self.clock.now_ms()
            rows = tx.chunks(lease.run_id, step)
            if len(rows) == total:
                tx.reopen_chunks(lease.run_id, step, model, now)
            else:
                tx.reset_chunks(lease.run_id, step, total, model, now)
                rows = []
            done = {r.idx: r.output for r in rows if r.status == "done" and r.output is not None}
            notes.append(
                _Note(
                    "chunks.started",
                    {
                        "item_id": lease.item_id,
                        "run_id": lease.run_id,
                        "step": step,
                        "total": total,
                        "done": len(done),
                    },
                )
            )
            return done

        return await self._commit(unit)

    async def chunk_update(
        self,
        lease: Lease,
        step: str,
        idx: int,
        status: str,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
    ) -> bool:
        """Move one chunk to ``status``; False if the lease is gone.

        ``model`` is the model the attempt starting now asks (``processing``).
        """

        def unit(tx: Tx, notes: list[_Note]) -> bool:
            if not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return False
            now = self.clock.now_ms()
            fields: dict[str, Any] = {"status": status, "updated_at": now}
            rows = tx.chunks(lease.run_id, step)
            current = next((r for r in rows if r.idx == idx), None)
            if current is None:
                return False
            if error is not None:
                fields["last_error_code"] = error.error_code
                fields["last_error_message"] = error.message[:1000]
            if status == "retrying":
                fields["retries"] = current.retries + 1
            if output is not None:
                fields["output"] = output
            if model is not None:
                fields["model"] = model
            tx.update_chunk(lease.run_id, step, idx, **fields)
            now_states = [status if r.idx == idx else r.status for r in rows]
            detail: dict[str, Any] = {
                "step": step,
                "chunk": idx,
                "state": status,
                "done": now_states.count("done"),
                # In flight, retrying or not: one figure, as people see it.
                "active": sum(st in CHUNK_ACTIVE for st in now_states),
                "total": len(rows),
            }
            if error is not None:
                detail["error_code"] = error.error_code
            if status in ("done", "error", "retrying"):
                tx.insert_event(
                    now,
                    lease.item_id,
                    lease.run_id,
                    "chunk",
                    None,
                    None,
                    Trigger.SYSTEM,
                    _dumps(detail),
                )
            notes.append(
                _Note(
                    "chunk.progress", {"item_id": lease.item_id, "run_id": lease.run_id, **detail}
                )
            )
            return True

        return await self._commit(unit)

    async def complete(self, lease: Lease) -> Item | None:
        """The READY gate and, if it passes, PROCESSING → READY; else FAILED_AI."""

        def unit(tx: Tx, notes: list[_Note]) -> ItemRow | None:
            row = tx.item(lease.item_id)
            if row is None or not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                notes.append(
                    _Note(
                        "lease.lost",
                        {"item_id": lease.item_id, "run_id": lease.run_id, "step": "gate"},
                    )
                )
                return None
            return self._finish_run(tx, notes, row, lease.run_id, self.clock.now_ms())

        row = await self._commit(unit)
        return item_view(row) if row else None

    def _finish_run(
        self, tx: Tx, notes: list[_Note], row: ItemRow, run_id: str, now: int
    ) -> ItemRow:
        """Gate a run whose steps are all done: READY (maybe auto-archived) or FAILED_AI."""
        payloads, my_score = tx.gate_inputs(row.id, run_id, AI_STEPS)
        code, problems = rubric.gate(run_id, payloads)
        if code is not None:
            return self._fail(
                tx,
                notes,
                row,
                "gate",
                ErrorCode(code),
                "the generated card did not pass the quality gate: " + "; ".join(problems),
                False,
                None,
                now,
                at_fault=rubric.gate_fault(run_id, payloads),
            )
        tx.update_run(run_id, status="succeeded", finished_at=now, current_step=None)
        tx.end_attempt(run_id, "succeeded", now)
        priority, match = _score_fields(my_score or payloads["score"][1])
        ready = self._move(
            tx,
            notes,
            row,
            S.READY,
            Trigger.SYSTEM,
            now=now,
            lease_owner=None,
            lease_expires_at=None,
            orphan_count=0,
            auto_retries=0,
            ready_run_id=run_id,
            priority=priority,
            match_score=match,
        )
        return self._auto_skip(tx, notes, ready, now)

    @staticmethod
    def _shown_score(tx: Tx, item_id: str, run_score: str | None) -> tuple[str, int | None]:
        """(priority, match_score) of the score a person sees: their own, else the run's."""
        mine = tx.user_version(item_id, "score")
        return _score_fields(mine.payload if mine is not None else run_score)

    def _auto_skip(self, tx: Tx, notes: list[_Note], row: ItemRow, now: int) -> ItemRow:
        """READY → ARCHIVED (SYSTEM_SKIP) when the score a person sees is below skip_below."""
        if self.skip_below <= 0 or row.match_score is None:
            return row
        match = row.match_score
        if match >= self.skip_below:
            return row
        return self._move(
            tx,
            notes,
            row,
            S.ARCHIVED,
            Trigger.SYSTEM,
            now=now,
            detail={"reason": "SYSTEM_SKIP", "match_score": match, "skip_below": self.skip_below},
            archive_reason="SYSTEM_SKIP",
        )

    def _fail(
        self,
        tx: Tx,
        notes: list[_Note],
        row: ItemRow,
        step: str,
        code: ErrorCode,
        message: str,
        retryable: bool,
        debug: str | None,
        now: int,
        *,
        retry_after: float | None = None,
        timed_out: bool = False,
        at_fault: str | None = None,
        **fields: Any,
    ) -> ItemRow:
        """``step`` failed: FAILED_EXTRACTION or FAILED_AI, with ``items.failure`` set.

        ``retryable`` is the error's own judgement, which the automatic retry
        policy follows; the failure's ``retryable`` is the code's where the
        code decides (:func:`readdod.errors.is_retryable`). ``failed_step`` is the wire name of
        ``at_fault`` if given (the step whose artifact the gate rejected), else
        of ``step``.
        """
        # A fetch failure quotes the address; what is kept and shown keeps no credentials.
        message = urls.redact_credentials(message)
        debug = urls.redact_credentials(debug) if debug is not None else None
        run = tx.run(row.current_run_id) if row.current_run_id else None
        delay = retry_policy.next_delay_s(
            self.retry, code, retryable, row.auto_retries, retry_after
        )
        due = now + max(int(delay * 1000), 1) if delay is not None else 0
        failure = Failure(
            failed_step=wire_step(at_fault or step),
            error_code=code,
            message=message,
            retryable=is_retryable(code, retryable),
            debug_message=debug,
            attempts=run.attempts if run else 1,
            last_attempt_at=iso(now),
            next_attempt_at=iso(due) if due else None,
            auto_retries=row.auto_retries,
        )
        if run is not None:
            tx.update_run(
                run.run_id,
                status="failed",
                error_code=code,
                error_message=message[:1000],
                finished_at=now,
            )
            tx.end_attempt(
                run.run_id,
                "timeout" if timed_out else "failed",
                now,
                error_code=code,
                error_message=message[:1000],
            )
        moved = self._move(
            tx,
            notes,
            row,
            _failed_state(step),
            Trigger.SYSTEM,
            now=now,
            detail={
                "step": step,
                "error_code": code,
                "message": message[:500],
                "next_attempt_at": iso(due) if due else None,
            },
            failure=_dumps(failure),
            lease_owner=None,
            lease_expires_at=None,
            next_attempt_at=due,
            **fields,
        )
        if due:
            notes.append(
                _Note(
                    "retry.scheduled",
                    {
                        "item_id": row.id,
                        "run_id": row.current_run_id,
                        "error_code": code,
                        "retry": row.auto_retries + 1,
                        "delay_s": round(delay or 0.0, 3),
                    },
                )
            )
        return moved

    async def fail(self, lease: Lease, step: str, error: StepError) -> Item | None:
        def unit(tx: Tx, notes: list[_Note]) -> ItemRow | None:
            row = tx.item(lease.item_id)
            if row is None or not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                notes.append(
                    _Note(
                        "lease.lost",
                        {"item_id": lease.item_id, "run_id": lease.run_id, "step": step},
                    )
                )
                return None
            return self._fail(
                tx,
                notes,
                row,
                step,
                error.code,
                error.message,
                error.retryable,
                error.debug,
                self.clock.now_ms(),
                retry_after=error.retry_after,
                timed_out=error.timed_out,
            )

        row = await self._commit(unit)
        return item_view(row) if row else None

    async def release_owned(self, owner: str, reason: str = "shutdown") -> int:
        """PROCESSING → QUEUED for every lease ``owner`` still holds (a clean stop).

        An actor whose own release failed (the database was locked), or an
        item claimed at capture whose actor never started, would otherwise
        wait for recovery and count as orphaned. Returns how many moved.
        """

        def unit(tx: Tx, notes: list[_Note]) -> int:
            now = self.clock.now_ms()
            held = tx.held_by(owner)
            for row in held:
                self._requeue(tx, notes, row, reason, now)
            return len(held)

        return await self._commit(unit)

    async def release(self, lease: Lease, reason: str) -> bool:
        """PROCESSING → QUEUED for a run that stops early (pause, shutdown, cancel)."""

        def unit(tx: Tx, notes: list[_Note]) -> bool:
            row = tx.item(lease.item_id)
            if row is None or not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return False
            self._requeue(tx, notes, row, reason, self.clock.now_ms())
            return True

        return await self._commit(unit)

    def _requeue(self, tx: Tx, notes: list[_Note], row: ItemRow, reason: str, now: int) -> None:
        """PROCESSING → QUEUED keeping the run (a new attempt resumes it), lease cleared."""
        if row.current_run_id:
            tx.update_run(row.current_run_id, status="queued")
            tx.end_attempt(
                row.current_run_id, "cancelled", now, error_message=f"stopped ({reason})"
            )
            self._new_attempt(tx, row.current_run_id, row.id, "RESUME", now)
        self._move(
            tx,
            notes,
            row,
            S.QUEUED,
            Trigger.SYSTEM,
            now=now,
            detail={"reason": reason},
            lease_owner=None,
            lease_expires_at=None,
        )
