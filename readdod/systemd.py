"""The bits of the systemd protocol readdod speaks (sd_notify)."""

from __future__ import annotations

import os
import socket


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to $NOTIFY_SOCKET; False when not under systemd."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return False
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(addr)
            sock.sendall(state.encode())
        except OSError:
            return False
    return True
