-- Runs and their attempts.

-- name: ready_from_runs
-- READY items whose last move was their run's PROCESSING → READY.
SELECT i.id FROM items i WHERE i.status = 'READY' AND i.{settled} AND
 (SELECT e.from_status FROM events e WHERE e.item_id = i.id
   AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1) = 'PROCESSING'
 ORDER BY i.id;

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

-- name: start_runs
-- Claimed runs (a JSON array) start running for an owner, one more attempt each.
UPDATE runs SET status = 'running', attempts = attempts + 1, worker_id = ?,
 started_at = coalesce(started_at, ?) WHERE run_id IN (SELECT value FROM json_each(?))
 RETURNING {run_columns};

-- ---------------------------------------------------------------- attempts

-- name: insert_attempt
INSERT INTO attempts ({attempt_columns}) VALUES ({attempt_params});

-- name: start_attempts
-- The claimed runs' queued attempts start running for an owner.
UPDATE attempts SET status = 'running', worker_id = ?, started_at = ?,
 first_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE status = 'queued' AND run_id IN (SELECT value FROM json_each(?)) RETURNING run_id;

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

-- name: spend_on_attempt
-- Tokens the model server reported, on the run's open attempt (the one that spent them).
UPDATE attempts SET prompt_tokens = prompt_tokens + ?,
 completion_tokens = completion_tokens + ?, cached_tokens = cached_tokens + ?
 WHERE run_id = ? AND {open_attempt};

-- name: add_to_counter
INSERT INTO counters (name, value) VALUES (?, ?)
 ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value;
