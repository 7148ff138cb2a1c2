-- Reports for health and stats, and what retention prunes.

-- name: run_outcomes_since
SELECT status, count(*), avg(finished_at - coalesce(started_at, created_at))
 FROM runs WHERE finished_at >= ? GROUP BY status;

-- name: backlog
SELECT count(*), min(max(updated_at, next_attempt_at)) FROM items
 WHERE status = 'QUEUED';

-- name: failures_since
-- Moves into a FAILED_* state (every step, export included).
SELECT count(*) FROM events WHERE at >= ? AND kind = 'transition'
 AND to_status LIKE 'FAILED\_%' ESCAPE '\';

-- name: items_by_status
SELECT status, count(*) FROM items GROUP BY status;

-- name: runs_by_status
SELECT status, count(*) FROM runs GROUP BY status;

-- name: attempts_by_status
SELECT status, count(*) FROM attempts GROUP BY status;

-- name: step_durations
-- The newest finished steps that recorded how long they took.
SELECT json_extract(detail, '$.step'), json_extract(detail, '$.duration_ms')
 FROM events WHERE kind = 'step' AND json_extract(detail, '$.duration_ms') IS NOT NULL
 ORDER BY seq DESC LIMIT ?;

-- name: token_totals
-- Tokens ever spent: counters that retention never lowers.
SELECT coalesce((SELECT value FROM counters WHERE name = 'prompt_tokens'), 0),
 coalesce((SELECT value FROM counters WHERE name = 'completion_tokens'), 0);

-- ---------------------------------------------------------------- retention

-- name: prunable_runs
-- Finished runs past their retention, by outcome, of any item: never the item's
-- current run (its latest outcome, its last failure), the run it shows, nor its
-- latest export (when it shipped, or how its export failed).
SELECT r.run_id FROM runs r JOIN items i ON i.id = r.item_id
 WHERE r.run_id IS NOT i.current_run_id AND r.run_id IS NOT i.ready_run_id
 AND NOT (r.mode = 'EXPORT' AND r.run_id = (SELECT max(x.run_id) FROM runs x
          WHERE x.item_id = r.item_id AND x.mode = 'EXPORT')) AND (
  (r.status = 'succeeded' AND coalesce(r.finished_at, r.created_at) < :finished)
  OR (r.status = 'cancelled' AND coalesce(r.finished_at, r.created_at) < :cancelled)
  OR (r.status IN ('failed', 'timeout')
      AND coalesce(r.finished_at, r.created_at) < :failed));

-- name: prunable_attempts
SELECT attempt_id FROM attempts WHERE run_id IN ({prunable_runs});

-- name: prunable_events
-- An event of a run goes with its run and stays while its run stays (the runs an
-- item shows keep theirs); an event of no run, or of a run gone already, goes at
-- its own age. None is newer than the latest cut-off (:newest). The capture event
-- stays: it holds where the item came from (an import's origin: when it was saved
-- and archived there, its highlights).
SELECT seq FROM events WHERE at < :newest AND kind <> 'capture' AND (
 run_id IN ({prunable_runs})
 OR (at < :finished AND (run_id IS NULL
     OR NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = events.run_id))));

-- name: prunable_artifacts
-- Old superseded versions of any item: none a person may see (their newest edit,
-- the newest system version, those of the item's current run and of the run it
-- shows); the newest :keep of them stay.
SELECT item_id, artifact_type, version FROM (
 SELECT a.item_id, a.artifact_type, a.version, row_number() OVER (
   PARTITION BY a.item_id, a.artifact_type ORDER BY a.version DESC) AS rank
 FROM artifacts a JOIN items i ON i.id = a.item_id
 WHERE a.created_at < :finished
  AND NOT (a.created_by = 'system'
           AND (a.run_id IS i.current_run_id OR a.run_id IS i.ready_run_id))
  AND a.version NOT IN (SELECT max(s.version) FROM artifacts s
   WHERE s.item_id = a.item_id AND s.artifact_type = a.artifact_type
     AND (s.created_by = 'system' OR s.discarded = 0) GROUP BY s.created_by)
) WHERE rank > :keep;

-- name: prunable_chunks
SELECT run_id FROM chunks WHERE run_id IN ({prunable_runs});

-- name: count_prunable_runs
SELECT count(*) FROM ({prunable_runs});

-- name: count_prunable_attempts
SELECT count(*) FROM ({prunable_attempts});

-- name: count_prunable_events
SELECT count(*) FROM ({prunable_events});

-- name: count_prunable_artifacts
SELECT count(*) FROM ({prunable_artifacts});

-- name: count_prunable_chunks
SELECT count(*) FROM ({prunable_chunks});

-- name: prune_events
-- First, while the runs they go with are still there to be found.
DELETE FROM events WHERE seq IN ({prunable_events});

-- name: prune_chunks
DELETE FROM chunks WHERE run_id IN ({prunable_runs});

-- name: prune_attempts
DELETE FROM attempts WHERE run_id IN ({prunable_runs});

-- name: prune_runs
DELETE FROM runs WHERE run_id IN ({prunable_runs});

-- name: prune_artifacts
DELETE FROM artifacts WHERE (item_id, artifact_type, version) IN ({prunable_artifacts});
