"""Named SQL files, the layout both stores read their static statements from.

``-- name: NAME`` starts an entry; whole-line comments under it (an entry's
doc, section rules) are left out. ``{item_columns}`` is a row Struct's column
list and ``{item_params}`` as many parameters in the driver's style; any other
``{NAME}`` is an earlier entry (a fragment), above it or in a file read before.
A mistake in a file raises ValueError at import, not mid-request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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

#: The row Structs whose columns an entry may name, by table.
TABLES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
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
)


def columns(param: str) -> dict[str, str]:
    """``{table}_columns`` and ``{table}_params`` for every table, ``param`` being the
    driver's positional parameter (``?`` for sqlite3, ``%s`` for psycopg)."""
    found = {}
    for table, names in TABLES.items():
        found[f"{table}_columns"] = ", ".join(names)
        found[f"{table}_params"] = ", ".join(param for _ in names)
    return found


def parse(
    text: str, known: Mapping[str, str], earlier: Mapping[str, str] | None = None, *, source: str
) -> dict[str, str]:
    """The named entries of ``text``, their placeholders filled in from ``known``,
    ``earlier`` (the entries of the files read before, which ``text`` may name but
    not name again) and the entries above; ValueError on a name given twice, an
    empty entry or an unknown placeholder."""
    known = {**known, **(earlier or {})}
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


def load(package: str, files: Sequence[str], param: str) -> Mapping[str, str]:
    """Every entry of ``package``'s ``sql/`` files, read in the order of ``files``
    (fragments first); a file left out of ``files`` is an error, not silently unread."""
    folder = resources.files(package) / "sql"
    unread = {f.name for f in folder.iterdir() if f.name.endswith(".sql")} - set(files)
    if unread:
        raise ValueError(f"sql/: {sorted(unread)} not in SQL_FILES, so never read")
    # {sets}: the columns a caller sets, filled in per call.
    known = {**columns(param), "sets": "{sets}"}
    found: dict[str, str] = {}
    for name in files:
        found.update(parse((folder / name).read_text("utf-8"), known, found, source=name))
    return MappingProxyType(found)
