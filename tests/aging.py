"""Make a stopped daemon's SQLite database older: every time it holds moved back.

Retention acts on age; a daemon's clock is the system's, so a test that needs
60-day-old history moves the stored times back instead, in every table, as a
database left alone for that long would hold them.
"""

from __future__ import annotations

import sqlite3

DAY_MS = 24 * 3_600_000
#: Stored times are milliseconds since the epoch: anything smaller is not one.
_SINCE_2001_MS = 1_000_000_000_000


def age_everything(db: sqlite3.Connection, ms: int) -> int:
    """Move every stored time (columns ``at`` and ``*_at``) ``ms`` back; rows changed."""
    changed = 0
    tables = [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    for table in tables:
        for col in db.execute(f'PRAGMA table_info("{table}")'):
            name = str(col[1])
            if name == "at" or name.endswith("_at"):
                changed += db.execute(
                    f'UPDATE "{table}" SET "{name}" = "{name}" - ?'
                    f' WHERE typeof("{name}") = \'integer\' AND "{name}" > ?',
                    (ms, _SINCE_2001_MS),
                ).rowcount
    return changed


def age_postgresql(dsn: str, ms: int) -> int:
    """:func:`age_everything` on a PostgreSQL database every daemon of which has stopped."""
    import psycopg

    changed = 0
    with psycopg.connect(dsn) as pg:
        found = pg.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND data_type = 'bigint'"
            " AND (column_name = 'at' OR column_name LIKE '%\\_at')"
        ).fetchall()
        for table, column in found:
            cur = pg.execute(
                f'UPDATE "{table}" SET "{column}" = "{column}" - %s WHERE "{column}" > %s',
                (ms, _SINCE_2001_MS),
            )
            changed += cur.rowcount
    return changed
