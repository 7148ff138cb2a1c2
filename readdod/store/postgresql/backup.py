"""Backups of a PostgreSQL database: ``pg_dump``, the tool that makes them consistent.

readdod cannot copy a server's files the way it copies a SQLite file; it
runs ``pg_dump`` (custom format, for ``pg_restore``) where one is installed,
and otherwise says which command to run, rather than failing obscurely. The
DSN's secrets never reach pg_dump's command line, which every local user can
read: the password goes through ``PGPASSWORD``, the secrets libpq has no
variable for through a private service file, removed after. The
target is guarded as the SQLite backup's is: the daemon may run as root, and
a client must not make it overwrite a file that is not an earlier backup.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import anyio
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from readdod.errors import BackupUnsupported, ValidationFailed
from readdod.runtime.dsn import REDACTED, SECRET_PARAMS
from readdod.runtime.logging import scrub_text
from readdod.store.rows import BackupResult

#: The service a private service file names when a secret has no variable of its own.
SERVICE = "readdod-backup"


class Connection(NamedTuple):
    """``store.dsn`` split for ``pg_dump``: what its command line may show, and the
    secrets, which reach it only through its environment."""

    shown: dict[str, str]
    secrets: dict[str, str]


def split_dsn(dsn: str, password: str | None = None) -> Connection:
    """``dsn``'s parameters (libpq's reading of either form) without its secrets, and the
    secrets; ``password`` (``store.password_env``) over the DSN's own, as at connect."""
    parts = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    secrets = {k: parts.pop(k) for k in sorted(parts) if k in SECRET_PARAMS}
    if password is not None:
        secrets["password"] = password
    return Connection(parts, secrets)


def shown_dsn(dsn: str) -> str:
    """``dsn`` without its secrets, fit for a command line, a log line or a message."""
    try:
        shown = split_dsn(dsn).shown
    except psycopg.Error:  # an unparsable string is shown as nothing rather than leaked
        return "<the configured store.dsn>"
    return make_conninfo("", **shown)


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


def dump_command(
    dsn: str, dest: str | Path, pg_dump: str = "pg_dump", *, service: bool = False
) -> list[str]:
    """The ``pg_dump`` command line that copies the database at ``dsn`` to ``dest``: no
    secret in it (every local user can read a process's command line); ``service``: the
    rest comes from the private service file (:func:`dump_environment`)."""
    dbname = shown_dsn(dsn) + (f" service={SERVICE}" if service else "")
    return [pg_dump, "--format=custom", f"--file={dest}", f"--dbname={dbname}"]


def dump_environment(secrets: dict[str, str], private: Path) -> dict[str, str]:
    """What ``pg_dump``'s environment adds for ``secrets``: ``PGPASSWORD``, and for a
    secret without a variable (sslpassword, oauth_client_secret, the SCRAM keys) a
    service file in the private directory ``private`` (mode 0600), ``PGSERVICEFILE``.

    A process's environment is readable by its own user only, unlike its arguments.
    """
    env: dict[str, str] = {}
    rest = dict(secrets)
    if "password" in rest:
        env["PGPASSWORD"] = rest.pop("password")
    if not rest:
        return env
    for key, value in rest.items():
        if "\n" in value or "\r" in value or value != value.strip():
            raise BackupUnsupported(
                f"the DSN's {key} cannot be passed to pg_dump (it has a line break or spaces"
                " at its ends); put it in a service file of your own and name it in store.dsn"
            )
    path = private / "pg_service.conf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"[{SERVICE}]\n" + "".join(f"{k}={v}\n" for k, v in rest.items()))
    env["PGSERVICEFILE"] = str(path)
    return env


#: The first bytes of a pg_dump custom-format archive: only such a file is replaced.
_ARCHIVE_MAGIC = b"PGDMP"


def target_path(dest: str | Path) -> Path:
    """``dest`` itself, or a timestamped archive inside it when it is a directory; a path
    whose replacement could harm anything (not absolute, a device, a file that is not
    an earlier archive) is refused with ValidationFailed."""
    as_dir = str(dest).endswith("/")
    dest = Path(dest)
    if not dest.is_absolute():
        raise ValidationFailed(f"backup path must be absolute: {dest}")
    if dest.is_dir():
        return dest / time.strftime("readdod-%Y%m%dT%H%M%SZ.dump", time.gmtime())
    if as_dir:
        raise ValidationFailed(f"cannot back up into {dest}/: no such directory")
    if not dest.parent.is_dir():
        raise ValidationFailed(f"cannot back up to {dest}: {dest.parent} is not a directory")
    if dest.exists() and not dest.is_file():
        raise ValidationFailed(f"cannot back up to {dest}: it exists and is not a regular file")
    if dest.is_file() and dest.stat().st_size > 0:
        try:
            with dest.open("rb") as f:
                head = f.read(len(_ARCHIVE_MAGIC))
        except OSError as exc:
            raise ValidationFailed(f"cannot back up to {dest}: {exc.strerror}") from exc
        if head != _ARCHIVE_MAGIC:
            raise ValidationFailed(
                f"cannot back up to {dest}: it exists and is not a pg_dump archive;"
                " choose a new path or a directory"
            )
    return dest


def _reserve(tmp: Path) -> None:
    """Make ``tmp`` readable by the daemon's user only before pg_dump writes rows into it."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)


def _publish(tmp: Path, target: Path) -> None:
    """Sync the finished archive and rename it into place: ``target`` is whole or old."""
    with tmp.open("rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(target)
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


async def dump_database(dsn: str, password: str | None, dest: str | Path) -> BackupResult:
    """Copy the database to ``dest`` with ``pg_dump``, as the SQLite store copies its file:
    into a temporary file beside the target (mode 0600), synced, then renamed; a
    directory gets a timestamped archive. BackupUnsupported when pg_dump cannot."""
    target = target_path(dest)
    told = shlex.join(dump_command(dsn, target))
    pg_dump = find_pg_dump()
    if pg_dump is None:
        raise BackupUnsupported(
            "readdod backs up a PostgreSQL database with pg_dump, which is not installed on"
            " the daemon's machine; run it where it is (add the password through PGPASSWORD"
            f" or ~/.pgpass): {told}"
        )
    conn = split_dsn(dsn, password)
    if set(conn.secrets) - {"password"} and "service" in conn.shown:
        raise BackupUnsupported(
            "store.dsn names a service and holds a secret pg_dump can only take from a"
            " service file: move the secret into that service's entry, then back up again"
        )
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    command = dump_command(dsn, tmp, pg_dump, service=bool(set(conn.secrets) - {"password"}))
    started = time.perf_counter()
    private = Path(tempfile.mkdtemp(prefix="readdod-pg_dump-"))  # mode 0700, ours alone
    try:
        env = {**os.environ, **dump_environment(conn.secrets, private)}
        _reserve(tmp)
        done = await anyio.run_process(command, env=env, check=False)
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            last = said[-1] if said else str(done.returncode)
            for secret in filter(None, conn.secrets.values()):
                last = last.replace(secret, REDACTED)
            raise BackupUnsupported(
                f"pg_dump could not copy the database ({scrub_text(last)});"
                f" run it yourself, with a pg_dump as new as the server: {told}"
            )
        _publish(tmp, target)
    except OSError as exc:
        raise ValidationFailed(f"cannot write the backup to {target}: {exc.strerror}") from exc
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(private, ignore_errors=True)
    return BackupResult(
        path=str(target),
        bytes=target.stat().st_size,
        pages=0,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
