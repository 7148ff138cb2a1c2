-- Long texts are summarised chunk by chunk (DESIGN §4.4). Each chunk of a
-- run's step keeps its own state, so progress shows as done/total and a
-- retried or resumed run redoes only the chunks that are not done (a done
-- chunk's output is reused).
CREATE TABLE chunks (
    run_id             TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    step               TEXT NOT NULL,
    idx                INTEGER NOT NULL,
    status             TEXT NOT NULL
        CHECK (status IN ('pending', 'processing', 'retrying', 'done', 'error')),
    retries            INTEGER NOT NULL DEFAULT 0,
    last_error_code    TEXT,
    last_error_message TEXT,
    model              TEXT,
    output             TEXT,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (run_id, step, idx)
) WITHOUT ROWID;
