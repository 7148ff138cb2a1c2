"""The store's static SQL, read by name from the files of ``sql/`` once, at import.

The SQL lives in files a reader can run in ``sqlite3``, not in Python
strings, one file per concept like the unit of work's modules; the units
look statements up here by name, whichever file holds it. ``{NAME}`` in an
entry is a row Struct's column list (``{item_columns}``), as many parameters
(``{item_params}``), or an earlier entry (a fragment, such as ``{settled}``),
above it or in a file read before.
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


def _columns() -> dict[str, str]:
    found = {}
    for table, columns in _TABLES.items():
        found[f"{table}_columns"] = ", ".join(columns)
        found[f"{table}_params"] = ", ".join("?" for _ in columns)
    return found


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
    """The named entries of ``text``, their placeholders filled in.

    ``earlier``: the entries of the files read before, which ``text`` may name
    but not name again. Raises ValueError on a name given twice, an empty
    entry or an unknown placeholder, so a mistake in a file fails at import,
    not mid-request.
    """
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
            current.append(line)  # comment lines (an entry's doc, section rules) are left out
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
        text = (folder / name).read_text("utf-8")
        found.update(parse(text, found, source=name))
    return MappingProxyType(found)


#: Every static statement and fragment, by name.
QUERIES = _load()
