-- The schema of the SQLite store at its latest migration, in PostgreSQL's types.
-- Times are integer milliseconds since the epoch (BIGINT), JSON is kept as the
-- text readdod wrote (TEXT), so rows read back byte for byte as on SQLite.

CREATE TABLE items (
    id               TEXT PRIMARY KEY,
    capture_id       TEXT UNIQUE,
    capture_hash     TEXT,
    source_type      TEXT NOT NULL CHECK (source_type IN ('url', 'html', 'text')),
    url              TEXT,
    final_url        TEXT,
    domain           TEXT,
    title            TEXT,
    intent_text      TEXT NOT NULL,
    status           TEXT NOT NULL,
    priority         TEXT NOT NULL DEFAULT 'P2' CHECK (priority IN ('P0', 'P1', 'P2', 'P3')),
    match_score      INTEGER,
    tags             TEXT NOT NULL DEFAULT '[]',
    failure          TEXT,
    archive_reason   TEXT,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    current_run_id   TEXT,
    orphan_count     INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    canonical_url    TEXT,
    sibling_of       TEXT,
    auto_retries     INTEGER NOT NULL DEFAULT 0,
    ready_run_id     TEXT,
    -- The fencing token: one more at every claim, so a late write of an earlier
    -- claim's worker never matches it again.
    lease_token      BIGINT NOT NULL DEFAULT 0,
    -- Full text (see search.py): title, url and intent; the extracted text shown.
    search_head      TSVECTOR NOT NULL DEFAULT ''::tsvector,
    search_body      TSVECTOR NOT NULL DEFAULT ''::tsvector
);
CREATE INDEX items_queued ON items (priority, created_at) WHERE status = 'QUEUED';
CREATE INDEX items_processing ON items (lease_expires_at) WHERE status = 'PROCESSING';
CREATE INDEX items_lease_owner ON items (lease_owner) WHERE status = 'PROCESSING';
CREATE INDEX items_canonical ON items (canonical_url) WHERE canonical_url IS NOT NULL;
CREATE INDEX items_retry_due ON items (next_attempt_at)
    WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI') AND next_attempt_at > 0;
CREATE INDEX items_status_id ON items (status, id) WHERE status NOT IN ('QUEUED', 'PROCESSING');
CREATE INDEX items_search ON items USING gin ((search_head || search_body));

CREATE TABLE item_sources (
    item_id TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    html    TEXT,
    text    TEXT
);

CREATE TABLE runs (
    run_id             TEXT PRIMARY KEY,
    item_id            TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    mode               TEXT NOT NULL CHECK (mode IN ('PROCESS', 'RETRY', 'REGENERATE', 'EXPORT')),
    status             TEXT NOT NULL
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timeout', 'cancelled')),
    refetch            INTEGER NOT NULL DEFAULT 0,
    current_step       TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,
    worker_id          TEXT,
    error_code         TEXT,
    created_at         BIGINT NOT NULL,
    started_at         BIGINT,
    finished_at        BIGINT,
    retries            INTEGER NOT NULL DEFAULT 0,
    last_error_code    TEXT,
    last_error_message TEXT,
    error_message      TEXT
);
CREATE INDEX runs_item ON runs (item_id, created_at);
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE attempts (
    attempt_id    TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    item_id       TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    mode          TEXT NOT NULL
        CHECK (mode IN ('PROCESS', 'RETRY', 'RESUME', 'REGENERATE', 'EXPORT')),
    status        TEXT NOT NULL
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timeout', 'cancelled')),
    first_step    TEXT,
    last_step     TEXT,
    worker_id     TEXT,
    error_code    TEXT,
    error_message TEXT,
    created_at    BIGINT NOT NULL,
    started_at    BIGINT,
    finished_at   BIGINT
);
CREATE INDEX attempts_run ON attempts (run_id, created_at);
CREATE INDEX attempts_item ON attempts (item_id);
CREATE UNIQUE INDEX attempts_open ON attempts (run_id) WHERE status IN ('queued', 'running');

CREATE TABLE artifacts (
    item_id       TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    artifact_type TEXT NOT NULL,
    version       INTEGER NOT NULL,
    created_by    TEXT NOT NULL CHECK (created_by IN ('system', 'user')),
    run_id        TEXT,
    payload       TEXT NOT NULL,
    meta          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    discarded     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (item_id, artifact_type, version)
);
CREATE UNIQUE INDEX artifacts_one_per_run
    ON artifacts (item_id, artifact_type, run_id) WHERE created_by = 'system';

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
    updated_at         BIGINT NOT NULL,
    PRIMARY KEY (run_id, step, idx)
);

CREATE TABLE events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          BIGINT NOT NULL,
    item_id     TEXT,
    run_id      TEXT,
    kind        TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    trigger     TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_item ON events (item_id, seq);
CREATE INDEX events_at ON events (at);

CREATE TABLE requests (
    request_id TEXT PRIMARY KEY,
    method     TEXT NOT NULL,
    item_id    TEXT,
    response   TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE exports (
    export_key       TEXT PRIMARY KEY,
    item_id          TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    card_version     INTEGER NOT NULL,
    template_version TEXT NOT NULL,
    format           TEXT NOT NULL CHECK (format IN ('markdown', 'json')),
    files            TEXT NOT NULL,
    created_at       BIGINT NOT NULL
);
CREATE INDEX exports_item ON exports (item_id, format, created_at);
