-- Records kept beside the items: events, requests, settings, exports.

-- ---------------------------------------------------------------- events

-- name: insert_event
INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)
 VALUES (%s, %s, %s, %s, %s, %s, %s, %s);

-- name: events_of_item
SELECT {event_columns} FROM events WHERE item_id = %s ORDER BY seq;

-- ---------------------------------------------------------------- requests, settings

-- name: request_by_id
SELECT method, item_id, response FROM requests WHERE request_id = %s;

-- name: insert_request
INSERT INTO requests (request_id, method, item_id, response, created_at)
 VALUES (%s, %s, %s, %s, %s);

-- name: setting
SELECT value FROM settings WHERE key = %s;

-- name: set_setting
INSERT INTO settings (key, value) VALUES (%s, %s)
 ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- ---------------------------------------------------------------- exports

-- name: export_by_key
SELECT {export_columns} FROM exports WHERE export_key = %s;

-- name: insert_export
-- Nothing when the key is already there (a concurrent twin).
INSERT INTO exports ({export_columns}) VALUES ({export_params}) ON CONFLICT DO NOTHING;

-- name: export_files
-- The files of an item's earlier exports in a format, newest first.
SELECT files FROM exports WHERE item_id = %s AND format = %s
 ORDER BY created_at DESC, export_key;
