"""Bulk recovery: every orphaned PROCESSING item requeued or failed in a handful of statements.

What a move per item would write, read from the items before they change,
several times cheaper per orphan; the failure is encoded in SQL JSON as
:class:`readdod.models.Failure` encodes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from readdod.models import WIRE_STEPS

if TYPE_CHECKING:
    from readdod.store.sqlite.unit import SqliteUnitOfWork


def orphan_processing(
    tx: SqliteUnitOfWork,
    now: int,
    *,
    expired_before: int | None,
    max_orphanings: int,
    reason: str,
    error_code: str,
    message_format: str,
    failed_at: str,
    sample: int,
    attempt_stamp: str,
) -> tuple[int, int, list[tuple[str, str | None, int, str, bool, str | None]]]:
    """Requeue (or fail, past the crash-loop limit) every orphaned PROCESSING item at once.

    Orphans are the PROCESSING items (all of them, or those whose lease ran
    out before ``expired_before``). Each gets ``orphan_count + 1``; those
    reaching ``max_orphanings`` fail at their run's current step with
    ``error_code`` and ``printf(message_format, count, step, id)``, the
    others go back to QUEUED, their run to 'queued'; either way the run's chunks in
    flight go back to pending. One transition event
    per item, as a single move would write. A handful of statements
    whatever the count (events and runs first, read from the items before
    they change), several times cheaper per orphan than a move each. Each
    lost attempt fails with ``error_code``; a requeued run gets a RESUME
    attempt whose id starts with ``attempt_stamp``. Returns
    (requeued, failed, the first ``sample`` orphans by id as (id, run_id,
    orphan_count, step, failed, message)).
    """
    where = "i.status = 'PROCESSING'"
    if expired_before is not None:
        where += " AND i.lease_expires_at < :before"
    args: dict[str, Any] = {
        "now": now,
        "before": expired_before,
        "max": max_orphanings,
        "reason": reason,
        "code": error_code,
        "fmt": message_format,
        "at": failed_at,
    }
    # Named parameters, so through the connection; counted as the unit's execute counts.
    tx.flush()
    c = tx.conn
    tx.statements += 1
    total, failed = c.execute(
        f"SELECT count(*), coalesce(sum(i.orphan_count + 1 >= :max), 0) FROM items i WHERE {where}",
        args,
    ).fetchone()
    if not total:
        return 0, 0, []
    # Only a failing orphan needs its run's step (and attempts): read it there alone.
    fail = "i.orphan_count + 1 >= :max"
    step = (
        "coalesce((SELECT r.current_step FROM runs r WHERE r.run_id = i.current_run_id),"
        " 'extraction')"
    )
    # A failure names the step by its wire name (models.wire_step), in its message too.
    wire = "CASE {} {} END".format(
        step, " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in WIRE_STEPS.items())
    )
    message = f"printf(:fmt, i.orphan_count + 1, {wire}, i.id)"
    # The failed state, as the orchestrator's _failed_state picks it.
    failed_state = f"CASE WHEN {step} = 'extraction' THEN 'FAILED_EXTRACTION' ELSE 'FAILED_AI' END"
    rows = c.execute(
        f"SELECT i.id, i.current_run_id, i.orphan_count + 1, {step}, {fail},"
        f" CASE WHEN {fail} THEN {message} END FROM items i WHERE {where} ORDER BY i.id"
        " LIMIT :sample",
        {**args, "sample": sample},
    ).fetchall()
    c.execute(
        "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger,"
        " detail)"
        " SELECT :now, i.id, i.current_run_id, 'transition', 'PROCESSING',"
        f"        CASE WHEN {fail} THEN {failed_state} ELSE 'QUEUED' END, 'system',"
        f"        CASE WHEN {fail}"
        f"             THEN json_object('step', {step}, 'error_code', :code,"
        f"                              'message', substr({message}, 1, 500),"
        "                              'next_attempt_at', NULL)"
        "             ELSE json_object('reason', :reason, 'orphan_count', i.orphan_count + 1)"
        "        END"
        f"   FROM items i WHERE {where} ORDER BY i.id",
        args,
    )
    c.execute(
        "UPDATE runs SET status = 'queued'"
        f" WHERE run_id IN (SELECT i.current_run_id FROM items i WHERE {where} AND NOT {fail})",
        args,
    )
    # The attempts the lost workers ran are over; a requeued run gets a new one.
    c.execute(
        "UPDATE attempts SET status = 'failed', error_code = :code, finished_at = :now,"
        " error_message = 'the worker running this attempt was lost (' || :reason || ')',"
        " last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)"
        " WHERE status IN ('queued', 'running')"
        f" AND run_id IN (SELECT i.current_run_id FROM items i WHERE {where})",
        args,
    )
    c.execute(
        "INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, created_at)"
        " SELECT :stamp || upper(hex(randomblob(8))), i.current_run_id, i.id, 'RESUME',"
        f" 'queued', :now FROM items i WHERE {where} AND NOT {fail}"
        " AND i.current_run_id IS NOT NULL",
        {**args, "stamp": attempt_stamp},
    )
    # No chunk of an orphaned run stays in flight: it starts again when the run resumes.
    c.execute(
        "UPDATE chunks SET status = 'pending', updated_at = :now"
        " WHERE status IN ('processing', 'retrying')"
        f" AND run_id IN (SELECT i.current_run_id FROM items i WHERE {where})",
        args,
    )
    if failed:
        c.execute(
            "UPDATE runs SET status = 'failed', error_code = :code,"
            f" error_message = substr({message}, 1, 1000), finished_at = :now"
            f" FROM items i WHERE i.current_run_id = runs.run_id AND {where} AND {fail}",
            args,
        )
        tx.statements += 1
    # The failure as models.Failure encodes it (omit_defaults: attempts 1 and
    # auto_retries 0 are left out; a path that names no key removes nothing).
    attempts = "coalesce((SELECT r.attempts FROM runs r WHERE r.run_id = i.current_run_id), 1)"
    # WORKER_LOST is retryable (errors.RETRYABLE) but is never retried by
    # itself: next_attempt_at is set to 0 below.
    failure = (
        f"json_remove(json_object('failed_step', {wire}, 'error_code', :code,"
        f" 'message', {message}, 'retryable', json('true'), 'attempts', {attempts},"
        " 'last_attempt_at', :at, 'auto_retries', i.auto_retries),"
        f" CASE WHEN {attempts} = 1 THEN '$.attempts' ELSE '$.none' END,"
        " CASE WHEN i.auto_retries = 0 THEN '$.auto_retries' ELSE '$.none' END)"
    )
    # Every SET expression reads the row as it was, so `fail` is the old count's.
    c.execute(
        f"UPDATE items AS i SET status = CASE WHEN {fail} THEN {failed_state} ELSE 'QUEUED'"
        " END, updated_at = :now, lease_owner = NULL, lease_expires_at = NULL,"
        f" orphan_count = i.orphan_count + 1,"
        f" failure = CASE WHEN {fail} THEN {failure} ELSE i.failure END,"
        f" next_attempt_at = CASE WHEN {fail} THEN 0 ELSE i.next_attempt_at END"
        f" WHERE {where}",
        args,
    )
    tx.statements += 7
    return (
        int(total) - int(failed),
        int(failed),
        [(r[0], r[1], int(r[2]), r[3], bool(r[4]), r[5]) for r in rows],
    )
