"""The export's I/O edge: which file to write, and writing it atomically.

One file per item, format and folder: a new card version, an edited title
or a retry after a crash rewrites the item's own file (recognised by its
first bytes) instead of piling up copies; a name taken by anything else
(another item's export, the user's own note, a folder) gets ``-2``,
``-3`` ... Nothing here knows of statuses; failures are typed errors.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from readdod.errors import ErrorCode, ExportError, ValidationFailed
from readdod.export import atomic
from readdod.export.naming import DEFAULT_PATTERN, MAX_SUFFIX

#: Temp files older than this are leftovers of a crash (a live write takes milliseconds).
STALE_TEMP_S = 600.0

_HINTS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file would exceed the file size limit readdod runs under (ulimit -f)",
    errno.ENAMETOOLONG: "the file name is too long; shorten export.filename",
    errno.ELOOP: "too many symbolic links",
    errno.EIO: "an input/output error from the device",
}


def _not_a_folder(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` (or itself) that is not a folder."""
    for candidate in (path, *path.parents):
        try:
            mode = candidate.stat().st_mode
        except OSError:
            continue
        return None if stat.S_ISDIR(mode) else candidate
    return None


def write_failure(path: Path, exc: OSError) -> ExportError:
    """An :class:`ExportError` that names ``path``, says why, and what to do."""
    code = exc.errno or 0
    blocker = _not_a_folder(path.parent) if code in (errno.ENOTDIR, errno.EEXIST) else None
    if blocker is None and code in (errno.ENOTDIR, errno.EEXIST):
        blocker = _not_a_folder(path)
    if blocker is not None:
        why = f"{blocker} is a file, not a folder"
    else:
        why = _HINTS.get(code) or exc.strerror or str(exc)
    return ExportError(
        f"cannot write the export to {path}: {why}. Fix that, or export to another folder"
        " (--out DIR, or export.dir in the config).",
        code=ErrorCode.EXPORT_WRITE_FAILED,
        path=str(path),
        debug=f"{type(exc).__name__}: errno={code} {exc}",
    )


def _owned(path: Path, marker: bytes) -> bool:
    """Whether ``path`` is a regular file that begins with ``marker`` (we wrote it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(marker)) == marker
    finally:
        os.close(fd)


class Exporter:
    """Writes rendered exports into a folder; the core records the outcome."""

    def __init__(
        self,
        default_dir: Path | None = None,
        *,
        pattern: str = DEFAULT_PATTERN,
        default_format: str = "markdown",
    ) -> None:
        self.default_dir = default_dir
        self.pattern = pattern
        self.default_format = default_format

    def folder(self, out_dir: str | None) -> Path:
        """The folder to write into: ``out_dir`` (absolute) or ``export.dir``."""
        if out_dir is None:
            if self.default_dir is None:
                raise ValidationFailed("no export folder: give out_dir, or set export.dir")
            return Path(os.path.normpath(self.default_dir))
        path = Path(out_dir).expanduser()
        if not path.is_absolute():
            raise ValidationFailed(
                f"out_dir must be an absolute path (the daemon does not share your working"
                f" directory), got {out_dir!r}"
            )
        return Path(os.path.normpath(path))

    def write(
        self,
        folder: Path,
        candidate: Callable[[int], str],
        previous: Sequence[str],
        marker: bytes,
        data: bytes,
        kin: Callable[[str], bool] | None = None,
    ) -> Path:
        """Write ``data`` into ``folder``; returns the file. Blocking: run it in a thread.

        ``candidate(n)`` is the n-th name to try; ``previous`` are files this
        item exported before (newest first), reused when still ours. ``kin``
        matches the item's names under other titles: a file of ours among
        them was written just before a crash kept it from being recorded, and
        is reused rather than left beside a new one.
        """
        target = folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for prev in map(Path, previous):
                if prev.parent == folder and _owned(prev, marker):
                    target = prev
                    atomic.write_atomic(prev, data)
                    return self._tidy(prev)
            for prev in self._kin(folder, kin, marker):
                target = prev
                atomic.write_atomic(prev, data)
                return self._tidy(prev)
            for n in range(1, MAX_SUFFIX + 1):
                target = folder / candidate(n)
                try:
                    mode = os.lstat(target).st_mode
                except FileNotFoundError:
                    try:
                        atomic.write_atomic(target, data, replace=False)
                    except FileExistsError:
                        continue
                    return self._tidy(target)
                if stat.S_ISREG(mode) and _owned(target, marker):
                    atomic.write_atomic(target, data)
                    return self._tidy(target)
        except OSError as exc:
            raise write_failure(target, exc) from exc
        raise ExportError(
            f"cannot write the export to {folder}: {candidate(1)} and {MAX_SUFFIX - 1} numbered"
            " variants are all taken. Tidy that folder, or export to another one (--out DIR).",
            code=ErrorCode.EXPORT_WRITE_FAILED,
            path=str(folder / candidate(1)),
        )

    def missing(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` that are not there (deleted since they were written).
        Blocking: run it in a thread."""
        return [p for p in paths if not os.path.lexists(p)]

    def rewrite(self, path: Path, marker: bytes, data: bytes) -> Path:
        """Write ``data`` again at ``path``, a file an export wrote that is gone, under
        the same name. Never over another's file: one that appeared there meanwhile
        is replaced only if it is ours. Blocking: run it in a thread."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                atomic.write_atomic(path, data, replace=False)
            except FileExistsError:
                if not _owned(path, marker):
                    raise ExportError(
                        f"cannot write the export again at {path}: another file took that"
                        " name since. Move it away, or export with a new export_key.",
                        code=ErrorCode.EXPORT_WRITE_FAILED,
                        path=str(path),
                    ) from None
                atomic.write_atomic(path, data)
        except OSError as exc:
            raise write_failure(path, exc) from exc
        return self._tidy(path)

    @staticmethod
    def _kin(folder: Path, kin: Callable[[str], bool] | None, marker: bytes) -> list[Path]:
        if kin is None:
            return []
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith(".") and kin(e.name))
        return [folder / name for name in names if _owned(folder / name, marker)][:1]

    @staticmethod
    def _tidy(path: Path) -> Path:
        """Remove temp files a crash left next to ``path``; they are never the real file.

        Only old ones: a young temp file may be another export of the same
        name that is being written right now.
        """
        cutoff = time.time() - STALE_TEMP_S
        try:
            with os.scandir(path.parent) as entries:
                for entry in entries:
                    if not atomic.is_temp_of(entry.name, path.name):
                        continue
                    try:
                        if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                            Path(entry.path).unlink()
                    except OSError:
                        pass
        except OSError:
            pass
        return path
