-- Every static statement the SQLite store runs, by name (see ../queries.py).
--
-- A `-- name: NAME` line starts an entry, which runs to the next name; the
-- comment lines under it say what it is for (whole-line comments are left out
-- of the statement). `{NAME}` is filled in once, at import: `{item_columns}`
-- and `{item_params}` (and the same for runs, artifacts, events, attempts,
-- chunks and exports) are a row Struct's columns and as many `?`; any other
-- `{NAME}` is an earlier entry, a fragment.

-- name: settled
-- The (status, id) index leaves out the busy states (migration 0008); a query on
-- the other states repeats this condition word for word so that SQLite uses it.
status NOT IN ('QUEUED', 'PROCESSING');

-- name: open_attempt
-- An attempt that is not over: the only kind whose row may still change.
status IN ('queued', 'running');

-- ---------------------------------------------------------------- items

-- name: item_by_id
SELECT {item_columns} FROM items WHERE id = ?;

-- name: item_by_capture_id
SELECT {item_columns} FROM items WHERE capture_id = ?;

-- name: insert_item
INSERT INTO items ({item_columns}) VALUES ({item_params});

-- name: holds_lease
SELECT 1 FROM items WHERE id = ? AND status = 'PROCESSING'
 AND lease_owner = ? AND current_run_id = ?;

-- name: ready_from_runs
-- READY items whose last move was their run's PROCESSING → READY.
SELECT i.id FROM items i WHERE i.status = 'READY' AND i.{settled} AND
 (SELECT e.from_status FROM events e WHERE e.item_id = i.id
   AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1) = 'PROCESSING'
 ORDER BY i.id;

-- name: queue_due
SELECT 1 FROM items WHERE status = 'QUEUED' AND next_attempt_at <= ? LIMIT 1;

-- name: claim_items
-- Up to LIMIT due QUEUED items, P0 first then oldest, leased to an owner.
UPDATE items SET status = 'PROCESSING', lease_owner = ?, lease_expires_at = ?,
 updated_at = ?
 WHERE id IN (SELECT id FROM items WHERE status = 'QUEUED' AND next_attempt_at <= ?
              ORDER BY priority, created_at LIMIT ?)
 AND status = 'QUEUED'
 RETURNING {item_columns};

-- name: held_by
SELECT {item_columns} FROM items WHERE status = 'PROCESSING' AND lease_owner = ?;

-- name: count_queued
-- A literal state, so SQLite counts the state's own partial index.
SELECT count(*) FROM items WHERE status = 'QUEUED';

-- name: count_processing
SELECT count(*) FROM items WHERE status = 'PROCESSING';

-- name: count_settled
SELECT count(*) FROM items WHERE status = ? AND {settled};

-- name: search_items
-- A condition of list_items: the item's title, url, intent or extracted text
-- matches an FTS5 query.
rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?);

-- name: item_has_tag
-- A condition of list_items.
EXISTS (SELECT 1 FROM json_each(items.tags) WHERE value = ?);

-- name: items_by_canonical_url
SELECT {item_columns} FROM items WHERE canonical_url = ? ORDER BY id;

-- name: retries_due
-- Failed items whose automatic retry is due, soonest first.
SELECT {item_columns} FROM items WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI')
 AND next_attempt_at > 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?;

-- name: next_retry_at
SELECT min(next_attempt_at) FROM items WHERE status IN ('FAILED_EXTRACTION',
 'FAILED_AI') AND next_attempt_at > 0;

-- ---------------------------------------------------------------- sources

-- name: insert_source
INSERT INTO item_sources (item_id, html, text) VALUES (?, ?, ?);

-- name: source
SELECT html, text FROM item_sources WHERE item_id = ?;

-- ---------------------------------------------------------------- runs

-- name: insert_run
INSERT INTO runs ({run_columns}) VALUES ({run_params});

-- name: run_by_id
SELECT {run_columns} FROM runs WHERE run_id = ?;

-- name: runs_of_item
SELECT {run_columns} FROM runs WHERE item_id = ? ORDER BY created_at, run_id;

-- name: set_run_steps
-- Each run's current step from one parameter, a JSON array of [run_id, step].
UPDATE runs SET current_step = json_extract(j.value, '$[1]') FROM json_each(?) j
 WHERE runs.run_id = json_extract(j.value, '$[0]');

-- ---------------------------------------------------------------- attempts

-- name: end_attempt
-- The run's open attempt gets its terminal status; the step it reached is the
-- run's current step.
UPDATE attempts SET status = ?, finished_at = ?, error_code = ?, error_message = ?,
 last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE run_id = ? AND {open_attempt};

-- name: last_attempt
SELECT {attempt_columns} FROM attempts WHERE run_id = ?
 ORDER BY created_at DESC, attempt_id DESC LIMIT 1;

-- name: add_running_attempt
-- A claimed run with no queued attempt gets a RESUME one, running.
INSERT INTO attempts (attempt_id, run_id, item_id, mode, status,
 first_step, worker_id, created_at, started_at)
 SELECT ?, run_id, item_id, 'RESUME', 'running', current_step, ?, ?, ?
 FROM runs WHERE run_id = ?;

-- name: attempts_of_item
SELECT {attempt_columns} FROM attempts
 WHERE run_id IN (SELECT run_id FROM runs WHERE item_id = ?)
 ORDER BY created_at, attempt_id;

-- ---------------------------------------------------------------- artifacts

-- name: insert_next_artifact
-- The next version of an item's artifact type; versions only grow.
INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,
 payload, meta, created_at)
 SELECT ?, ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ? FROM artifacts
 WHERE item_id = ? AND artifact_type = ? RETURNING version;

-- name: artifacts_of_run
SELECT {artifact_columns} FROM artifacts
 WHERE item_id = ? AND run_id = ? AND created_by = 'system';

-- name: step_slot
-- All a step's commit needs to know, in one statement (see the unit's step_slot).
SELECT (SELECT orphan_count FROM items WHERE id = ? AND status = 'PROCESSING'
        AND lease_owner = ? AND current_run_id = ?),
 coalesce(max(version), 0), coalesce(max(created_by = 'user' AND discarded = 0), 0),
 max(CASE WHEN run_id = ? AND created_by = 'system' THEN version END)
 FROM artifacts WHERE item_id = ? AND artifact_type = ?;

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
 WHERE item_id = ? AND (created_by = 'user' AND discarded = 0
  OR created_by = 'system' AND (run_id IS ? OR artifact_type = 'extraction'))
 ORDER BY artifact_type, created_by = 'user' DESC, run_id IS ? DESC, version DESC;

-- name: all_artifacts
SELECT {artifact_columns} FROM artifacts WHERE item_id = ? ORDER BY artifact_type, version;

-- ---------------------------------------------------------------- chunks

-- name: chunks_of_run
SELECT {chunk_columns} FROM chunks WHERE run_id = ? ORDER BY step, idx;

-- name: chunks_of_step
SELECT {chunk_columns} FROM chunks WHERE run_id = ? AND step = ? ORDER BY step, idx;

-- name: delete_chunks
DELETE FROM chunks WHERE run_id = ? AND step = ?;

-- name: insert_pending_chunk
INSERT INTO chunks (run_id, step, idx, status, model, updated_at)
 VALUES (?, ?, ?, 'pending', ?, ?);

-- name: reopen_chunks
-- Chunks left unfinished by a failure go back to pending, for a model.
UPDATE chunks SET status = 'pending', model = ?, updated_at = ?
 WHERE run_id = ? AND step = ? AND status != 'done';

-- name: settle_chunks
-- A run's chunks in flight go back to pending.
UPDATE chunks SET status = 'pending', updated_at = ?
 WHERE run_id = ? AND status IN ('processing', 'retrying');

-- ---------------------------------------------------------------- events

-- name: events_of_item
SELECT {event_columns} FROM events WHERE item_id = ? ORDER BY seq;

-- ---------------------------------------------------------------- requests, settings

-- name: request_by_id
SELECT method, item_id, response FROM requests WHERE request_id = ?;

-- name: insert_request
INSERT INTO requests (request_id, method, item_id, response, created_at)
 VALUES (?, ?, ?, ?, ?);

-- name: setting
SELECT value FROM settings WHERE key = ?;

-- name: set_setting
INSERT INTO settings (key, value) VALUES (?, ?)
 ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- ---------------------------------------------------------------- exports

-- name: export_by_key
SELECT {export_columns} FROM exports WHERE export_key = ?;

-- name: insert_export
-- Nothing when the key is already there (a concurrent twin).
INSERT INTO exports ({export_columns}) VALUES ({export_params}) ON CONFLICT DO NOTHING;

-- name: export_files
-- The files of an item's earlier exports in a format, newest first.
SELECT files FROM exports WHERE item_id = ? AND format = ?
 ORDER BY created_at DESC, export_key;

-- ---------------------------------------------------------------- health, stats

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
-- Prompt and completion tokens recorded in every artifact's meta.
SELECT coalesce(sum(json_extract(meta, '$.prompt_tokens')), 0),
 coalesce(sum(json_extract(meta, '$.completion_tokens')), 0) FROM artifacts;

-- ---------------------------------------------------------------- retention

-- name: prunable_runs
-- Runs of ARCHIVED items, past their retention, that the item no longer points to.
SELECT r.run_id FROM runs r JOIN items i ON i.id = r.item_id
 WHERE i.status = 'ARCHIVED' AND r.run_id IS NOT i.current_run_id
 AND r.run_id IS NOT i.ready_run_id AND (
  (r.status = 'succeeded' AND coalesce(r.finished_at, r.created_at) < :finished)
  OR (r.status = 'cancelled' AND coalesce(r.finished_at, r.created_at) < :cancelled)
  OR (r.status IN ('failed', 'timeout')
      AND coalesce(r.finished_at, r.created_at) < :failed));

-- name: prunable_events
SELECT seq FROM events WHERE at < :finished AND (item_id IS NULL
 OR item_id IN (SELECT id FROM items WHERE status = 'ARCHIVED' AND {settled}));

-- name: prunable_artifacts
-- Old superseded versions: none a person may see (their newest edit, the newest
-- system version, those of the item's current run and of the run it shows); the
-- newest :keep of them stay.
SELECT item_id, artifact_type, version FROM (
 SELECT a.item_id, a.artifact_type, a.version, row_number() OVER (
   PARTITION BY a.item_id, a.artifact_type ORDER BY a.version DESC) AS rank
 FROM artifacts a JOIN items i ON i.id = a.item_id
 WHERE i.status = 'ARCHIVED'
  AND a.created_at < :finished
  AND NOT (a.created_by = 'system'
           AND (a.run_id IS i.current_run_id OR a.run_id IS i.ready_run_id))
  AND a.version NOT IN (SELECT max(s.version) FROM artifacts s
   WHERE s.item_id = a.item_id AND s.artifact_type = a.artifact_type
     AND (s.created_by = 'system' OR s.discarded = 0) GROUP BY s.created_by)
) WHERE rank > :keep;

-- name: count_prunable_runs
SELECT count(*) FROM ({prunable_runs});

-- name: count_prunable_events
SELECT count(*) FROM ({prunable_events});

-- name: count_prunable_artifacts
SELECT count(*) FROM ({prunable_artifacts});

-- name: has_chunks_table
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunks';

-- name: prune_chunks
DELETE FROM chunks WHERE run_id IN ({prunable_runs});

-- name: prune_runs
DELETE FROM runs WHERE run_id IN ({prunable_runs});

-- name: prune_events
DELETE FROM events WHERE seq IN ({prunable_events});

-- name: prune_artifacts
DELETE FROM artifacts WHERE (item_id, artifact_type, version) IN ({prunable_artifacts});

-- ---------------------------------------------------------------- lost leases

-- name: lost
-- A lease that is lost: its item is PROCESSING and the lease ran out before
-- :before (every lease, for a daemon that holds the store alone).
i.status = 'PROCESSING' AND i.lease_expires_at < :before;

-- name: lost_leases
-- Lost leases of items already lost :at_least times in a row, by id.
SELECT {item_columns} FROM items i WHERE {lost} AND i.orphan_count >= :at_least ORDER BY i.id;

-- name: lost_below
-- Lost leases of items lost fewer than :below times in a row (counting this one).
{lost} AND i.orphan_count + 1 < :below;

-- name: count_lost_below
SELECT count(*) FROM items i WHERE {lost_below};

-- name: sample_lost_below
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
-- The attempts the lost workers ran are over.
UPDATE attempts SET status = 'failed', error_code = :code, finished_at = :now,
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
