"""Who may talk to the control socket, and whom a client may talk to.

Two layers for the daemon: the socket file's mode (0600, or 0660 owned by
``control.group``) keeps strangers from connecting at all, and every
connection's peer credentials (``SO_PEERCRED``) are checked against the
daemon's own uid, root and ``control.allowed_uids``, so a group member still
needs to be named.

The other way round, a socket in a directory someone else made could be
theirs (``/tmp/readdod-$UID`` made first by another user): the daemon and
every client refuse a socket directory that is writable by group or others,
or owned by anyone but the user or root unless root (or the user) made its
parent, and a client checks the daemon's uid (``SO_PEERCRED`` again) before
it sends a byte.
"""

from __future__ import annotations

import grp
import os
import socket
import stat
import struct
from collections.abc import Iterable
from pathlib import Path

import msgspec

from readdod.errors import ConfigError, UnsafeSocket

SOCKET_MODE = 0o600
GROUP_SOCKET_MODE = 0o660
GROUP_DIR_MODE = 0o750

_UCRED = struct.Struct("3i")


class PeerCred(msgspec.Struct, frozen=True):
    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCred | None:
    """The connecting process's pid/uid/gid, or None where the OS cannot tell."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None or sock.family != socket.AF_UNIX:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, opt, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return PeerCred(pid=pid, uid=uid, gid=gid)


class PeerPolicy:
    """The uid check: the daemon's owner, root, and the configured uids."""

    def __init__(self, owner_uid: int, allowed_uids: Iterable[int] = ()) -> None:
        self.owner_uid = owner_uid
        self.allowed = frozenset(allowed_uids)

    def allows(self, uid: int) -> bool:
        return uid == self.owner_uid or uid == 0 or uid in self.allowed

    def forbidden_message(self, cred: PeerCred) -> str:
        return (
            f"uid {cred.uid} may not use this readdod daemon (it runs as uid {self.owner_uid});"
            " ask its operator to add your uid to control.allowed_uids"
        )


def _trusted_chain(directory: Path, uid: int) -> bool:
    """Whether only root or ``uid`` could have made ``directory``'s entries: it and every
    ancestor are owned by one of them and writable by nobody else (so ``/tmp`` is not)."""
    for d in (directory, *directory.parents):
        try:
            st = d.stat()
        except OSError:
            return False
        if st.st_uid not in (0, uid) or st.st_mode & 0o022:
            return False
    return True


def socket_dir_owner(directory: Path, uid: int | None = None) -> int | None:
    """The uid trusted to own ``directory``'s socket, after checking the directory is safe.

    Safe: not writable by group or others, and owned by ``uid`` (the caller's, by
    default), by root, or by anyone root or ``uid`` gave it to (its parent, up to ``/``,
    is theirs alone: systemd's ``/run/readdod`` for a ``DynamicUser``). Anything else is
    :class:`UnsafeSocket`, naming the path and the fix. A directory that does not exist
    yet answers None (the daemon makes it; a client finds no daemon).
    """
    uid = os.geteuid() if uid is None else uid
    real = Path(os.path.realpath(directory))
    try:
        st = real.stat()
    except FileNotFoundError:
        return None
    shown = str(directory) if real == directory else f"{directory} (that is, {real})"
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeSocket(
            f"the socket's directory {shown} is not a directory; remove it,"
            " or set control.socket (or $READDOD_SOCKET) to a path in a private directory"
        )
    if st.st_uid not in (0, uid) and not _trusted_chain(real.parent, uid):
        raise UnsafeSocket(
            f"the socket's directory {shown} belongs to uid {st.st_uid}, not to you"
            f" (uid {uid}), in a directory other users may write: another user may have"
            " made it to receive what you send. Do not use it: remove it (as root if"
            " need be), or set $XDG_RUNTIME_DIR, control.socket or $READDOD_SOCKET to a"
            " directory of your own"
        )
    if st.st_mode & 0o022:
        raise UnsafeSocket(
            f"the socket's directory {shown} is writable by group or others"
            f" (mode {stat.S_IMODE(st.st_mode):04o}): anyone could put their own socket"
            f" there. Run `chmod go-w {real}` (0700, or 0750 with control.group)"
        )
    return st.st_uid


def trusted_daemon_uids(directory: Path, uid: int | None = None) -> frozenset[int]:
    """The uids a client accepts as the daemon answering in ``directory``: its own, root's,
    and the directory's owner once :func:`socket_dir_owner` finds it safe."""
    uid = os.geteuid() if uid is None else uid
    owner = socket_dir_owner(directory, uid)
    return frozenset({uid, 0} if owner is None else {uid, 0, owner})


def check_daemon(sock: socket.socket, path: Path, trusted: frozenset[int]) -> None:
    """Refuse the daemon at the other end of ``sock`` unless its uid is ``trusted``."""
    cred = peer_credentials(sock)
    if cred is not None and cred.uid not in trusted:
        names = ", ".join(str(u) for u in sorted(trusted))
        raise UnsafeSocket(
            f"the process answering on {path} runs as uid {cred.uid} (pid {cred.pid}), not"
            f" as a daemon you trust (uid {names}): nothing was sent to it. Stop using that"
            " socket: start your own daemon, or set control.socket (or $READDOD_SOCKET) to"
            " the right one"
        )


def resolve_group(group: str) -> int:
    """A group name or number as a gid; an unknown one is a config error."""
    if group.isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError as exc:
        raise ConfigError(
            f"control.group: no group named {group!r} on this system; create it or fix the key"
        ) from exc


def prepare_socket_dir(directory: Path, group: str | None) -> None:
    """Create the socket's directory: private, or group-traversable with a group.

    Also checks ``control.group`` before anything is opened, so a typo stops the
    daemon at once with a config error.
    """
    gid = resolve_group(group) if group is not None else None
    if socket_dir_owner(directory) is None:
        try:
            directory.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            pass  # made in between: the check below judges whoever made it
        else:
            if gid is not None:
                os.chown(directory, -1, gid)
                directory.chmod(GROUP_DIR_MODE)
    socket_dir_owner(directory)


def secure_socket_file(path: Path, group: str | None) -> None:
    """Mode 0600, or 0660 owned by ``group``, on the bound socket file."""
    if group is None:
        path.chmod(SOCKET_MODE)
        return
    gid = resolve_group(group)
    try:
        os.chown(path, -1, gid)
    except PermissionError as exc:
        raise ConfigError(
            f"control.group: cannot give {path} to group {group!r} ({exc.strerror});"
            " the daemon's user must be a member of that group"
        ) from exc
    path.chmod(GROUP_SOCKET_MODE)
