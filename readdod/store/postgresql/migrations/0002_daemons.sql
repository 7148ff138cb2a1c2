-- The daemon registry: every daemon that shares this database, as it last told it.
-- One row per running daemon: it registers at start, beats with its heartbeat and
-- leaves at a clean stop; a row silent for long is a dead daemon's, and the others
-- remove it.
CREATE TABLE daemons (
    daemon_id    TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    paused       BOOLEAN NOT NULL DEFAULT false,
    in_flight    INTEGER NOT NULL DEFAULT 0 CHECK (in_flight >= 0)
);
