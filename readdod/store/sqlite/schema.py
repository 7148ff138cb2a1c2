"""The database's schema: the SQLite it needs, the migrations, the vacuum mode.

Migrations are the numbered files of ``migrations/``; a database records the
last one it ran in ``PRAGMA user_version``.
"""

from __future__ import annotations

import sqlite3
from importlib import resources

from readdod.errors import ConfigError

MIN_SQLITE = (3, 35, 0)  # RETURNING


def _has_fts5() -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5 (x)")
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()
    return True


def check_sqlite() -> None:
    """ConfigError unless this Python's SQLite has what readdod's schema needs."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise ConfigError(
            f"SQLite {sqlite3.sqlite_version} is too old; readdod needs 3.35 or newer"
        )
    if not _has_fts5():
        raise ConfigError(
            f"this Python's SQLite {sqlite3.sqlite_version} was built without FTS5, which"
            " `list --query` needs; use a Python whose sqlite3 module includes it"
        )


def migrations() -> list[tuple[int, str]]:
    """(number, SQL) of every migration, in order."""
    folder = resources.files(__package__) / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
    return sorted(found)


SCHEMA_VERSION = max(n for n, _ in migrations())


def migrate(conn: sqlite3.Connection) -> int:
    """Run the migrations the database has not run, each in a transaction; its version."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise ConfigError(
            f"the database has schema version {current}, newer than this readdod knows"
            f" ({SCHEMA_VERSION}); upgrade readdod or use another data_dir"
        )
    for number, sql in migrations():
        if number <= current:
            continue
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\nPRAGMA user_version = {number};\nCOMMIT;")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


#: A database made before incremental auto-vacuum is rebuilt once at open up to this size;
#: a bigger one keeps working and shrinks only after a manual ``VACUUM``.
VACUUM_AT_OPEN_MAX_BYTES = 256 * 1024 * 1024


def ensure_incremental_vacuum(conn: sqlite3.Connection) -> bool:
    """Switch an older database to incremental auto-vacuum; False when it is too big to."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        return True
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = pages * conn.execute("PRAGMA page_size").fetchone()[0]
    if size > VACUUM_AT_OPEN_MAX_BYTES:
        return False
    conn.execute("VACUUM")
    return bool(conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2)
