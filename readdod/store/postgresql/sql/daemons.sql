-- The daemon registry (store/api/daemons.py).

-- name: register_daemon
INSERT INTO daemons ({daemon_columns}) VALUES ({daemon_params})
 ON CONFLICT (daemon_id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, version = excluded.version,
    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
    paused = excluded.paused, in_flight = excluded.in_flight;

-- name: beat_daemon
UPDATE daemons SET heartbeat_at = %s, in_flight = %s, paused = %s WHERE daemon_id = %s;

-- name: remove_daemon
DELETE FROM daemons WHERE daemon_id = %s;

-- name: daemons
SELECT {daemon_columns} FROM daemons ORDER BY started_at, daemon_id;

-- name: forget_daemons
DELETE FROM daemons WHERE heartbeat_at < %s AND daemon_id <> %s RETURNING daemon_id;
