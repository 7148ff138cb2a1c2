-- Feeds readdod follows (`readdod feed add`), polled by a daemon, and the entries
-- of each already captured, so an entry is captured once (SQLite's migration 0016).
CREATE TABLE feeds (
    id               TEXT PRIMARY KEY,
    url              TEXT NOT NULL UNIQUE,
    intent           TEXT NOT NULL,
    tags             TEXT NOT NULL DEFAULT '[]',
    title            TEXT,
    etag             TEXT,
    last_modified    TEXT,
    created_at       BIGINT NOT NULL,
    next_poll_at     BIGINT NOT NULL,
    last_polled_at   BIGINT,
    last_ok_at       BIGINT,
    failures         INTEGER NOT NULL DEFAULT 0,
    last_error_code  TEXT,
    last_error       TEXT,
    entries_captured INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX feeds_next_poll ON feeds (next_poll_at);

CREATE TABLE feed_entries (
    feed_id  TEXT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    key      TEXT NOT NULL,
    item_id  TEXT,
    seen_at  BIGINT NOT NULL,
    PRIMARY KEY (feed_id, key)
);
