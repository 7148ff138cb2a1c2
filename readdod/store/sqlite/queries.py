"""The store's static SQL, read by name from ``sql/queries.sql`` once, at import.

The SQL lives in one file a reader can run in ``sqlite3``, not in Python
strings; the units look statements up here by name. ``{NAME}`` in an entry
is a row Struct's column list (``{item_columns}``), as many parameters
(``{item_params}``), or an earlier entry (a fragment, such as ``{settled}``).
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
    EVENT_COLUMNS,
    EXPORT_COLUMNS,
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
}


def _columns() -> dict[str, str]:
    found = {}
    for table, columns in _TABLES.items():
        found[f"{table}_columns"] = ", ".join(columns)
        found[f"{table}_params"] = ", ".join("?" for _ in columns)
    return found


def parse(text: str) -> dict[str, str]:
    """The named entries of ``text``, their placeholders filled in.

    Raises ValueError on a name given twice, an empty entry or an unknown
    placeholder, so a mistake in the file fails at import, not mid-request.
    """
    known = _columns()
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _HEADER.fullmatch(line.strip())
        if header:
            name = header.group(1)
            if name in entries or name in known:
                raise ValueError(f"queries.sql: {name!r} is named twice")
            current = entries[name] = []
        elif current is not None and not line.lstrip().startswith("--"):
            current.append(line)  # comment lines (an entry's doc, section rules) are left out
    found: dict[str, str] = {}
    for name, lines in entries.items():
        sql = "\n".join(lines).strip().removesuffix(";").strip()
        if not sql:
            raise ValueError(f"queries.sql: {name!r} is empty")

        def fill(m: re.Match[str], name: str = name) -> str:
            key = m.group(1)
            if key in known:
                return known[key]
            if key in found:
                return found[key]
            raise ValueError(f"queries.sql: {name!r} names {{{key}}}, which is not defined above")

        found[name] = _PLACEHOLDER.sub(fill, sql)
    return found


def _load() -> Mapping[str, str]:
    text = (resources.files(__package__) / "sql" / "queries.sql").read_text("utf-8")
    return MappingProxyType(parse(text))


#: Every static statement and fragment, by name.
QUERIES = _load()
