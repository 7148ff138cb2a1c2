-- Artifacts (versioned, a person's version winning) and the chunks of a long text.

-- name: insert_next_artifact
-- The next version of an item's artifact type; versions only grow.
INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,
 payload, meta, created_at)
 SELECT ?, ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ? FROM artifacts
 WHERE item_id = ? AND artifact_type = ? RETURNING version;

-- name: artifacts_of_run
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = ? AND run_id = ? AND created_by = 'system';

-- name: run_payloads
-- What the READY gate reads of a run's system artifacts of some types (a JSON array).
SELECT artifact_type, run_id, payload FROM artifacts WHERE item_id = ?
 AND run_id = ? AND created_by = 'system'
 AND artifact_type IN (SELECT value FROM json_each(?));

-- name: gate_inputs
-- run_payloads, and a person's scores not set aside.
SELECT artifact_type, run_id, payload, created_by, version FROM artifacts
 WHERE item_id = ? AND artifact_type IN (SELECT value FROM json_each(?))
 AND (created_by = 'system' AND run_id = ?
  OR created_by = 'user' AND discarded = 0 AND artifact_type = 'score');

-- name: step_slot
-- All a step's commit needs to know, in one statement (see the unit's step_slot).
SELECT (SELECT orphan_count FROM items WHERE id = ? AND status = 'PROCESSING'
        AND lease_owner = ? AND current_run_id = ? AND lease_token = coalesce(?, lease_token)),
 coalesce(max(version), 0), coalesce(max(created_by = 'user' AND discarded = 0), 0),
 max(CASE WHEN run_id = ? AND created_by = 'system' THEN version END)
 FROM artifacts WHERE item_id = ? AND artifact_type = ?;

-- name: step_slot_locked
-- step_slot in a writing unit: SQLite's one writer holds the whole database.
{step_slot};

-- name: latest_artifact
-- The newest version, a person's edit winning over any system version.
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = ? AND artifact_type = ? AND discarded = 0
 ORDER BY created_by = 'user' DESC, version DESC LIMIT 1;

-- name: artifact_version
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = ? AND artifact_type = ? AND version = ?;

-- name: user_version
-- A person's newest version of a type that is not set aside.
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = ? AND artifact_type = ? AND created_by = 'user'
 AND discarded = 0 ORDER BY version DESC LIMIT 1;

-- name: discard_user_versions
UPDATE artifacts SET discarded = 1 WHERE item_id = ? AND artifact_type = ?
 AND created_by = 'user' AND discarded = 0;

-- name: reindex_extraction
-- The full-text body of an item is the extraction it now shows.
UPDATE items_fts SET body = coalesce((SELECT json_extract(a.payload, '$.text')
   FROM artifacts a WHERE a.item_id = ? AND a.artifact_type = 'extraction'
    AND a.discarded = 0 ORDER BY a.created_by = 'user' DESC, a.version DESC
  LIMIT 1), '')
 WHERE rowid = (SELECT rowid FROM items WHERE id = ?);

-- name: shown_artifacts
-- Per type, a person's version first, then the system's of the run shown
-- (an extraction that run reused is the newest one before it).
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = :item AND (created_by = 'user' AND discarded = 0
  OR created_by = 'system' AND (run_id IS :run OR artifact_type = 'extraction'))
 ORDER BY artifact_type, created_by = 'user' DESC, run_id IS :run DESC, version DESC;

-- name: all_artifacts
SELECT {artifact_columns} FROM artifacts WHERE item_id = ? ORDER BY artifact_type, version;

-- ---------------------------------------------------------------- chunks

-- name: chunks_of_run
SELECT {chunk_columns} FROM chunks WHERE run_id = ? ORDER BY step, idx;

-- name: chunks_of_step
SELECT {chunk_columns} FROM chunks WHERE run_id = ? AND step = ? ORDER BY step, idx;

-- name: delete_chunks
DELETE FROM chunks WHERE run_id = ? AND step = ?;

-- name: insert_pending_chunks
-- A step's chunks afresh: indexes 0 to total - 1, pending.
WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i + 1 < :total)
INSERT INTO chunks (run_id, step, idx, status, model, updated_at)
 SELECT :run, :step, i, 'pending', :model, :now FROM g;

-- name: reopen_chunks
-- Chunks left unfinished by a failure go back to pending, for a model.
UPDATE chunks SET status = 'pending', model = ?, updated_at = ?
 WHERE run_id = ? AND step = ? AND status != 'done';

-- name: retry_chunks
-- A run queued again: its failed chunks wait to be taken up.
UPDATE chunks SET status = 'pending', updated_at = ? WHERE run_id = ? AND status = 'error';

-- name: settle_chunks
-- A run's chunks in flight go back to pending.
UPDATE chunks SET status = 'pending', updated_at = ?
 WHERE run_id = ? AND status IN ('processing', 'retrying');
