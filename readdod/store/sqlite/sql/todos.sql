-- Todo ticks: a person's done marks, by item and todo key.

-- name: todo_marks
SELECT todo_key, done_at FROM todo_marks WHERE item_id = ?;

-- name: mark_todo
-- Nothing when already ticked: the first tick's time stays.
INSERT INTO todo_marks (item_id, todo_key, done_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING;

-- name: unmark_todo
DELETE FROM todo_marks WHERE item_id = ? AND todo_key = ?;

-- name: items_with_todo_marks
SELECT DISTINCT item_id FROM todo_marks ORDER BY item_id;
