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
from typing import Annotated, Any, Final, TypeVar

import msgspec

from readdod import ids, rubric, states
from readdod.clock import Clock, iso
from readdod.errors import (
    ErrorCode,
    IdempotencyConflict,
    InvalidTransition,
    NotFound,
    StepError,
    ValidationFailed,
)
from readdod.logging import get_logger
from readdod.models import (
    AI_STEPS,
    PRIORITIES,
    STEPS,
    Artifact,
    ArtifactMeta,
    Event,
    Failure,
    Item,
    Run,
)
from readdod.states import Status, Trigger
from readdod.store import ArtifactRow, EventRow, ItemRow, RunRow, Store, Tx

T = TypeVar("T")
log = get_logger("readdod.orchestrator")

S = Status
PAUSED_KEY: Final = "paused"
_json = msgspec.json.Encoder()


class Lease(msgspec.Struct, frozen=True):
    """What an actor holds: the right to write for one run of one item."""

    item_id: str
    owner: str
    run_id: str


class Claimed(msgspec.Struct, frozen=True):
    """A claimed item as an actor needs it."""

    lease: Lease
    item: ItemRow
    run_mode: str
    refetch: bool
    done: dict[str, ArtifactRow]


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


def _failed_state(step: str) -> Status:
    return S.FAILED_EXTRACTION if step == "extraction" else S.FAILED_AI


def _next_step(step: str) -> str:
    i = STEPS.index(step)
    return STEPS[i + 1] if i + 1 < len(STEPS) else "gate"


def _capture_hash(req: CaptureRequest) -> str:
    h = hashlib.sha256()
    for part in (req.url, req.intent, req.html, req.text, req.title):
        h.update(b"\x00" if part is None else b"\x01" + part.encode())
    return h.hexdigest()[:32]


def _check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValidationFailed(
            f"url must be an absolute http(s) address such as https://example.org/page, got {url!r}"
        )
    return parts.hostname.lower()


def item_view(row: ItemRow) -> Item:
    return Item(
        id=row.id,
        status=row.status,
        source_type=row.source_type,  # type: ignore[arg-type]
        url=row.url,
        final_url=row.final_url,
        domain=row.domain,
        title=row.title,
        intent=row.intent_text,
        priority=row.priority,  # type: ignore[arg-type]
        match_score=row.match_score,
        tags=msgspec.json.decode(row.tags, type=list[str]),
        failure=msgspec.json.decode(row.failure, type=Failure) if row.failure else None,
        archive_reason=row.archive_reason,  # type: ignore[arg-type]
        current_run_id=row.current_run_id,
        capture_id=row.capture_id,
        created_at=iso(row.created_at) or "",
        updated_at=iso(row.updated_at) or "",
    )


def artifact_view(row: ArtifactRow) -> Artifact:
    return Artifact(
        item_id=row.item_id,
        artifact_type=row.artifact_type,  # type: ignore[arg-type]
        version=row.version,
        created_by=row.created_by,  # type: ignore[arg-type]
        run_id=row.run_id,
        meta=msgspec.json.decode(row.meta, type=ArtifactMeta),
        payload=msgspec.json.decode(row.payload),
    )


def run_view(row: RunRow) -> Run:
    return Run(
        run_id=row.run_id,
        item_id=row.item_id,
        mode=row.mode,  # type: ignore[arg-type]
        status=row.status,  # type: ignore[arg-type]
        current_step=row.current_step,
        attempts=row.attempts,
        worker_id=row.worker_id,
        error_code=row.error_code,
        started_at=iso(row.started_at),
        finished_at=iso(row.finished_at),
        created_at=iso(row.created_at) or "",
        retries=row.retries,
        last_error_code=row.last_error_code,
        last_error_message=row.last_error_message,
    )


def event_view(row: EventRow) -> Event:
    return Event(
        seq=row.seq,
        at=iso(row.at) or "",
        item_id=row.item_id,
        run_id=row.run_id,
        kind=row.kind,
        from_status=row.from_status,
        to_status=row.to_status,
        trigger=row.trigger,
        detail=msgspec.json.decode(row.detail),
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
    ) -> None:
        self.store = store
        self.clock = clock
        self.auto_process = auto_process
        self.max_orphanings = max_orphanings
        self._listeners: list[Callable[[], None]] = []

    def on_enqueue(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after any commit that made an item QUEUED."""
        self._listeners.append(callback)

    # --- plumbing ----------------------------------------------------------

    async def _commit(self, fn: Callable[[Tx, list[_Note]], T]) -> T:
        notes: list[_Note] = []

        def unit(tx: Tx) -> T:
            notes.clear()
            return fn(tx, notes)

        result = await self.store.write(unit)
        enqueued = False
        for note in notes:
            log.info(note.event, **note.fields)
            enqueued = enqueued or note.fields.get("to") == S.QUEUED
        if enqueued:
            for callback in self._listeners:
                callback()
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
        tx.insert_event(now, row.id, run_id, "transition", src, dst, trigger, _dumps(detail or {}))
        notes.append(
            _Note(
                "item.transition",
                {
                    "item_id": row.id,
                    "run_id": run_id,
                    "from": src,
                    "to": dst,
                    "trigger": trigger,
                    **(detail or {}),
                },
            )
        )
        return msgspec.structs.replace(row, status=dst.value, **fields)

    def _new_run(self, tx: Tx, item_id: str, mode: str, now: int, *, refetch: bool = False) -> str:
        run_id = ids.ulid(now)
        tx.insert_run(
            RunRow(
                run_id=run_id,
                item_id=item_id,
                mode=mode,
                status="queued",
                refetch=int(refetch),
                current_step="extraction",
                attempts=0,
                worker_id=None,
                error_code=None,
                created_at=now,
                started_at=None,
                finished_at=None,
            )
        )
        return run_id

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
    ) -> ItemRow:
        """Queue ``row``: on a new run of ``new_run`` mode, or resuming its current run."""
        if new_run is not None or row.current_run_id is None:
            run_id = self._new_run(tx, row.id, new_run or "PROCESS", now, refetch=refetch)
        else:
            run_id = row.current_run_id
            tx.update_run(run_id, status="queued", error_code=None, finished_at=None)
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
        domain = _check_url(req.url) if req.url is not None else None
        if req.priority is not None and req.priority not in PRIORITIES:
            raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
        tags = sorted({t.strip() for t in req.tags if t.strip()})
        source_type = "text" if req.text else "html" if req.html else "url"
        digest = _capture_hash(req)

        def unit(tx: Tx, notes: list[_Note]) -> tuple[ItemRow, bool]:
            if req.capture_id:
                found = tx.item_by_capture_id(req.capture_id)
                if found is not None:
                    if found.capture_hash != digest:
                        raise IdempotencyConflict(
                            f"capture_id {req.capture_id!r} was already used for different"
                            f" content (item {found.id}); use a new capture_id"
                        )
                    return found, False
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
            )
            tx.insert_item(row)
            if req.html or req.text:
                tx.insert_source(row.id, req.html, req.text)
            tx.insert_event(now, row.id, None, "capture", None, S.CAPTURED, Trigger.USER)
            notes.append(_Note("item.captured", {"item_id": row.id, "source_type": source_type}))
            if self.auto_process:
                row = self._enqueue(tx, notes, row, Trigger.SYSTEM, now, new_run="PROCESS")
            return row, True

        row, created = await self._commit(unit)
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

    async def archive(self, item_id: str, *, reason: str | None = None) -> Item:
        if reason is not None and reason not in ("USER_ARCHIVE", "FAILURE_ARCHIVE"):
            raise ValidationFailed("reason must be USER_ARCHIVE or FAILURE_ARCHIVE")

        def unit(tx: Tx, notes: list[_Note]) -> ItemRow:
            row = self._row(tx, item_id)
            src = Status(row.status)
            why = reason or ("FAILURE_ARCHIVE" if src in states.FAILED else "USER_ARCHIVE")
            now = self.clock.now_ms()
            new = self._move(
                tx,
                notes,
                row,
                S.ARCHIVED,
                Trigger.USER,
                now=now,
                detail={"op": "archive", "reason": why},
                archive_reason=why,
            )
            if src is S.QUEUED and row.current_run_id:
                tx.update_run(row.current_run_id, status="cancelled", finished_at=now)
            return new

        return item_view(await self._commit(unit))

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
            if not regenerate and row.current_run_id and self._complete(tx, row):
                return self._move(
                    tx,
                    notes,
                    row,
                    S.READY,
                    Trigger.USER,
                    now=now,
                    detail={"op": "unarchive"},
                    archive_reason=None,
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
            )

        return item_view(await self._commit(unit))

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

        result = await self._commit(unit)
        if not paused:
            for callback in self._listeners:
                callback()
        return result

    async def is_paused(self) -> bool:
        return await self.store.read(lambda tx: tx.setting(PAUSED_KEY) == "1")

    # --- reads -------------------------------------------------------------

    async def get(self, item_id: str, *, history: bool = False) -> dict[str, Any]:
        def read(tx: Tx) -> dict[str, Any]:
            row = self._row(tx, item_id)
            out: dict[str, Any] = {
                "item": item_view(row),
                "artifacts": {
                    k: artifact_view(a) for k, a in sorted(tx.shown_artifacts(item_id).items())
                },
                "runs": [run_view(r) for r in tx.runs_for(item_id)],
            }
            if history:
                out["events"] = [event_view(e) for e in tx.events_for(item_id)]
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
    ) -> tuple[list[Item], str | None]:
        for s in statuses or ():
            if s not in Status.__members__:
                raise ValidationFailed(f"unknown status {s!r}")
        if priority is not None and priority not in PRIORITIES:
            raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
        rows = await self.store.read(
            lambda tx: tx.list_items(statuses, priority, limit + 1, cursor)
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return [item_view(r) for r in rows], (rows[-1].id if more and rows else None)

    # --- supervisor side ---------------------------------------------------

    def _complete(self, tx: Tx, row: ItemRow) -> bool:
        if row.current_run_id is None:
            return False
        arts = tx.artifacts_of_run(row.id, row.current_run_id)
        code, _ = rubric.gate(
            row.current_run_id,
            {k: (a.run_id, a.payload) for k, a in arts.items() if k in AI_STEPS},
        )
        return code is None

    async def recover(self, owner: str) -> tuple[int, int]:
        """Startup: every PROCESSING row is an orphan (we hold the instance lock).

        Returns (requeued, failed). An item orphaned ``max_orphanings`` times
        in a row without finishing a step fails with WORKER_LOST, so a page
        that kills the process cannot crash-loop it.
        """

        def unit(tx: Tx, notes: list[_Note]) -> tuple[int, int]:
            now = self.clock.now_ms()
            requeued = failed = 0
            for row in tx.processing():
                if self._orphan(tx, notes, row, now, reason="orphan_recovery"):
                    requeued += 1
                else:
                    failed += 1
            return requeued, failed

        return await self._commit(unit)

    def _orphan(self, tx: Tx, notes: list[_Note], row: ItemRow, now: int, *, reason: str) -> bool:
        count = row.orphan_count + 1
        run = tx.run(row.current_run_id) if row.current_run_id else None
        step = (run.current_step if run else None) or "extraction"
        if count >= self.max_orphanings:
            msg = (
                f"the worker processing this item was lost {count} times in a row during"
                f" step {step}; it may crash readdod. Retry with `readdod process {row.id}`."
            )
            self._fail(
                tx,
                notes,
                row,
                step,
                ErrorCode.WORKER_LOST,
                msg,
                False,
                None,
                now,
                orphan_count=count,
            )
            return False
        if row.current_run_id:
            tx.update_run(row.current_run_id, status="queued")
        self._move(
            tx,
            notes,
            row,
            S.QUEUED,
            Trigger.SYSTEM,
            now=now,
            detail={"reason": reason, "orphan_count": count},
            lease_owner=None,
            lease_expires_at=None,
            orphan_count=count,
        )
        notes.append(
            _Note(
                "recovery.requeued",
                {"item_id": row.id, "run_id": row.current_run_id, "reason": reason},
            )
        )
        return True

    async def requeue_expired(self) -> int:
        """Return items whose lease ran out (a dead or stalled worker) to QUEUED."""

        def unit(tx: Tx, notes: list[_Note]) -> int:
            now = self.clock.now_ms()
            rows = tx.expired_leases(now)
            for row in rows:
                self._orphan(tx, notes, row, now, reason="lease_expired")
            return len(rows)

        return await self._commit(unit)

    async def claim(self, owner: str, limit: int, lease_ttl_ms: int) -> list[Claimed]:
        assert states.allowed(S.QUEUED, S.PROCESSING, Trigger.SYSTEM)

        def unit(tx: Tx, notes: list[_Note]) -> list[Claimed]:
            now = self.clock.now_ms()
            out = []
            for row in tx.claim(owner, limit, now + lease_ttl_ms, now):
                assert row.current_run_id is not None
                run = tx.run(row.current_run_id)
                assert run is not None
                tx.update_run(
                    run.run_id,
                    status="running",
                    attempts=run.attempts + 1,
                    worker_id=owner,
                    started_at=run.started_at or now,
                )
                tx.insert_event(
                    now,
                    row.id,
                    run.run_id,
                    "transition",
                    S.QUEUED,
                    S.PROCESSING,
                    Trigger.SYSTEM,
                    _dumps({"worker_id": owner}),
                )
                notes.append(
                    _Note(
                        "item.transition",
                        {
                            "item_id": row.id,
                            "run_id": run.run_id,
                            "from": S.QUEUED,
                            "to": S.PROCESSING,
                            "trigger": Trigger.SYSTEM,
                            "worker_id": owner,
                        },
                    )
                )
                out.append(
                    Claimed(
                        lease=Lease(row.id, owner, run.run_id),
                        item=row,
                        run_mode=run.mode,
                        refetch=bool(run.refetch),
                        done=tx.artifacts_of_run(row.id, run.run_id),
                    )
                )
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
    ) -> int | None:
        """Commit one step's artifact for the lease's run; None if the lease is gone."""

        def unit(tx: Tx, notes: list[_Note]) -> int | None:
            if not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
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
            now = self.clock.now_ms()
            existing = tx.artifacts_of_run(lease.item_id, lease.run_id).get(step)
            if existing is not None:
                return existing.version
            version = tx.insert_artifact(
                lease.item_id,
                step,
                "system",
                lease.run_id,
                payload.decode(),
                _dumps(msgspec.structs.replace(meta, run_id=lease.run_id, created_at=iso(now))),
                now,
            )
            tx.update_fenced(
                lease.item_id,
                lease.owner,
                lease.run_id,
                orphan_count=0,
                updated_at=now,
                **(item_fields or {}),
            )
            tx.update_run(lease.run_id, current_step=_next_step(step))
            tx.insert_event(
                now,
                lease.item_id,
                lease.run_id,
                "step",
                None,
                None,
                Trigger.SYSTEM,
                _dumps({"step": step, "version": version}),
            )
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
            tx.update_run(
                lease.run_id,
                retries=retries,
                last_error_code=error.error_code,
                last_error_message=error.message[:1000],
            )
            detail = {
                "step": step,
                "state": "retrying",
                "attempt": attempt,
                "error_code": error.error_code,
                "message": error.message[:1000],
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
            now = self.clock.now_ms()
            arts = tx.artifacts_of_run(lease.item_id, lease.run_id)
            code, problems = rubric.gate(
                lease.run_id, {k: (a.run_id, a.payload) for k, a in arts.items()}
            )
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
                )
            tx.update_run(lease.run_id, status="succeeded", finished_at=now, current_step=None)
            return self._move(
                tx,
                notes,
                row,
                S.READY,
                Trigger.SYSTEM,
                now=now,
                lease_owner=None,
                lease_expires_at=None,
                orphan_count=0,
            )

        row = await self._commit(unit)
        return item_view(row) if row else None

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
        **fields: Any,
    ) -> ItemRow:
        run = tx.run(row.current_run_id) if row.current_run_id else None
        failure = Failure(
            failed_step=step,
            error_code=code,
            message=message,
            retryable=retryable,
            debug_message=debug,
            attempts=run.attempts if run else 1,
            last_attempt_at=iso(now),
        )
        if run is not None:
            tx.update_run(run.run_id, status="failed", error_code=code, finished_at=now)
        return self._move(
            tx,
            notes,
            row,
            _failed_state(step),
            Trigger.SYSTEM,
            now=now,
            detail={"step": step, "error_code": code},
            failure=_dumps(failure),
            lease_owner=None,
            lease_expires_at=None,
            **fields,
        )

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
            )

        row = await self._commit(unit)
        return item_view(row) if row else None

    async def release(self, lease: Lease, reason: str) -> bool:
        """PROCESSING → QUEUED for a run that stops early (pause, shutdown, cancel)."""

        def unit(tx: Tx, notes: list[_Note]) -> bool:
            row = tx.item(lease.item_id)
            if row is None or not tx.holds_lease(lease.item_id, lease.owner, lease.run_id):
                return False
            tx.update_run(lease.run_id, status="queued")
            self._move(
                tx,
                notes,
                row,
                S.QUEUED,
                Trigger.SYSTEM,
                now=self.clock.now_ms(),
                detail={"reason": reason},
                lease_owner=None,
                lease_expires_at=None,
            )
            return True

        return await self._commit(unit)
