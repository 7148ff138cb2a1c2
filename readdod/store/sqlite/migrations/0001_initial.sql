-- readdod schema, version 1. Times are integer milliseconds since the epoch.

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
    lease_expires_at INTEGER,
    current_run_id   TEXT,
    orphan_count     INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- The claim order: P0 first, then oldest.
CREATE INDEX items_queued ON items (priority, created_at) WHERE status = 'QUEUED';
CREATE INDEX items_processing ON items (lease_expires_at) WHERE status = 'PROCESSING';
CREATE INDEX items_status ON items (status, updated_at);

-- What the user handed in (page HTML or plain text); kept apart so item rows stay small.
CREATE TABLE item_sources (
    item_id TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    html    TEXT,
    text    TEXT
) WITHOUT ROWID;

CREATE TABLE runs (
    run_id       TEXT PRIMARY KEY,
    item_id      TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    mode         TEXT NOT NULL CHECK (mode IN ('PROCESS', 'RETRY', 'REGENERATE', 'EXPORT')),
    status       TEXT NOT NULL
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timeout', 'cancelled')),
    refetch      INTEGER NOT NULL DEFAULT 0,
    current_step TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    worker_id    TEXT,
    error_code   TEXT,
    created_at   INTEGER NOT NULL,
    started_at   INTEGER,
    finished_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX runs_item ON runs (item_id, created_at);

CREATE TABLE artifacts (
    item_id       TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    artifact_type TEXT NOT NULL,
    version       INTEGER NOT NULL,
    created_by    TEXT NOT NULL CHECK (created_by IN ('system', 'user')),
    run_id        TEXT,
    payload       TEXT NOT NULL,
    meta          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (item_id, artifact_type, version)
) WITHOUT ROWID;
-- A step commits at most one artifact per run: a resumed or duplicated actor cannot add a second.
CREATE UNIQUE INDEX artifacts_one_per_run
    ON artifacts (item_id, artifact_type, run_id) WHERE created_by = 'system';

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    item_id     TEXT,
    run_id      TEXT,
    kind        TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    trigger     TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_item ON events (item_id, seq);

CREATE TABLE requests (
    request_id TEXT PRIMARY KEY,
    method     TEXT NOT NULL,
    item_id    TEXT,
    response   TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
