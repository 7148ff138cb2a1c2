-- Every static statement the PostgreSQL store runs, by name: one file per
-- concept (items, leases, runs, artifacts, records, reports), read after this
-- one in the order ../queries.py lists them. This file holds the fragments the
-- others name.
--
-- A `-- name: NAME` line starts an entry, which runs to the next name; comment
-- lines under it say what it is for. `{item_columns}` and `{item_params}` (and
-- the same for runs, artifacts, events, attempts, chunks and exports) are a row
-- Struct's columns and as many `%s`; any other `{NAME}` is an earlier entry.
-- Parameters are psycopg's `%s` and `%(name)s`.

-- name: settled
-- The (status, id) index leaves out the busy states; a query on the other
-- states repeats this condition so that the planner can use it.
status NOT IN ('QUEUED', 'PROCESSING');

-- name: open_attempt
-- An attempt that is not over: the only kind whose row may still change.
status IN ('queued', 'running');
