"""The PostgreSQL schema: numbered migrations of its own, run once by whichever daemon
comes first.

A database records the migrations it ran in ``readdod_migrations``, by number. Daemons
starting at the same moment take a transaction-level advisory lock first,
so one migrates and the others find the work done. Each migration runs in
its own transaction (PostgreSQL's DDL is transactional): a failed one
leaves no half-made schema behind.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import psycopg

from readdod.errors import ConfigError

#: The advisory lock migrations take: any number the daemons agree on ("readdod" in ASCII).
MIGRATION_LOCK = 0x72656164646F64


def migrations() -> list[tuple[int, str]]:
    """(number, SQL) of every migration, in order."""
    folder = resources.files(__package__) / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
    return sorted(found)


SCHEMA_VERSION = max(n for n, _ in migrations())

_LEDGER = """CREATE TABLE IF NOT EXISTS readdod_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)"""


def applied(conn: psycopg.Connection[Any]) -> set[int]:
    """The migrations the database ran (none for an empty one)."""
    row = conn.execute("SELECT to_regclass('readdod_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM readdod_migrations")}


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Run the migrations the database has not run, in order; its version. ``conn`` is in
    autocommit mode; each migration is a transaction of its own.

    A migration is run when the ledger lacks its number, not when the number is
    above the last one run: numbers given out on parallel lines of work merge
    in any order without one being skipped.
    """
    known = {number for number, _ in migrations()}
    done = applied(conn)
    unknown = done - known
    if unknown:
        raise ConfigError(
            f"the PostgreSQL database has readdod migrations {sorted(unknown)}, which this"
            f" readdod does not know (it knows up to {SCHEMA_VERSION}); upgrade readdod on"
            " this machine first"
        )
    if known <= done:
        return SCHEMA_VERSION  # nothing to do: a role without CREATE rights can run the daemon
    for number, sql in migrations():
        if number in done:
            continue
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                conn.execute(_LEDGER)
                if number in applied(conn):
                    continue  # another daemon ran it while this one waited for the lock
                conn.execute(sql.encode())  # several statements: no parameters
                conn.execute("INSERT INTO readdod_migrations (version) VALUES (%s)", (number,))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigError(
                f"the PostgreSQL role cannot create readdod's tables (migration {number}:"
                f" {exc.diag.message_primary}); start one daemon with the role that owns the"
                " database first (store.dsn), then this one"
            ) from exc
    return SCHEMA_VERSION
