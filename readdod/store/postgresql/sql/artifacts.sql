-- Artifacts (versioned, a person's version winning) and the chunks of a long text.

-- name: insert_next_artifact
-- The next version of an item's artifact type; versions only grow.
INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,
 payload, meta, created_at)
 SELECT %s, %s, coalesce(max(version), 0) + 1, %s, %s, %s, %s, %s FROM artifacts
 WHERE item_id = %s AND artifact_type = %s RETURNING version;

-- name: add_artifact
INSERT INTO artifacts (item_id, artifact_type, version, run_id, payload, meta,
 created_at, created_by) VALUES (%s, %s, %s, %s, %s, %s, %s, 'system');

-- name: artifacts_of_run
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = %s AND run_id = %s AND created_by = 'system';

-- name: run_payloads
SELECT artifact_type, run_id, payload FROM artifacts WHERE item_id = %s
 AND run_id = %s AND created_by = 'system' AND artifact_type = ANY(%s);

-- name: gate_inputs
SELECT artifact_type, run_id, payload, created_by, version FROM artifacts
 WHERE item_id = %s AND artifact_type = ANY(%s) AND (created_by = 'system'
 AND run_id = %s OR created_by = 'user' AND discarded = 0 AND artifact_type = 'score');

-- name: gate_inputs_of_runs
-- gate_inputs for several (item, run) pairs at once, each row with its item.
SELECT a.item_id, a.artifact_type, a.run_id, a.payload, a.created_by, a.version
 FROM unnest(%b::text[], %b::text[]) AS k(item_id, run_id)
 JOIN artifacts a ON a.item_id = k.item_id
 WHERE a.artifact_type = ANY(%b::text[]) AND (a.created_by = 'system' AND a.run_id = k.run_id
  OR a.created_by = 'user' AND a.discarded = 0 AND a.artifact_type = 'score');

-- name: lease_of_step
-- The orphan count of an item while a lease holds it (a fragment of step_slot).
SELECT orphan_count FROM items WHERE id = %s AND status = 'PROCESSING'
 AND lease_owner = %s AND current_run_id = %s AND lease_token = coalesce(%s, lease_token);

-- name: versions_of_step
-- The rest of step_slot, once the lease is known.
SELECT (SELECT orphan_count FROM lease),
 coalesce(max(version), 0), coalesce(bool_or(created_by = 'user' AND discarded = 0), false),
 max(CASE WHEN run_id = %s AND created_by = 'system' THEN version END)
 FROM artifacts WHERE item_id = %s AND artifact_type = %s;

-- name: step_slots_locked
-- step_slot_locked for a batch's units at once: one row per slot asked for, by its
-- ordinal, and the item's row where the lease holds (those rows locked, in key order).
WITH k AS (
 SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[])
  WITH ORDINALITY AS k(item_id, artifact_type, owner, run_id, token, n)),
lease AS (
 SELECT k.n, {item_columns} FROM items i JOIN k ON i.id = k.item_id
  AND i.status = 'PROCESSING' AND i.lease_owner = k.owner AND i.current_run_id = k.run_id
  AND i.lease_token = coalesce(k.token, i.lease_token)
  ORDER BY i.id FOR NO KEY UPDATE OF i)
SELECT k.n, v.newest, v.edited, v.existing, l.* FROM k
 LEFT JOIN lease l ON l.n = k.n
 CROSS JOIN LATERAL (
  SELECT coalesce(max(a.version), 0) AS newest,
   coalesce(bool_or(a.created_by = 'user' AND a.discarded = 0), false) AS edited,
   max(CASE WHEN a.run_id = k.run_id AND a.created_by = 'system' THEN a.version END)
    AS existing
  FROM artifacts a WHERE a.item_id = k.item_id AND a.artifact_type = k.artifact_type) v
 ORDER BY k.n;

-- name: step_slot
-- All a step's commit needs to know, in one statement (see the unit's step_slot).
WITH lease AS ({lease_of_step}) {versions_of_step};

-- name: step_slot_locked
-- step_slot in a writing unit: the lease's row stays locked until the unit
-- commits, as in holds_lease_locked.
WITH lease AS ({lease_of_step} FOR NO KEY UPDATE) {versions_of_step};

-- name: latest_artifact
-- The newest version, a person's edit winning over any system version.
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = %s AND artifact_type = %s AND discarded = 0
 ORDER BY created_by = 'user' DESC, version DESC LIMIT 1;

-- name: artifact_version
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = %s AND artifact_type = %s AND version = %s;

-- name: user_version
-- A person's newest version of a type that is not set aside.
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = %s AND artifact_type = %s AND created_by = 'user'
 AND discarded = 0 ORDER BY version DESC LIMIT 1;

-- name: discard_user_versions
UPDATE artifacts SET discarded = 1 WHERE item_id = %s AND artifact_type = %s
 AND created_by = 'user' AND discarded = 0;

-- name: shown_artifacts
-- Per type, a person's version first, then the system's of the run shown
-- (an extraction that run reused is the newest one before it).
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = %(item)s AND (created_by = 'user' AND discarded = 0
  OR created_by = 'system' AND (run_id IS NOT DISTINCT FROM %(run)s::text
   OR artifact_type = 'extraction'))
 ORDER BY artifact_type, created_by = 'user' DESC,
  run_id IS NOT DISTINCT FROM %(run)s::text DESC, version DESC;

-- name: all_artifacts
SELECT {artifact_columns} FROM artifacts WHERE item_id = %s ORDER BY artifact_type, version;

-- ---------------------------------------------------------------- chunks

-- name: chunks_of_run
SELECT {chunk_columns} FROM chunks WHERE run_id = %s ORDER BY step, idx;

-- name: chunks_of_step
SELECT {chunk_columns} FROM chunks WHERE run_id = %s AND step = %s ORDER BY step, idx;

-- name: delete_chunks
DELETE FROM chunks WHERE run_id = %s AND step = %s;

-- name: insert_pending_chunks
-- A step's chunks afresh: indexes 0 to total - 1, pending.
INSERT INTO chunks (run_id, step, idx, status, model, updated_at)
 SELECT %(run)s, %(step)s, g, 'pending', %(model)s, %(now)s
 FROM generate_series(0, %(total)s - 1) AS g;

-- name: retry_chunks
-- A run queued again: its failed chunks wait to be taken up.
UPDATE chunks SET status = 'pending', updated_at = %s WHERE run_id = %s AND status = 'error';

-- name: reopen_chunks
-- Chunks left unfinished by a failure go back to pending, for a model.
UPDATE chunks SET status = 'pending', model = %s, updated_at = %s
 WHERE run_id = %s AND step = %s AND status != 'done';
