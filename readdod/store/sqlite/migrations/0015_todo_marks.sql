-- A person's ticks on todos, keyed by a hash of the todo's normalised words
-- (readdod.todos.keys), not its position: a regenerated card that keeps a
-- todo's words keeps its tick.
CREATE TABLE todo_marks (
    item_id  TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    todo_key TEXT NOT NULL,
    done_at  INTEGER NOT NULL,
    PRIMARY KEY (item_id, todo_key)
) WITHOUT ROWID;
