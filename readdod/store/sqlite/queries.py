"""The store's static SQL, read by name from the files of ``sql/`` once, at import.

The SQL lives in files a reader can run in ``sqlite3``, not in Python
strings, one file per concept like the unit of work's modules; the units
look statements up here by name, whichever file holds it. The layout is
:mod:`readdod.store.namedsql`'s; parameters are sqlite3's ``?``.
"""

from __future__ import annotations

from collections.abc import Mapping

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
    "feeds.sql",
    "todos.sql",
    "daemons.sql",
)


def parse(
    text: str, earlier: Mapping[str, str] | None = None, *, source: str = "sql"
) -> dict[str, str]:
    """The named entries of ``text`` as this store reads them (``?`` parameters)."""
    return namedsql.parse(text, namedsql.columns("?"), earlier, source=source)


#: Every static statement and fragment, by name.
QUERIES = namedsql.load(__package__ or __name__, SQL_FILES, "?")
