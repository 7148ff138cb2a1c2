-- Artifacts hold kilobytes of JSON each (an extraction about 6 KB), sources
-- the page or text handed in. In a WITHOUT ROWID table every row lives in the
-- primary key's b-tree, where SQLite keeps under 1 KB of a row on its page
-- and chains the rest through overflow pages, so a leaf holds a handful of
-- rows and each insert moves and rebalances whole rows. As rowid tables, rows
-- are appended in the order they are written, and the keys are small indexes.
CREATE TABLE artifacts_by_rowid (
    item_id       TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    artifact_type TEXT NOT NULL,
    version       INTEGER NOT NULL,
    created_by    TEXT NOT NULL CHECK (created_by IN ('system', 'user')),
    run_id        TEXT,
    payload       TEXT NOT NULL,
    meta          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (item_id, artifact_type, version)
);
INSERT INTO artifacts_by_rowid
SELECT item_id, artifact_type, version, created_by, run_id, payload, meta, created_at
  FROM artifacts ORDER BY created_at, item_id, artifact_type, version;
DROP TABLE artifacts;
ALTER TABLE artifacts_by_rowid RENAME TO artifacts;
CREATE UNIQUE INDEX artifacts_one_per_run
    ON artifacts (item_id, artifact_type, run_id) WHERE created_by = 'system';
CREATE TRIGGER items_fts_extraction AFTER INSERT ON artifacts
WHEN new.artifact_type = 'extraction'
 AND (new.created_by = 'user'
      OR NOT EXISTS (SELECT 1 FROM artifacts a
                      WHERE a.item_id = new.item_id AND a.artifact_type = 'extraction'
                        AND a.created_by = 'user'))
BEGIN
    UPDATE items_fts
       SET title = coalesce(i.title, ''), body = coalesce(json_extract(new.payload, '$.text'), '')
      FROM items i
     WHERE i.id = new.item_id AND items_fts.rowid = i.rowid;
END;

CREATE TABLE item_sources_by_rowid (
    item_id TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    html    TEXT,
    text    TEXT
);
INSERT INTO item_sources_by_rowid SELECT item_id, html, text FROM item_sources ORDER BY item_id;
DROP TABLE item_sources;
ALTER TABLE item_sources_by_rowid RENAME TO item_sources;
