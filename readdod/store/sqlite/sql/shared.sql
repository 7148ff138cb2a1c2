-- Every static statement the SQLite store runs, by name: one file per concept
-- (items, leases, runs, artifacts, records, reports), read after this one in
-- the order ../queries.py lists them. This file holds the fragments the others
-- name: conditions repeated word for word.
--
-- A `-- name: NAME` line starts an entry, which runs to the next name; the
-- comment lines under it say what it is for (whole-line comments are left out
-- of the statement). `{NAME}` is filled in once, at import: `{item_columns}`
-- and `{item_params}` (and the same for runs, artifacts, events, attempts,
-- chunks and exports) are a row Struct's columns and as many `?`; any other
-- `{NAME}` is an earlier entry, a fragment.

-- name: settled
-- The (status, id) index leaves out the busy states (migration 0008); a query on
-- the other states repeats this condition word for word so that SQLite uses it.
status NOT IN ('QUEUED', 'PROCESSING');

-- name: open_attempt
-- An attempt that is not over: the only kind whose row may still change.
status IN ('queued', 'running');
