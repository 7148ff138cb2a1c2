-- Runs and attempts. A run is the consistency group of a card's artifacts;
-- each execution of it is an attempt, whose terminal status never changes
-- again: a retry or a resume after a crash is a new attempt of the same run.
CREATE TABLE attempts (
    attempt_id    TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    item_id       TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    mode          TEXT NOT NULL
        CHECK (mode IN ('PROCESS', 'RETRY', 'RESUME', 'REGENERATE', 'EXPORT')),
    status        TEXT NOT NULL
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timeout', 'cancelled')),
    -- The run's first missing step when the attempt started, and where it ended.
    first_step    TEXT,
    last_step     TEXT,
    worker_id     TEXT,
    error_code    TEXT,
    error_message TEXT,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER
);
-- An item's attempts are found through its runs; every index here is paid for twice
-- per item on the hot path (an insert, then the end of the attempt).
CREATE INDEX attempts_run ON attempts (run_id, created_at);
-- A run has at most one attempt that is not over yet.
CREATE UNIQUE INDEX attempts_open ON attempts (run_id) WHERE status IN ('queued', 'running');

-- Every run so far becomes its own first attempt, with the run's status.
INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, first_step, last_step,
                      worker_id, error_code, error_message, created_at, started_at, finished_at)
SELECT run_id, run_id, item_id, mode, status, NULL, current_step, worker_id, error_code,
       error_message, created_at, started_at,
       CASE WHEN status IN ('queued', 'running') THEN NULL
            ELSE coalesce(finished_at, started_at, created_at) END
  FROM runs;

-- The run a READY or SHIPPED item shows (its card's consistency group). It
-- stays while the item is regenerated, fails or is archived, so the last good
-- card is what a person sees until another run passes the READY gate.
ALTER TABLE items ADD COLUMN ready_run_id TEXT;
UPDATE items SET ready_run_id = current_run_id WHERE status IN ('READY', 'SHIPPED');
UPDATE items SET ready_run_id = current_run_id
 WHERE status NOT IN ('READY', 'SHIPPED') AND current_run_id IS NOT NULL
   AND EXISTS (SELECT 1 FROM runs r WHERE r.run_id = items.current_run_id
                                      AND r.status = 'succeeded');

-- `edit ID TYPE --discard`: a person's versions of a type are set aside (kept,
-- never deleted) and the system's version is shown again.
ALTER TABLE artifacts ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0;

-- The search index's body is the extraction a person sees: a version of
-- theirs that is set aside no longer counts.
DROP TRIGGER IF EXISTS items_fts_extraction;
CREATE TRIGGER items_fts_extraction AFTER INSERT ON artifacts
WHEN new.artifact_type = 'extraction'
 AND (new.created_by = 'user'
      OR NOT EXISTS (SELECT 1 FROM artifacts a
                      WHERE a.item_id = new.item_id AND a.artifact_type = 'extraction'
                        AND a.created_by = 'user' AND a.discarded = 0))
BEGIN
    UPDATE items_fts
       SET title = coalesce(i.title, ''), body = coalesce(json_extract(new.payload, '$.text'), '')
      FROM items i
     WHERE i.id = new.item_id AND items_fts.rowid = i.rowid;
END;
