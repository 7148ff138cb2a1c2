"""The intake of a capture: checked, recognised when it was seen before, written as a
new item (the capture command; the sources that send captures are ``readdod/capture/``).

The checks and the capture's identity are pure; :func:`capture_unit` is the
unit of work. With ``daemon.auto_process`` a new item is written QUEUED at
once (one row write; its events still record CAPTURED → QUEUED); the workers
may claim it in the same transaction (:meth:`~readdod.core.workers.Workers.claim_with`).
"""

from __future__ import annotations

import datetime
import hashlib
import urllib.parse
from typing import Final

import msgspec

from readdod.core.runs import new_run
from readdod.core.unit import Work, dumps
from readdod.errors import (
    IdempotencyConflict,
    PayloadTooLarge,
    UnsupportedContent,
    ValidationFailed,
)
from readdod.items import sniff, urls
from readdod.items.models import PRIORITIES, CaptureOrigin, CaptureRequest, ProvidedDocument
from readdod.items.states import Status, Trigger
from readdod.runtime import faults, ids
from readdod.store import ItemRow
from readdod.text.controls import single_line

S = Status
#: Marks capture hashes made from what identifies a capture (see :func:`capture_hash`).
CAPTURE_HASH_PREFIX: Final = "c2:"
#: What :func:`_seen` answers for a repeat whose intent is to be set (no item id looks so).
RETARGET: Final = "\x00retarget"


class Checked(msgspec.Struct, frozen=True):
    """A capture request that passed the checks, with what was derived from it."""

    req: CaptureRequest
    intent: str
    domain: str | None
    canonical: str | None
    tags: list[str]
    source_type: str
    digest: str


def capture_hash(canonical_url: str | None, req: CaptureRequest) -> str:
    """What identifies a capture: the page (its canonical URL), the intent as
    :func:`urls.normalise_intent` compares it, and the content handed in.

    Two captures with the same hash are the same capture: a repeated
    capture_id conflicts only when this differs, and a page captured again
    with its HTML through another spelling of its URL is the same item.
    A text's document is content handed in too.
    """
    title = req.title.strip() if req.title else None
    h = hashlib.sha256()
    for part in (canonical_url, urls.normalise_intent(req.intent), req.html, req.text, title):
        h.update(b"\x00" if part is None else b"\x01" + part.encode())
    if req.document is not None:
        h.update(b"\x02" + msgspec.json.encode(req.document))
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
            pdf = " (a PDF: capture its URL, or `readdod capture --pdf FILE`)"
            raise UnsupportedContent(
                f"the {field} looks like {kind}, not {expected}: readdod captures HTML pages"
                f" and plain text only{pdf if kind == sniff.PDF_KIND else ''}"
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
    if host is None:
        raise ValidationFailed(f"url {url!r} names no host")
    return host, canonical


def _check_instant(name: str, value: str | None) -> None:
    """Refuse a time that is no ISO 8601 instant with a UTC offset."""
    if value is None:
        return
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValidationFailed(
            f"{name} must be an ISO 8601 time such as 2024-05-01T12:00:00Z, got {value!r}"
        ) from exc
    if when.tzinfo is None:
        raise ValidationFailed(f"{name} {value!r} has no UTC offset; add Z or +HH:MM")


def _check_origin(origin: CaptureOrigin) -> None:
    """Refuse a saved time that is no ISO 8601 instant with a UTC offset."""
    _check_instant("origin.saved_at", origin.saved_at)
    _check_instant("origin.archived_at", origin.archived_at)


def _check_document(req: CaptureRequest) -> None:
    """A document describes the text handed in with it, and nothing else."""
    if req.document is None:
        return
    if req.text is None:
        raise ValidationFailed(
            "document describes a text read from a document: give that text with it"
            " (it goes with text, not with html or a url alone)"
        )
    _check_instant("document.published_at", req.document.published_at)


def document_of(kept: str | None) -> ProvidedDocument | None:
    """The document kept with an item's source (:func:`capture` writes it), if readable."""
    if kept is None:
        return None
    try:
        return msgspec.json.decode(kept, type=ProvidedDocument)
    except msgspec.MsgspecError:
        # Kept by another version and unreadable now: the text still reads without it.
        return None


def check(req: CaptureRequest, max_bytes: int) -> Checked:
    """Refuse a capture that is missing something, too big or not a page; derive the rest.

    Its one-line fields are cleaned first (:func:`readdod.text.controls.single_line`):
    no control character is stored, whichever client or feed sent it."""
    req = msgspec.structs.replace(
        req,
        intent=single_line(req.intent),
        title=single_line(req.title) if req.title is not None else None,
        url=single_line(req.url) if req.url is not None else None,
        tags=[single_line(t) for t in req.tags],
    )
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
    _check_content(req, max_bytes)
    domain, canonical = _check_url(req.url) if req.url is not None else (None, None)
    if req.priority is not None and req.priority not in PRIORITIES:
        raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
    if req.origin is not None:
        _check_origin(req.origin)
    _check_document(req)
    return Checked(
        req=req,
        intent=intent,
        domain=domain,
        canonical=canonical,
        tags=sorted({t.strip() for t in req.tags if t.strip()}),
        source_type="text" if req.text else "html" if req.html else "url",
        digest=capture_hash(canonical, req),
    )


def _not_processed(row: ItemRow) -> bool:
    """Nothing has been made of the item yet: its intent can still change what will be."""
    if row.status in (S.CAPTURED, S.QUEUED):
        return True
    return row.status == S.ARCHIVED and row.current_run_id is None and row.match_score is None


def _only_intent_differs(found: ItemRow, c: Checked) -> bool:
    req = msgspec.structs.replace(c.req, intent=found.intent_text)
    return found.capture_hash == capture_hash(c.canonical, req)


def _retarget(work: Work, found: ItemRow, c: Checked, now: int) -> ItemRow:
    """Give an item not yet processed the intent a repeat of its capture brings."""
    fields = {"intent_text": c.intent, "capture_hash": c.digest, "updated_at": now}
    if not work.tx.set_status(found.id, found.status, found.status, **fields):
        raise IdempotencyConflict(f"item {found.id} changed meanwhile; capture it again")
    detail = dumps({"intent": {"from": found.intent_text, "to": c.intent}})
    work.tx.insert_event(now, found.id, None, "intent", None, found.status, Trigger.USER, detail)
    return msgspec.structs.replace(found, intent_text=c.intent, capture_hash=c.digest)


def _seen(work: Work, c: Checked) -> tuple[ItemRow | None, str | None]:
    """The item this capture repeats, if any; else the item of the same page (a sibling)."""
    req = c.req
    if req.capture_id:
        found = work.tx.item_by_capture_id(req.capture_id)
        if found is not None:
            if not _same_capture(found.capture_hash, c.digest, req):
                if req.set_intent and _not_processed(found) and _only_intent_differs(found, c):
                    return found, RETARGET
                raise IdempotencyConflict(
                    f"capture_id {req.capture_id!r} was already used for different"
                    f" content (item {found.id}); use a new capture_id"
                )
            return found, None
    if c.canonical is None:
        return None, None
    same_intent = urls.normalise_intent(c.intent)
    same_page = work.tx.items_by_canonical_url(c.canonical)
    for other in same_page:
        # A page sent with its own HTML (say, after a fetch hit a bot wall)
        # is new content: only an exact repeat of it is the same item.
        same_source = (c.source_type == "url" and other.source_type == "url") or _same_capture(
            other.capture_hash, c.digest, req
        )
        if same_source and urls.normalise_intent(other.intent_text) == same_intent:
            return other, None
    return None, same_page[0].id if same_page else None


def _archived_detail(req: CaptureRequest) -> dict[str, object]:
    """What the archive move of an item archived elsewhere records: the reason and when."""
    detail: dict[str, object] = {"reason": "USER_ARCHIVE"}
    if req.origin is not None and req.origin.archived_at:
        detail["archived_at"] = req.origin.archived_at
    return detail


def capture_unit(
    work: Work, c: Checked, now: int, *, auto_process: bool
) -> tuple[ItemRow, bool, bool]:
    """Write the capture (or find it again): (item, created, whether a repeat's intent
    was set)."""
    seen, sibling_of = _seen(work, c)
    if seen is not None and sibling_of == RETARGET:
        return _retarget(work, seen, c, now), False, True
    if seen is not None:
        return seen, False, False
    req = c.req
    row = ItemRow(
        id=ids.ulid(now),
        capture_id=req.capture_id,
        capture_hash=c.digest,
        source_type=c.source_type,
        url=req.url.strip() if req.url else None,
        final_url=None,
        domain=c.domain,
        title=req.title.strip() if req.title and req.title.strip() else None,
        intent_text=c.intent,
        status=S.CAPTURED,
        priority=req.priority or "P2",
        match_score=None,
        tags=dumps(c.tags),
        failure=None,
        archive_reason=None,
        lease_owner=None,
        lease_expires_at=None,
        current_run_id=None,
        orphan_count=0,
        next_attempt_at=0,
        created_at=now,
        updated_at=now,
        canonical_url=c.canonical,
        sibling_of=sibling_of,
    )
    path: list[tuple[Status, Status, Trigger]] = []
    run_id = None
    if req.archived:
        # Finished with elsewhere: the person's own archive, brought along as it was.
        path.append((S.CAPTURED, S.ARCHIVED, Trigger.USER))
        row = msgspec.structs.replace(row, status=S.ARCHIVED, archive_reason="USER_ARCHIVE")
    elif auto_process:
        run_id = ids.ulid(now)
        path.append((S.CAPTURED, S.QUEUED, Trigger.SYSTEM))
        row = msgspec.structs.replace(row, status=S.QUEUED, current_run_id=run_id)
    work.insert(row, path)
    if run_id is not None:
        new_run(work, row.id, "PROCESS", now, run_id=run_id)
    document = None if req.document is None else dumps(req.document)
    if req.html or req.text:
        work.tx.insert_source(row.id, req.html, req.text, document)
    noted: dict[str, object] = {"sibling_of": sibling_of} if sibling_of else {}
    if req.origin is not None:
        noted["origin"] = req.origin
    detail = dumps(noted) if noted else "{}"
    work.tx.insert_event(now, row.id, None, "capture", None, S.CAPTURED, Trigger.USER, detail)
    work.note("item.captured", item_id=row.id, source_type=c.source_type)
    faults.crash_point("tx:capture")
    for src, dst, trigger in path:
        work.record(
            now,
            row.id,
            run_id,
            src,
            dst,
            trigger,
            _archived_detail(req) if dst is S.ARCHIVED else None,
        )
    return row, True, False
