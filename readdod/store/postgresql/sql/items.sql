-- Items: insert, find, count, list and search; their sources; retries due.

-- name: item_by_id
SELECT {item_columns} FROM items WHERE id = %s;

-- name: item_by_capture_id
SELECT {item_columns} FROM items WHERE capture_id = %s;

-- name: insert_item
INSERT INTO items ({item_columns}, search_head) VALUES ({item_params}, %s::tsvector);

-- name: count_queued
SELECT count(*) FROM items WHERE status = 'QUEUED';

-- name: count_processing
SELECT count(*) FROM items WHERE status = 'PROCESSING';

-- name: count_settled
SELECT count(*) FROM items WHERE status = %s AND {settled};

-- name: search_items
-- A condition of list_items: every word of the query is in the title, url,
-- intent or extracted text (the GIN index items_search).
(search_head || search_body) @@ %s::tsquery;

-- name: item_has_tag
-- A condition of list_items.
tags::jsonb @> jsonb_build_array(%s::text);

-- name: items_by_canonical_url
SELECT {item_columns} FROM items WHERE canonical_url = %s ORDER BY id;

-- name: status_in
-- A condition of list_items: the status is one of an array.
status = ANY(%s);

-- name: items_in
SELECT {item_columns} FROM items WHERE {status_in} ORDER BY id;

-- name: settled_items_in
SELECT {item_columns} FROM items WHERE {status_in} AND {settled} ORDER BY id;

-- name: retries_due
-- Failed items whose automatic retry is due, soonest first.
SELECT {item_columns} FROM items WHERE status IN ('FAILED_EXTRACTION', 'FAILED_AI')
 AND next_attempt_at > 0 AND next_attempt_at <= %s ORDER BY next_attempt_at LIMIT %s;

-- name: next_retry_at
SELECT min(next_attempt_at) FROM items WHERE status IN ('FAILED_EXTRACTION',
 'FAILED_AI') AND next_attempt_at > 0;

-- ---------------------------------------------------------------- sources

-- name: insert_source
INSERT INTO item_sources (item_id, html, text, document) VALUES (%s, %s, %s, %s);

-- name: source
SELECT html, text FROM item_sources WHERE item_id = %s;

-- name: source_document
SELECT document FROM item_sources WHERE item_id = %s;

-- name: small_sources
SELECT item_id, html, text, document FROM item_sources WHERE item_id = ANY(%s)
 AND length(coalesce(html, '')) + length(coalesce(text, '')) <= %s;
