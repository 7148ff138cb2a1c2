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
SELECT {run_columns} FROM runs WHERE run_id = %s;

-- name: runs_of_item
SELECT {run_columns} FROM runs WHERE item_id = %s ORDER BY created_at, run_id;

-- name: set_current_step
UPDATE runs SET current_step = %s WHERE run_id = %s;

-- name: start_runs
-- Claimed runs start running for an owner, one more attempt each.
UPDATE runs SET status = 'running', attempts = attempts + 1, worker_id = %s,
 started_at = coalesce(started_at, %s) WHERE run_id = ANY(%s)
 RETURNING {run_columns};

-- ---------------------------------------------------------------- attempts

-- name: insert_attempt
INSERT INTO attempts ({attempt_columns}) VALUES ({attempt_params});

-- name: end_attempt
-- The run's open attempt gets its terminal status; the step it reached is the
-- run's current step.
UPDATE attempts SET status = %s, finished_at = %s, error_code = %s, error_message = %s,
 last_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE run_id = %s AND {open_attempt};

-- name: end_attempt_after_update
-- end_attempt sent with its run's update held back ({sets}: the columns it sets),
-- in one statement: the step the attempt reached is the run's current step as that
-- update left it.
WITH r AS (UPDATE runs SET {sets} WHERE run_id = %s RETURNING current_step)
UPDATE attempts SET status = %s, finished_at = %s, error_code = %s, error_message = %s,
 last_step = (SELECT current_step FROM r) WHERE run_id = %s AND {open_attempt};

-- name: last_attempt
SELECT {attempt_columns} FROM attempts WHERE run_id = %s
 ORDER BY created_at DESC, attempt_id DESC LIMIT 1;

-- name: start_attempts
-- The claimed runs' queued attempts start running for an owner.
UPDATE attempts SET status = 'running', worker_id = %s, started_at = %s,
 first_step = (SELECT r.current_step FROM runs r WHERE r.run_id = attempts.run_id)
 WHERE status = 'queued' AND run_id = ANY(%s) RETURNING run_id;

-- name: add_running_attempt
-- A claimed run with no queued attempt gets a RESUME one, running.
INSERT INTO attempts (attempt_id, run_id, item_id, mode, status,
 first_step, worker_id, created_at, started_at)
 SELECT %s, run_id, item_id, 'RESUME', 'running', current_step, %s, %s, %s
 FROM runs WHERE run_id = %s;

-- name: attempts_of_item
SELECT {attempt_columns} FROM attempts
 WHERE run_id IN (SELECT run_id FROM runs WHERE item_id = %s)
 ORDER BY created_at, attempt_id;

-- name: spend_on_attempt
-- Tokens the model server reported, on the run's open attempt (the one that spent them).
UPDATE attempts SET prompt_tokens = prompt_tokens + %s,
 completion_tokens = completion_tokens + %s, cached_tokens = cached_tokens + %s
 WHERE run_id = %s AND {open_attempt};

-- name: add_to_counter
INSERT INTO counters (name, value) VALUES (%s, %s)
 ON CONFLICT (name) DO UPDATE SET value = counters.value + excluded.value;
