"""Backups of a PostgreSQL database: ``pg_dump``, the tool that makes them consistent.

readdod cannot copy a server's files the way it copies a SQLite file; it
runs ``pg_dump`` (custom format, for ``pg_restore``) where one is installed,
and otherwise says which command to run, rather than failing obscurely.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from pathlib import Path

import anyio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from readdod.errors import BackupUnsupported
from readdod.store.rows import BackupResult


def shown_dsn(dsn: str) -> str:
    """``dsn`` without its password, fit for a log line or a message."""
    try:
        parts = conninfo_to_dict(dsn)
    except Exception:  # an unparsable string is shown as nothing rather than leaked
        return "<the configured store.dsn>"
    parts.pop("password", None)
    return make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


def find_pg_dump() -> str | None:
    """``pg_dump`` on PATH, else the newest of Debian's ``/usr/lib/postgresql/*/bin``."""
    found = shutil.which("pg_dump")
    if found:
        return found
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_dump"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    return str(versions[-1]) if versions else None


def dump_command(dsn: str, dest: str | Path, pg_dump: str = "pg_dump") -> list[str]:
    """The ``pg_dump`` command line that copies the database at ``dsn`` to ``dest``."""
    return [pg_dump, "--format=custom", f"--file={dest}", f"--dbname={shown_dsn(dsn)}"]


async def dump_database(dsn: str, password: str | None, dest: str | Path) -> BackupResult:
    """Copy the database to ``dest`` with ``pg_dump``; BackupUnsupported when it cannot."""
    dest = Path(dest)
    told = shlex.join(dump_command(dsn, dest))
    pg_dump = find_pg_dump()
    if pg_dump is None:
        raise BackupUnsupported(
            "readdod backs up a PostgreSQL database with pg_dump, which is not installed on"
            f" the daemon's machine; run it where it is (add the password through PGPASSWORD"
            f" or ~/.pgpass): {told}"
        )
    env = dict(os.environ)
    if password is not None:
        env["PGPASSWORD"] = password
    started = time.perf_counter()
    done = await anyio.run_process(dump_command(dsn, dest, pg_dump), env=env, check=False)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BackupUnsupported(
            f"pg_dump could not copy the database ({said[-1] if said else done.returncode});"
            f" run it yourself, with a pg_dump as new as the server: {told}"
        )
    size = dest.stat().st_size
    return BackupResult(
        path=str(dest),
        bytes=size,
        pages=0,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
