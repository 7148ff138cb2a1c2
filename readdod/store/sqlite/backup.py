"""A consistent copy of the live database with SQLite's online backup API.

Runs in a worker thread on its own read-only connection. The copy reads one
snapshot (a read transaction held for the whole copy), so the pages copied in
later steps match the earlier ones; in WAL mode a reader never blocks the
daemon's writer, which keeps committing to the WAL meanwhile. The copy goes
to a temporary file beside the target, is checked and synced, then renamed
into place, so ``PATH`` is either the old file or a complete new backup.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from readdod.errors import InternalError, ValidationFailed
from readdod.store.rows import BackupResult

PAGES_PER_STEP = 1024
_SQLITE_MAGIC = b"SQLite format 3\x00"


def target_path(dest: str | Path) -> Path:
    """``dest`` itself, or a timestamped file inside it when it is a directory."""
    as_dir = str(dest).endswith("/")
    dest = Path(dest)
    if not dest.is_absolute():
        raise ValidationFailed(f"backup path must be absolute: {dest}")
    if dest.is_dir():
        return dest / time.strftime("readdod-%Y%m%dT%H%M%SZ.db", time.gmtime())
    if as_dir:
        raise ValidationFailed(f"cannot back up into {dest}/: no such directory")
    if not dest.parent.is_dir():
        raise ValidationFailed(f"cannot back up to {dest}: {dest.parent} is not a directory")
    return dest


def _check_target(src: Path, target: Path) -> None:
    """Refuse targets whose replacement would harm the live daemon or the system.

    Renaming a copy over the database (or its WAL, shared memory or lock file)
    would leave the daemon writing to an unlinked file and pair the new file
    with the old WAL; renaming it over a device, a socket or a file that is not
    an earlier backup would destroy it.
    """
    live = src.resolve()
    own = {live, *(live.with_name(live.name + suffix) for suffix in ("-wal", "-shm", ".lock"))}
    if target.resolve() in own:
        raise ValidationFailed(
            f"cannot back up to {target}: that is the live database (or one of its files);"
            " choose another path"
        )
    if target.exists() and not target.is_file():
        raise ValidationFailed(f"cannot back up to {target}: it exists and is not a regular file")
    if target.is_file() and target.stat().st_size > 0:
        # Refreshing an older backup is fine; clobbering some other file is not.
        try:
            with target.open("rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise ValidationFailed(f"cannot back up to {target}: {exc.strerror}") from exc
        if head != _SQLITE_MAGIC:
            raise ValidationFailed(
                f"cannot back up to {target}: it exists and is not an SQLite database;"
                " choose a new path or a directory"
            )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_database(
    src: Path, dest: str | Path, *, pages_per_step: int = PAGES_PER_STEP
) -> BackupResult:
    """Copy ``src`` to ``dest`` (blocking: call it from a worker thread)."""
    started = time.perf_counter()
    target = target_path(dest)
    _check_target(src, target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        # The copy holds every item: readable by the daemon's user only, whatever its umask.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30)
        try:
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM sqlite_schema").fetchone()  # pin the snapshot
            copy = sqlite3.connect(tmp)
            try:
                source.backup(copy, pages=pages_per_step)
                copy.execute("PRAGMA journal_mode=DELETE")
                verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
                pages = int(copy.execute("PRAGMA page_count").fetchone()[0])
            finally:
                copy.close()
        finally:
            source.close()
        if verdict != "ok":
            raise InternalError(f"the backup copy failed its check ({verdict}); nothing was kept")
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        tmp.replace(target)
        _fsync_dir(target.parent)
    except OSError as exc:
        raise ValidationFailed(f"cannot write the backup to {target}: {exc.strerror}") from exc
    except sqlite3.Error as exc:
        raise InternalError(f"backup of {src} failed: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return BackupResult(
        path=str(target),
        bytes=target.stat().st_size,
        pages=pages,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
