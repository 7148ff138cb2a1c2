"""The PostgreSQL store's static SQL, read by name from the files of ``sql/`` once, at import.

The same layout as the SQLite store's (:mod:`readdod.store.sqlite.queries`):
``-- name: NAME`` starts an entry, whole-line comments under it are left
out, ``{item_columns}`` is a row Struct's column list and ``{item_params}``
as many ``%s``; any other ``{NAME}`` is an earlier entry (a fragment).
Parameters are psycopg's: ``%s`` by position, ``%(name)s`` by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

from readdod.store.rows import (
    ARTIFACT_COLUMNS,
    ATTEMPT_COLUMNS,
    CHUNK_COLUMNS,
    DAEMON_COLUMNS,
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
    FEED_COLUMNS,
    ITEM_COLUMNS,
    RUN_COLUMNS,
)

_HEADER = re.compile(r"--\s*name:\s*(\w+)\s*")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

_TABLES = {
    "item": ITEM_COLUMNS,
    "run": RUN_COLUMNS,
    "artifact": ARTIFACT_COLUMNS,
    "event": EVENT_COLUMNS,
    "attempt": ATTEMPT_COLUMNS,
    "chunk": CHUNK_COLUMNS,
    "export": EXPORT_COLUMNS,
    "feed": FEED_COLUMNS,
    "daemon": DAEMON_COLUMNS,
}

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


def _columns() -> dict[str, str]:
    found = {}
    for table, columns in _TABLES.items():
        found[f"{table}_columns"] = ", ".join(columns)
        found[f"{table}_params"] = ", ".join("%s" for _ in columns)
    return found


def parse(
    text: str, earlier: Mapping[str, str] | None = None, *, source: str = "sql"
) -> dict[str, str]:
    """The named entries of ``text``, their placeholders filled in; ValueError on a name
    given twice, an empty entry or an unknown placeholder, so a mistake fails at import."""
    known = {**_columns(), **(earlier or {})}
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _HEADER.fullmatch(line.strip())
        if header:
            name = header.group(1)
            if name in entries or name in known:
                raise ValueError(f"{source}: {name!r} is named twice")
            current = entries[name] = []
        elif current is not None and not line.lstrip().startswith("--"):
            current.append(line)
    found: dict[str, str] = {}
    for name, lines in entries.items():
        sql = "\n".join(lines).strip().removesuffix(";").strip()
        if not sql:
            raise ValueError(f"{source}: {name!r} is empty")

        def fill(m: re.Match[str], name: str = name) -> str:
            key = m.group(1)
            if key in known:
                return known[key]
            if key in found:
                return found[key]
            raise ValueError(f"{source}: {name!r} names {{{key}}}, which is not defined above")

        found[name] = _PLACEHOLDER.sub(fill, sql)
    return found


def _load() -> Mapping[str, str]:
    folder = resources.files(__package__) / "sql"
    unread = {f.name for f in folder.iterdir() if f.name.endswith(".sql")} - set(SQL_FILES)
    if unread:
        raise ValueError(f"sql/: {sorted(unread)} not in SQL_FILES, so never read")
    found: dict[str, str] = {}
    for name in SQL_FILES:
        found.update(parse((folder / name).read_text("utf-8"), found, source=name))
    return MappingProxyType(found)


#: Every static statement and fragment, by name.
QUERIES = _load()
