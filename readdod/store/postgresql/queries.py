"""The PostgreSQL store's static SQL, read by name from the files of ``sql/`` once, at import.

The layout is :mod:`readdod.store.namedsql`'s, as for the SQLite store.
Parameters are psycopg's: ``%s`` by position, ``%(name)s`` by name.
"""

from __future__ import annotations

from readdod.store import namedsql

#: The files of ``sql/``, in the order they are read: fragments first.
SQL_FILES = (
    "shared.sql",
    "items.sql",
    "leases.sql",
    "runs.sql",
    "artifacts.sql",
    "records.sql",
    "reports.sql",
    "todos.sql",
    "feeds.sql",
    "daemons.sql",
)

#: Every static statement and fragment, by name.
QUERIES = namedsql.load(__package__ or __name__, SQL_FILES, "%s")
