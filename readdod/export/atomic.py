"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Temp file in the same folder, write, fsync, rename over the target (or link
it in, when the name must not exist yet), fsync the folder so the rename
itself survives a power loss.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from readdod.runtime import faults

_NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})


def temp_name(path: Path) -> Path:
    """A hidden sibling of ``path``; notes apps skip dot-files."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


def is_temp_of(candidate: str, name: str) -> bool:
    return candidate.startswith(f".{name}.") and candidate.endswith(".tmp")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, replace: bool = True) -> None:
    """Put ``data`` at ``path`` atomically and durably.

    With ``replace=False`` an existing ``path`` is never clobbered, even one
    created a moment ago by someone else: :class:`FileExistsError`.
    Raises :class:`OSError` with the errno of what failed; the temp file is
    removed on any failure.
    """
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            _write_all(fd, data[: len(data) // 2])
            faults.crash_point("export:temp")
            _write_all(fd, data[len(data) // 2 :])
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            tmp.replace(path)
        else:
            try:
                os.link(tmp, path)
            except OSError as exc:
                if exc.errno not in _NO_LINK:
                    raise
                # This file system has no hard links: a plain rename (last writer wins).
                tmp.replace(path)
            else:
                tmp.unlink()
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    fsync_dir(path.parent)
