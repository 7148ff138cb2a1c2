-- Feeds readdod follows and the entries of each already captured.

-- name: insert_feed
INSERT INTO feeds ({feed_columns}) VALUES ({feed_params}) ON CONFLICT (url) DO NOTHING;

-- name: feed
SELECT {feed_columns} FROM feeds WHERE id = %s;

-- name: feed_by_url
SELECT {feed_columns} FROM feeds WHERE url = %s;

-- name: feeds
SELECT {feed_columns} FROM feeds ORDER BY created_at, id;

-- name: feeds_due
SELECT {feed_columns} FROM feeds WHERE next_poll_at <= %s ORDER BY next_poll_at, id LIMIT %s;

-- name: next_feed_poll
SELECT min(next_poll_at) FROM feeds;

-- name: delete_feed_entries
DELETE FROM feed_entries WHERE feed_id = %s;

-- name: delete_feed
DELETE FROM feeds WHERE id = %s;

-- name: feed_entries_seen
SELECT key FROM feed_entries WHERE feed_id = %s AND key = ANY(%s);

-- name: add_feed_entry
INSERT INTO feed_entries (feed_id, key, item_id, seen_at) VALUES (%s, %s, %s, %s)
 ON CONFLICT (feed_id, key) DO NOTHING;
