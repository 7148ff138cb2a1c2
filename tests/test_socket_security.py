"""The control socket's guard rails, against the real daemon: file mode, peer
credentials, connection and idle caps, and clients that never read."""

from __future__ import annotations

import grp
import json
import os
import pwd
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client
from readdod.control.security import PeerPolicy, peer_credentials
from tests.daemon_proc import DaemonProc

IS_ROOT = os.geteuid() == 0


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may traverse, for a socket another uid must reach."""
    path = Path(tempfile.mkdtemp(prefix="readdod-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, **sections)
    sock = sections.get("control", {}).get("socket")
    if sock:
        d.sock = Path(sock)
    made.append(d)
    return d


def _other_group() -> int:
    """A group that is not the daemon's own (when it may use one)."""
    if IS_ROOT:
        for name in ("users", "nogroup", "daemon"):
            try:
                return grp.getgrnam(name).gr_gid
            except KeyError:
                continue
    return os.getgid()


def _read_answer(c: Client) -> dict[str, Any]:
    """The next line that answers a request (watch notifications are skipped)."""
    while True:
        msg: dict[str, Any] = json.loads(c.read_raw())
        if "method" not in msg:
            return msg


def test_socket_file_is_0600_by_default(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path).start()
    st = d.sock.stat()
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid()
    assert d.stop() == 0


def test_socket_file_is_0660_for_the_control_group(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    gid = _other_group()
    d = _daemon(daemons, tmp_path, control={"group": str(gid)}).start()
    st = d.sock.stat()
    assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == gid
    assert d.stop() == 0


def test_an_unknown_group_is_a_config_error(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, control={"group": "no-such-group-here"})
    d.start(wait=False)
    assert d.proc is not None and d.proc.wait(timeout=60) == 2
    d.close()
    assert b"control.group" in d.stderr


def test_the_peer_check_on_real_credentials() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        cred = peer_credentials(a)
    assert cred is not None
    assert (cred.pid, cred.uid, cred.gid) == (os.getpid(), os.getuid(), os.getgid())
    assert PeerPolicy(owner_uid=cred.uid).allows(cred.uid)
    stranger = cred.uid + 4242
    assert not PeerPolicy(owner_uid=cred.uid).allows(stranger)
    assert PeerPolicy(owner_uid=cred.uid, allowed_uids=[stranger]).allows(stranger)
    assert PeerPolicy(owner_uid=stranger).allows(0)  # root always may
    assert PeerPolicy(owner_uid=stranger).allows(cred.uid) == (cred.uid == 0)


def _as_nobody(sock: Path, gid: int) -> dict[str, Any]:
    """Connect and ping from a forked child that became ``nobody`` (a member of ``gid``)."""
    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only raw socket calls, then _exit
        code = 0
        try:
            os.close(read_end)
            os.setgroups([gid])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(str(sock))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            s.shutdown(socket.SHUT_WR)
            f = s.makefile("rb")
            first = f.readline()
            rest = f.readline()
            out = {"uid": os.getuid(), "first": json.loads(first), "closed": rest == b""}
            os.write(write_end, json.dumps(out).encode())
        except BaseException as exc:
            os.write(write_end, json.dumps({"child_error": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as r:
        raw = r.read()
    _, status = os.waitpid(pid, 0)
    result: dict[str, Any] = json.loads(raw)
    assert os.waitstatus_to_exitcode(status) == 0, result
    assert result["uid"] == nobody.pw_uid
    return result


@pytest.mark.skipif(not IS_ROOT, reason="connecting as another uid needs root")
def test_a_group_member_not_in_allowed_uids_is_forbidden(
    tmp_path: Path, open_dir: Path, daemons: list[DaemonProc]
) -> None:
    gid = _other_group()
    nobody_uid = pwd.getpwnam("nobody").pw_uid
    sock = open_dir / "r.sock"
    d = _daemon(daemons, tmp_path, control={"socket": str(sock), "group": str(gid)}).start()
    got = _as_nobody(sock, gid)
    err = got["first"]["error"]
    assert (err["code"], err["data"]["error_code"]) == (403, "FORBIDDEN")
    assert f"uid {nobody_uid}" in err["message"] and "allowed_uids" in err["message"]
    assert got["closed"]
    d.wait_log(lambda e: e["event"] == "control.forbidden" and e.get("uid") == nobody_uid)
    assert d.call("ping")["version"]  # the owner still gets in
    assert d.stop() == 0

    (tmp_path / "second").mkdir()
    d2 = _daemon(
        daemons,
        tmp_path / "second",
        control={"socket": str(sock), "group": str(gid), "allowed_uids": [nobody_uid]},
    ).start()
    got = _as_nobody(sock, gid)
    assert d2.proc is not None and got["first"]["result"]["pid"] == d2.proc.pid
    assert d2.stop() == 0


def test_connections_beyond_the_cap_are_refused_and_the_daemon_keeps_serving(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, control={"max_connections": 2}).start()
    with d.client() as first, d.client() as second:
        assert first.call("ping") and second.call("ping")
        with d.client() as third:
            err = json.loads(third.read_raw())["error"]
            assert (err["code"], err["data"]["error_code"]) == (503, "TOO_MANY_CONNECTIONS")
            assert third._file.readline() == b""  # closed by the daemon
        assert first.call("ping")["version"] and second.call("ping")["version"]
    d.wait_log(lambda e: e["event"] == "control.too_many_connections")
    assert d.stop() == 0


def test_idle_connections_are_closed_but_a_watch_is_not(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, control={"idle_timeout_s": 0.5}).start()
    with d.client() as watcher, d.client() as idle:
        watcher.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"watch","params":{}}\n')
        assert _read_answer(watcher)["result"]["subscribed"] is True
        started = time.monotonic()
        # The idle client sends nothing: the daemon closes it after idle_timeout_s.
        assert idle._file.readline() == b""
        assert time.monotonic() - started >= 0.4
        # The watcher has been silent even longer, yet it is still served.
        watcher.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}\n')
        assert _read_answer(watcher)["result"]["version"]
    assert len(d.wait_log(lambda e: e["event"] == "control.idle_closed")) >= 1
    assert d.stop() == 0


def test_a_client_that_never_reads_does_not_slow_the_others(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, control={"send_timeout_s": 3.0}).start()
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.connect(str(d.sock))
    flood = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 50_000

    def write_and_never_read() -> None:
        try:
            stuck.sendall(flood)
        except OSError:
            pass  # the daemon gave up on us, as it should

    writer = threading.Thread(target=write_and_never_read, daemon=True)
    writer.start()
    latencies = []
    with d.client() as other:
        while not any(e["event"] == "control.client_too_slow" for e in d.logs):
            t0 = time.perf_counter()
            assert other.call("ping")["version"]
            latencies.append(time.perf_counter() - t0)
            if len(latencies) > 100_000:
                raise AssertionError("the stuck client was never disconnected")
        assert other.call("ping")["version"]
    writer.join(timeout=30)
    stuck.close()
    # The slow client was cut off only after send_timeout_s, during which the other was served.
    assert len(latencies) > 10
    assert max(latencies) < 1.5, max(latencies)
    assert d.stop() == 0
