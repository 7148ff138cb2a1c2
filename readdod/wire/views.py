"""Wire views of store rows: what `get`, `list`, `show` and `watch` send.

Pure functions from the store's row Structs (plain data, :mod:`readdod.store.rows`)
to the protocol's Structs: the caller reads the rows, these only shape them. Kept
apart from the core so reading code need not wade through state changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from readdod.items import cards
from readdod.items.models import (
    CHUNK_ACTIVE,
    Artifact,
    ArtifactMeta,
    Attempt,
    AttemptFailure,
    Chunk,
    ChunkProgress,
    Event,
    Feed,
    Item,
    Run,
)
from readdod.items.states import Status
from readdod.runtime.clock import iso
from readdod.steps import NAMES, decode_failure, wire_step
from readdod.store.rows import (
    ArtifactRow,
    AttemptRow,
    ChunkRow,
    EventRow,
    FeedRow,
    ItemRow,
    RunRow,
)


def item_view(row: ItemRow) -> Item:
    return Item(
        id=row.id,
        status=Status(row.status),
        source_type=row.source_type,  # type: ignore[arg-type]
        url=row.url,
        final_url=row.final_url,
        domain=row.domain,
        title=row.title,
        intent=row.intent_text,
        priority=row.priority,  # type: ignore[arg-type]
        match_score=row.match_score,
        tags=msgspec.json.decode(row.tags, type=list[str]),
        failure=decode_failure(row.failure) if row.failure else None,
        archive_reason=row.archive_reason,  # type: ignore[arg-type]
        current_run_id=row.current_run_id,
        capture_id=row.capture_id,
        created_at=iso(row.created_at) or "",
        updated_at=iso(row.updated_at) or "",
        canonical_url=row.canonical_url,
        sibling_of=row.sibling_of,
        ready_run_id=row.ready_run_id,
        # Only a PROCESSING item's lease is held; any other status has none to show.
        lease_owner=row.lease_owner if row.status == Status.PROCESSING else None,
        lease_expires_at=iso(row.lease_expires_at) if row.status == Status.PROCESSING else None,
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
        discarded=bool(row.discarded),
    )


def shown_view(rows: dict[str, ArtifactRow]) -> dict[str, Artifact]:
    """What an item shows, by type; the card composed from the shown summary, score
    and todos (:mod:`readdod.items.cards`), so a person's edit of any of them is on it."""
    out = {kind: artifact_view(row) for kind, row in sorted(rows.items())}
    card = out.get("card")
    if card is None:
        return out

    def part(kind: str) -> cards.Shown | None:
        art = out.get(kind)
        if art is None:
            return None
        return cards.Shown(
            created_by=art.created_by,
            created_at=rows[kind].created_at,
            version=art.version,
            payload=art.payload,
        )

    composed = cards.compose(
        cards.Shown(
            created_by=card.created_by,
            created_at=rows["card"].created_at,
            version=card.version,
            payload=card.payload,
        ),
        summary=part("summary"),
        score=part("score"),
        todos=part("todos"),
    )
    out["card"] = msgspec.structs.replace(card, payload=composed)
    return out


def _step_name(step: str | None) -> str | None:
    """A step as the contract names it (``extract``, ``summarize``, ...), as failures do."""
    if step is None:
        return None
    try:
        return wire_step(step)
    except KeyError:
        return step


def attempt_view(row: AttemptRow) -> Attempt:
    return Attempt(
        attempt_id=row.attempt_id,
        run_id=row.run_id,
        mode=row.mode,  # type: ignore[arg-type]
        status=row.status,  # type: ignore[arg-type]
        first_step=_step_name(row.first_step),
        last_step=_step_name(row.last_step),
        worker_id=row.worker_id,
        error_code=row.error_code,
        error_message=row.error_message,
        created_at=iso(row.created_at) or "",
        started_at=iso(row.started_at),
        finished_at=iso(row.finished_at),
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cached_tokens=row.cached_tokens,
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


def ledger(
    runs: Sequence[RunRow],
    artifacts: Sequence[ArtifactRow],
    events: Sequence[EventRow],
    attempts: Sequence[AttemptRow],
) -> list[Run]:
    """Every run with what it produced (steps reached, models, tokens) and how it failed.

    A run's tokens are its attempts': each counted what it spent as the model server
    reported it (finished chunks, steps, failed steps), so nothing is lost to a
    pause, a crash or a retry, and nothing is counted twice.
    """
    spent: dict[str, list[int]] = {}
    for a in attempts:
        total = spent.setdefault(a.run_id, [0, 0, 0])
        total[0] += a.prompt_tokens
        total[1] += a.completion_tokens
        total[2] += a.cached_tokens
    by_run: dict[str, list[ArtifactRow]] = {}
    for art in artifacts:
        if art.created_by == "system" and art.run_id is not None:
            by_run.setdefault(art.run_id, []).append(art)
    failures: dict[str, list[AttemptFailure]] = {}
    for ev in events:
        if ev.kind == "transition" and ev.run_id and (ev.to_status or "").startswith("FAILED_"):
            detail = msgspec.json.decode(ev.detail)
            failures.setdefault(ev.run_id, []).append(
                AttemptFailure(
                    at=iso(ev.at) or "",
                    step=detail.get("step"),
                    error_code=detail.get("error_code"),
                    message=detail.get("message"),
                    model=detail.get("model"),
                    prompt_tokens=int(detail.get("prompt_tokens") or 0),
                    completion_tokens=int(detail.get("completion_tokens") or 0),
                    cached_tokens=int(detail.get("cached_tokens") or 0),
                )
            )
    out = []
    for r in runs:
        made = sorted(
            by_run.get(r.run_id, []),
            key=lambda a: NAMES.index(a.artifact_type) if a.artifact_type in NAMES else 99,
        )
        metas = [msgspec.json.decode(a.meta, type=ArtifactMeta) for a in made]
        failed = failures.get(r.run_id, [])
        costs: list[ArtifactMeta | AttemptFailure] = [*metas, *failed]
        out.append(
            msgspec.structs.replace(
                run_view(r),
                error_message=r.error_message,
                steps_done=[a.artifact_type for a in made],
                models=sorted({m.model for m in costs if m.model}),
                prompt_tokens=spent.get(r.run_id, [0, 0, 0])[0],
                completion_tokens=spent.get(r.run_id, [0, 0, 0])[1],
                cached_tokens=spent.get(r.run_id, [0, 0, 0])[2],
                failures=failed,
            )
        )
    return out


def chunk_progress(rows: Sequence[ChunkRow]) -> dict[str, ChunkProgress]:
    """Per step: how many of its chunks are done, active (processing or retrying), failed."""
    out: dict[str, ChunkProgress] = {}
    for r in rows:
        p = out.setdefault(r.step, ChunkProgress(done=0, total=0))
        p.total += 1
        p.done += r.status == "done"
        p.active += r.status in CHUNK_ACTIVE
        p.retrying += r.status == "retrying"
        p.error += r.status == "error"
        p.retries += r.retries
    return out


def chunk_view(row: ChunkRow) -> Chunk:
    return Chunk(
        step=row.step,
        idx=row.idx,
        status=row.status,  # type: ignore[arg-type]
        retries=row.retries,
        last_error_code=row.last_error_code,
        last_error_message=row.last_error_message,
        model=row.model,
        updated_at=iso(row.updated_at) or "",
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


def feed_view(row: FeedRow) -> Feed:
    return Feed(
        id=row.id,
        url=row.url,
        intent=row.intent,
        tags=msgspec.json.decode(row.tags, type=list[str]),
        title=row.title,
        created_at=iso(row.created_at) or "",
        next_poll_at=iso(row.next_poll_at) or "",
        last_polled_at=iso(row.last_polled_at),
        last_ok_at=iso(row.last_ok_at),
        failures=row.failures,
        last_error_code=row.last_error_code,
        last_error=row.last_error,
        entries_captured=row.entries_captured,
    )
