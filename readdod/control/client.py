"""A small blocking client for the control socket (used by the CLI and tests).

Before it sends a byte it checks whom it talks to: the socket's directory must
be safe (:func:`readdod.control.security.socket_dir_owner`) and the daemon at
the other end must run as the user, root, or that directory's trusted owner.
"""

from __future__ import annotations

import itertools
import socket
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from readdod.control.security import check_daemon, trusted_daemon_uids
from readdod.errors import DaemonUnavailable, ReaddodError, UnsafeSocket


class RpcError(ReaddodError):
    """An error answer from the daemon."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.data = data or {}

    @property
    def error_code(self) -> str:
        return str(self.data.get("error_code", f"RPC_{self.rpc_code}"))


def not_running_message(path: Path) -> str:
    return (
        f"readdod is not running (nothing answers on {path}). Start it with"
        " `readdod serve`, or `systemctl --user start readdod` if it is installed as a service."
    )


class Client:
    def __init__(self, path: Path, timeout_s: float | None = 60.0) -> None:
        self.path = path
        self._ids = itertools.count(1)
        trusted = trusted_daemon_uids(path.parent)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout_s)
        try:
            self._sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            self._sock.close()
            raise DaemonUnavailable(not_running_message(path)) from exc
        except PermissionError as exc:
            self._sock.close()
            raise DaemonUnavailable(
                f"permission denied on {path}: run readdod as the daemon's user"
            ) from exc
        try:
            check_daemon(self._sock, path, trusted)
        except BaseException:
            self._sock.close()
            raise
        self._file = self._sock.makefile("rb")

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def settimeout(self, timeout_s: float | None) -> None:
        """Change the deadline of each later read and write (None: wait as long as it takes)."""
        self._sock.settimeout(timeout_s)

    def interrupt(self) -> None:
        """Wake a thread blocked reading this connection (a watch), from any other thread."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed or never connected: nothing is blocked on it

    def send_raw(self, data: bytes) -> None:
        self._sock.sendall(data)

    def read_raw(self) -> bytes:
        line = self._file.readline()
        if not line:
            raise DaemonUnavailable("the daemon closed the connection")
        return line

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        req_id = next(self._ids)
        msg = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}}
        try:
            self._sock.sendall(msgspec.json.encode(msg) + b"\n")
            answer = msgspec.json.decode(self.read_raw())
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise DaemonUnavailable(f"lost the connection to the daemon ({exc})") from exc
        if "error" in answer:
            err = answer["error"]
            raise RpcError(err.get("code", 0), err.get("message", ""), err.get("data"))
        return answer["result"]


def check(path: Path) -> None:
    """Refuse an unsafe socket before a client that waits for its daemon starts (the TUI):
    its directory, and the uid of whoever answers there; no daemon at all is fine here."""
    try:
        Client(path, timeout_s=5.0).close()
    except UnsafeSocket:
        raise
    except (DaemonUnavailable, OSError):
        pass  # not running (yet): the client says so itself, and retries


def call(path: Path, method: str, params: dict[str, Any] | None = None) -> Any:
    with Client(path) as client:
        return client.call(method, params)
