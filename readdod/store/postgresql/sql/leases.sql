-- Leases: the claim, who holds what, and the set-based requeue of lost leases.

-- name: holds_lease
-- A NULL token fences by owner and run alone.
SELECT 1 FROM items WHERE id = %s AND status = 'PROCESSING'
 AND lease_owner = %s AND current_run_id = %s AND lease_token = coalesce(%s, lease_token);

-- name: holds_lease_locked
-- holds_lease in a writing unit: the row stays locked until the unit commits, so
-- no claim or requeue takes the lease between this check and the writes it allows.
{holds_lease} FOR NO KEY UPDATE;

-- name: queue_due
SELECT 1 FROM items WHERE status = 'QUEUED' AND next_attempt_at <= %s LIMIT 1;

-- name: claim_items
-- Up to %(limit)s due QUEUED items, P0 first then oldest, leased to an owner.
-- SKIP LOCKED: daemons claiming at once each take other rows, none waits.
-- MATERIALIZED: the pick runs once (as a subquery it may run again and pick more).
-- Every claim gives the item a new fencing token.
WITH picked AS MATERIALIZED (
  SELECT id AS picked_id FROM items WHERE status = 'QUEUED' AND next_attempt_at <= %(now)s
   ORDER BY priority, created_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE items SET status = 'PROCESSING', lease_owner = %(owner)s,
 lease_expires_at = %(until)s, updated_at = %(now)s, lease_token = lease_token + 1
 FROM picked WHERE id = picked_id
 RETURNING {item_columns};

-- name: renew_leases
-- Every lease an owner still holds among the ids, in one statement. A row another
-- transaction holds locked (most often this daemon's own step commit) is skipped,
-- not waited for: waiting for hundreds of rows while holding the ones already
-- renewed stalls every commit behind it, and deadlocks with the commits that lock
-- them in another order. A skipped row still counts as held if it was when the
-- statement began; it is renewed at the next beat, and a lease lost meanwhile is
-- caught by the fencing token.
WITH mine AS (
  SELECT id FROM items WHERE lease_owner = %(owner)s AND status = 'PROCESSING'
   AND id = ANY(%(ids)s)),
renewed AS (
  UPDATE items SET lease_expires_at = %(until)s WHERE id IN (
    SELECT id FROM items WHERE id IN (SELECT id FROM mine)
     AND lease_owner = %(owner)s AND status = 'PROCESSING'
     FOR NO KEY UPDATE SKIP LOCKED)
  RETURNING id)
SELECT id FROM mine;

-- name: held_by
SELECT {item_columns} FROM items WHERE status = 'PROCESSING' AND lease_owner = %s;

-- ---------------------------------------------------------------- lost leases

-- name: lost
-- A lease that is lost: its item is PROCESSING and the lease ran out before
-- %(before)s (every lease, for a daemon that holds the store alone), or its
-- owner is an earlier life of this daemon (its id starts with %(mine)s).
i.status = 'PROCESSING' AND (i.lease_expires_at < %(before)s
 OR starts_with(i.lease_owner, %(mine)s::text));

-- name: lost_leases
-- Lost leases of items already lost %(at_least)s times in a row, by id.
SELECT {item_columns} FROM items i WHERE {lost} AND i.orphan_count >= %(at_least)s
 ORDER BY i.id;

-- name: lost_below
-- Lost leases of items lost fewer than %(below)s times in a row (counting this one).
{lost} AND i.orphan_count + 1 < %(below)s;

-- name: take_lost_below
-- The lost leases this recovery requeues, locked (how many, their ids); another
-- daemon recovering at the same moment skips them rather than requeue them twice.
WITH taken AS (SELECT i.id FROM items i WHERE {lost_below} ORDER BY i.id
               FOR UPDATE SKIP LOCKED)
SELECT count(*), array_agg(id) FROM taken;

-- name: sample_lost
SELECT i.id, i.current_run_id, i.orphan_count + 1 FROM items i
 WHERE i.id = ANY(%(ids)s) ORDER BY i.id LIMIT %(sample)s;

-- name: requeue_lost_events
-- One transition event per item, as a move would write it.
INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)
 SELECT %(now)s, i.id, i.current_run_id, 'transition', 'PROCESSING', 'QUEUED', 'system',
        jsonb_build_object('reason', %(reason)s::text, 'orphan_count', i.orphan_count + 1)::text
   FROM items i WHERE i.id = ANY(%(ids)s) ORDER BY i.id;

-- name: requeue_lost_runs
UPDATE runs SET status = 'queued'
 WHERE run_id IN (SELECT i.current_run_id FROM items i WHERE i.id = ANY(%(ids)s));

-- name: end_lost_attempts
-- The attempts the lost workers ran are over: cancelled, as a killed worker's run is (seed 002).
UPDATE attempts SET status = 'cancelled', error_code = %(code)s, finished_at = %(now)s,
 error_message = 'the worker running this attempt was lost (' || %(reason)s::text || ')',
 last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE {open_attempt}
 AND run_id IN (SELECT i.current_run_id FROM items i WHERE i.id = ANY(%(ids)s));

-- name: resume_lost_runs
-- A requeued run resumes as a new attempt.
INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, created_at)
 SELECT %(stamp)s::text || upper(substr(md5(random()::text || i.id), 1, 16)),
        i.current_run_id, i.id, 'RESUME', 'queued', %(now)s
   FROM items i WHERE i.id = ANY(%(ids)s) AND i.current_run_id IS NOT NULL;

-- name: settle_lost_chunks
-- No chunk of a lost run stays in flight: it starts again when the run resumes.
UPDATE chunks SET status = 'pending', updated_at = %(now)s
 WHERE status IN ('processing', 'retrying')
 AND run_id IN (SELECT i.current_run_id FROM items i WHERE i.id = ANY(%(ids)s));

-- name: requeue_lost_items
UPDATE items AS i SET status = 'QUEUED', updated_at = %(now)s, lease_owner = NULL,
 lease_expires_at = NULL, orphan_count = i.orphan_count + 1
 WHERE i.id = ANY(%(ids)s);
