-- Items: insert, find, count, list and search; their sources; retries due.

-- name: item_by_id
SELECT {item_columns} FROM items WHERE id = ?;

-- name: item_by_capture_id
SELECT {item_columns} FROM items WHERE capture_id = ?;

-- name: insert_item
INSERT INTO items ({item_columns}) VALUES ({item_params});

-- name: count_queued
-- A literal state, so SQLite counts the state's own partial index.
SELECT count(*) FROM items WHERE status = 'QUEUED';

-- name: count_processing
SELECT count(*) FROM items WHERE status = 'PROCESSING';

-- name: count_settled
SELECT count(*) FROM items WHERE status = ? AND {settled};

-- name: status_in
-- A condition of list_items: the status is one of a JSON array.
status IN (SELECT value FROM json_each(?));

-- name: items_in
SELECT {item_columns} FROM items WHERE {status_in} ORDER BY id;

-- name: settled_items_in
SELECT {item_columns} FROM items WHERE {status_in} AND {settled} ORDER BY id;

-- name: search_items
-- A condition of list_items: the item's title, url, intent or extracted text
-- matches an FTS5 query.
rowid IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?);

-- name: item_has_tag
-- A condition of list_items.
EXISTS (SELECT 1 FROM json_each(items.tags) WHERE value = ?);

-- name: items_by_canonical_url
SELECT {item_columns} FROM items WHERE canonical_url = ? ORDER BY id;

-- name: retries_due
-- Failed items whose automatic retry is due, soonest first.
SELECT {item_columns} FROM items WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI')
 AND next_attempt_at > 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?;

-- name: next_retry_at
SELECT min(next_attempt_at) FROM items WHERE status IN ('FAILED_EXTRACTION',
 'FAILED_AI') AND next_attempt_at > 0;

-- ---------------------------------------------------------------- sources

-- name: insert_source
INSERT INTO item_sources (item_id, html, text, document) VALUES (?, ?, ?, ?);

-- name: source
SELECT html, text FROM item_sources WHERE item_id = ?;

-- name: source_document
SELECT document FROM item_sources WHERE item_id = ?;

-- name: small_sources
SELECT item_id, html, text, document FROM item_sources
 WHERE item_id IN (SELECT value FROM json_each(?))
 AND length(coalesce(html, '')) + length(coalesce(text, '')) <= ?;
