-- Leases: the claim, who holds what, and the set-based requeue of lost leases.

-- name: holds_lease
-- A NULL token fences by owner and run alone.
SELECT 1 FROM items WHERE id = ? AND status = 'PROCESSING'
 AND lease_owner = ? AND current_run_id = ? AND lease_token = coalesce(?, lease_token);

-- name: holds_lease_locked
-- holds_lease in a writing unit: SQLite's one writer holds the whole database.
{holds_lease};

-- name: queue_due
SELECT 1 FROM items WHERE status = 'QUEUED' AND next_attempt_at <= ? LIMIT 1;

-- name: claim_items
-- Up to LIMIT due QUEUED items, P0 first then oldest, leased to an owner;
-- every claim gives the item a new fencing token.
UPDATE items SET status = 'PROCESSING', lease_owner = :owner, lease_expires_at = :until,
 updated_at = :now, lease_token = lease_token + 1
 WHERE id IN (SELECT id FROM items WHERE status = 'QUEUED' AND next_attempt_at <= :now
              ORDER BY priority, created_at LIMIT :limit)
 AND status = 'QUEUED'
 RETURNING {item_columns};

-- name: renew_leases
-- Every lease an owner still holds among the ids (a JSON array).
UPDATE items SET lease_expires_at = :until WHERE lease_owner = :owner
 AND status = 'PROCESSING' AND id IN (SELECT value FROM json_each(:ids)) RETURNING id;

-- name: held_by
SELECT {item_columns} FROM items WHERE status = 'PROCESSING' AND lease_owner = ?;

-- ---------------------------------------------------------------- lost leases

-- name: lost
-- A lease that is lost: its item is PROCESSING and the lease ran out before
-- :before (every lease, for a daemon that holds the store alone), or its owner
-- is an earlier life of this daemon (its id starts with :mine; NULL: none).
i.status = 'PROCESSING' AND (i.lease_expires_at < :before
 OR substr(i.lease_owner, 1, length(:mine)) = :mine);

-- name: lost_leases
-- Lost leases of items already lost :at_least times in a row, by id.
SELECT {item_columns} FROM items i WHERE {lost} AND i.orphan_count >= :at_least ORDER BY i.id;

-- name: lost_below
-- Lost leases of items lost fewer than :below times in a row (counting this one).
{lost} AND i.orphan_count + 1 < :below;

-- name: take_lost_below
-- How many lost leases this recovery requeues (one writer: none is taken by
-- another); no ids, as the statements below find the items by the condition.
SELECT count(*), NULL FROM items i WHERE {lost_below};

-- name: sample_lost
SELECT i.id, i.current_run_id, i.orphan_count + 1 FROM items i WHERE {lost_below}
 ORDER BY i.id LIMIT :sample;

-- name: requeue_lost_events
-- One transition event per item, as a move would write it.
INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)
 SELECT :now, i.id, i.current_run_id, 'transition', 'PROCESSING', 'QUEUED', 'system',
        json_object('reason', :reason, 'orphan_count', i.orphan_count + 1)
   FROM items i WHERE {lost_below} ORDER BY i.id;

-- name: requeue_lost_runs
UPDATE runs SET status = 'queued'
 WHERE run_id IN (SELECT i.current_run_id FROM items i WHERE {lost_below});

-- name: end_lost_attempts
-- The attempts the lost workers ran are over: cancelled, as a killed worker's run is (seed 002).
UPDATE attempts SET status = 'cancelled', error_code = :code, finished_at = :now,
 error_message = 'the worker running this attempt was lost (' || :reason || ')',
 last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE {open_attempt}
 AND run_id IN (SELECT i.current_run_id FROM items i WHERE {lost_below});

-- name: resume_lost_runs
-- A requeued run resumes as a new attempt.
INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, created_at)
 SELECT :stamp || upper(hex(randomblob(8))), i.current_run_id, i.id, 'RESUME', 'queued', :now
   FROM items i WHERE {lost_below} AND i.current_run_id IS NOT NULL;

-- name: settle_lost_chunks
-- No chunk of a lost run stays in flight: it starts again when the run resumes.
UPDATE chunks SET status = 'pending', updated_at = :now
 WHERE status IN ('processing', 'retrying')
 AND run_id IN (SELECT i.current_run_id FROM items i WHERE {lost_below});

-- name: requeue_lost_items
UPDATE items AS i SET status = 'QUEUED', updated_at = :now, lease_owner = NULL,
 lease_expires_at = NULL, orphan_count = i.orphan_count + 1
 WHERE {lost_below};
