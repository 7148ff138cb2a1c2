-- Artifacts hold kilobytes of JSON each (an extraction about 6 KB). In a
-- WITHOUT ROWID table every row lives in the primary key's b-tree, where
-- SQLite keeps under 1 KB of a row on its page and chains the rest through
-- overflow pages, so a leaf holds a handful of rows and each insert moves and
-- rebalances whole rows. As a rowid table, rows are appended in the order
-- they are written, and the key (item, type, version) is a small index.
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
