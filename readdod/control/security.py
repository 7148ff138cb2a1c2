"""Who may talk to the control socket.

Two layers: the socket file's mode (0600, or 0660 owned by ``control.group``)
keeps strangers from connecting at all, and every connection's peer
credentials (``SO_PEERCRED``) are checked against the daemon's own uid,
root and ``control.allowed_uids``, so a group member still needs to be named.
"""

from __future__ import annotations

import grp
import os
import socket
import struct
from collections.abc import Iterable
from pathlib import Path

import msgspec

from readdod.errors import ConfigError

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
    if directory.exists():
        return
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if gid is not None:
        os.chown(directory, -1, gid)
        directory.chmod(GROUP_DIR_MODE)


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
