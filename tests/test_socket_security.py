"""The control socket's guard rails, against the real daemon: file mode, peer
credentials, connection and idle caps, and clients that never read."""

from __future__ import annotations

import codecs
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
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


def test_a_full_table_closes_the_idlest_connection_for_a_new_one(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, control={"max_connections": 2}).start()
    with d.client() as first, d.client() as second:
        assert first.call("ping") and second.call("ping")
        # first is now the idlest: the third client gets in, and first is closed.
        with d.client() as third:
            assert third.call("ping")["version"]
            told = json.loads(first.read_raw())["error"]  # told why, then closed
            assert told["data"]["error_code"] == "TOO_MANY_CONNECTIONS"
            assert "idlest" in told["message"]
            assert first._file.readline() == b""
        assert second.call("ping")["version"]
    d.wait_log(lambda e: e["event"] == "control.idlest_closed" and e["watching"] is False)
    assert d.stop() == 0


def test_silent_connections_filling_the_table_never_lock_a_client_out(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """128 connections (the default table) that never say a word: the CLI and the
    browser host still get in at once, long before idle_timeout_s (300 s)."""
    d = _daemon(daemons, tmp_path).start()
    silent = []
    try:
        for _ in range(128):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.sock))
            silent.append(s)
        with d.client() as c:  # the 128 are all accepted before this one is answered
            assert c.call("ping")["version"]
        watcher = d.client()
        watcher.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"watch","params":{}}\n')
        assert _read_answer(watcher)["result"]["subscribed"] is True
        for _ in range(3):
            out = subprocess.run(
                [sys.executable, "-m", "readdod", "ping", "--socket", str(d.sock)],
                capture_output=True,
                text=True,
                timeout=120,
                env=_clean_env(),
            )
            assert out.returncode == 0 and "TOO_MANY" not in out.stderr, out
        frame = msgspec.json.encode({"method": "list", "id": 1, "params": {}})
        host = subprocess.run(
            [sys.executable, "-m", "readdod", "browser-host", "--socket", str(d.sock)],
            input=struct.pack("<I", len(frame)) + frame,
            capture_output=True,
            timeout=120,
            env=_clean_env(),
        )
        assert b'"items"' in host.stdout, host
        # Silent ones went first: the watch is still served.
        watcher.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}\n')
        assert _read_answer(watcher)["result"]["version"]
        watcher.close()
        # Each client that left freed its place again: two were made by closing the idlest.
        closed = d.wait_log(lambda e: e["event"] == "control.idlest_closed", count=2)
        assert not any(e["watching"] for e in closed)
        assert not any(e["event"] == "control.too_many_connections" for e in d.logs)
    finally:
        for s in silent:
            s.close()
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


# --- whom a client talks to: squatted directories and strangers' daemons -----------------

_STRANGER_ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"version":"a stranger","pid":1}}\n'


def _fake_daemon(sock: Path, record: Path, uid: int | None, gid: int | None, ready: int) -> None:
    """Another user's "daemon" (in a forked child): it records every byte a client sends
    and answers any line as readdod would. It binds as the caller, then becomes ``uid``
    before listen(): SO_PEERCRED reports whoever called listen()."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock))
    sock.chmod(0o777)
    if uid is not None and gid is not None and os.getuid() != uid:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    srv.listen(16)
    os.write(ready, b"ready")
    os.close(ready)
    while True:
        conn, _ = srv.accept()
        conn.settimeout(5)
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        with record.open("ab") as f:
            f.write(data)
        try:
            conn.sendall(_STRANGER_ANSWER)
        except OSError:
            pass
        conn.close()


VICTIM = "readdod-victim"


class FakeDaemon:
    """:func:`_fake_daemon` in a forked child; ``received`` is every byte clients sent it.

    ``bind_first``: bind as root, then listen as ``uid`` (a socket in a directory only
    root may write, answered by someone else); otherwise the child becomes ``uid`` first.
    """

    def __init__(
        self, sock: Path, uid: int | None = None, gid: int | None = None, bind_first: bool = False
    ) -> None:
        # Somewhere any uid may write what it heard (the tests read it back as root).
        self.dir = Path(tempfile.mkdtemp(prefix="readdod-heard-"))
        self.dir.chmod(0o755)
        self.record = self.dir / "heard"
        self.record.touch()
        self.record.chmod(0o666)
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: only raw socket calls, then _exit
            try:
                os.close(read_end)
                if not bind_first and uid is not None and gid is not None:
                    os.setgroups([])
                    os.setgid(gid)
                    os.setuid(uid)
                _fake_daemon(sock, self.record, uid, gid, write_end)
            finally:
                os._exit(1)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as r:
            assert r.read() == b"ready"

    @property
    def received(self) -> bytes:
        return self.record.read_bytes()

    def alive(self) -> bool:
        return os.waitpid(self.pid, os.WNOHANG) == (0, 0)

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        shutil.rmtree(self.dir, ignore_errors=True)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment with no socket named by it: the default directory decides."""
    drop = ("READDOD_", "XDG_RUNTIME_DIR", "RUNTIME_DIRECTORY")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(extra)
    return env


@pytest.fixture
def victim() -> Iterator[pwd.struct_passwd]:
    """A second Unix user who is neither root nor ``nobody`` (the attacker): these tests
    NEED ROOT to create it (``useradd``) and to run processes as both users."""
    if not IS_ROOT:
        pytest.skip("needs root: creates a second Unix user (readdod-victim) and runs as nobody")
    try:
        user = pwd.getpwnam(VICTIM)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", VICTIM],
            check=True,
        )
        user = pwd.getpwnam(VICTIM)
    yield user


@pytest.fixture
def squatted(victim: pwd.struct_passwd) -> Iterator[tuple[Path, FakeDaemon, Path]]:
    """``/tmp/readdod-<victim's uid>`` made first by ``nobody`` (mode 0777), with nobody's
    socket bound in it; also a home for the victim. Yields (socket, attacker, home)."""
    nobody = pwd.getpwnam("nobody")
    squat = Path(f"/tmp/readdod-{victim.pw_uid}")
    home = Path(tempfile.mkdtemp(prefix="readdod-victim-"))
    os.chown(home, victim.pw_uid, victim.pw_gid)
    shutil.rmtree(squat, ignore_errors=True)
    subprocess.run(
        ["mkdir", "-m", "0777", str(squat)], check=True, user=nobody.pw_uid, group=nobody.pw_gid
    )
    attacker = FakeDaemon(squat / "readdod.sock", nobody.pw_uid, nobody.pw_gid)
    try:
        yield squat / "readdod.sock", attacker, home
    finally:
        attacker.close()
        for path in (squat, home):
            shutil.rmtree(path, ignore_errors=True)


def _as_victim(victim: pwd.struct_passwd, home: Path, *args: str) -> tuple[int, str, str]:
    """``readdod ARGS`` run by the victim: its exit code, stdout and stderr.

    A forked child that became the victim runs the CLI's entry point, with every module
    loaded before the fork (root's Python is not the victim's to read or run).
    """
    import anyio._backends._asyncio  # noqa: F401  (what serve needs, loaded while root)

    import readdod.service.daemon  # noqa: F401
    from readdod.cli.entry import main

    for name in ("ascii", "latin-1", "utf-8", "idna"):
        codecs.lookup(name)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the victim, run the CLI, then _exit
        code = 70
        try:
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.setgroups([])
            os.setgid(victim.pw_gid)
            os.setuid(victim.pw_uid)
            os.chdir(home)
            env = _clean_env(HOME=str(home))
            os.environ.clear()
            os.environ.update(env)
            code = main(list(args))
        except BaseException as exc:
            print(f"the victim's run failed: {exc!r}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    with os.fdopen(out_r, "rb") as out, os.fdopen(err_r, "rb") as err:
        stdout, stderr = out.read(), err.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), stdout.decode(), stderr.decode()


def test_a_client_refuses_the_default_directory_another_user_made_first(
    victim: pwd.struct_passwd, squatted: tuple[Path, FakeDaemon, Path]
) -> None:
    sock, attacker, home = squatted
    code, stdout, stderr = _as_victim(victim, home, "ping")
    assert code == 4, (stdout, stderr)
    assert "SOCKET_UNSAFE" in stderr and str(sock.parent) in stderr
    assert f"belongs to uid {pwd.getpwnam('nobody').pw_uid}" in stderr
    assert "a stranger" not in stdout
    assert attacker.received == b""  # not a byte of the victim's went to the attacker


def test_the_daemon_refuses_the_default_directory_another_user_made_first(
    victim: pwd.struct_passwd, squatted: tuple[Path, FakeDaemon, Path]
) -> None:
    sock, attacker, home = squatted
    code, stdout, stderr = _as_victim(victim, home, "serve")
    assert code == 4, (stdout, stderr)
    assert "SOCKET_UNSAFE" in stderr and str(sock.parent) in stderr
    assert "XDG_RUNTIME_DIR" in stderr  # the fix
    assert sock.exists() and attacker.alive()  # it did not touch the socket
    assert attacker.received == b""


@pytest.fixture
def open_to_all(tmp_path: Path) -> Iterator[tuple[Path, FakeDaemon]]:
    """A socket directory of the user's own, but writable by everyone (0777), where a
    process listens: anyone could have put it there."""
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    fake = FakeDaemon(loose / "readdod.sock")
    try:
        yield loose / "readdod.sock", fake
    finally:
        fake.close()


def _browser_host(sock: Path, tmp_path: Path) -> tuple[int, str]:
    """A list through ``readdod browser-host``: its answer's error code and message."""
    frame = msgspec.json.encode({"method": "list", "id": 1, "params": {}})
    proc = subprocess.run(
        [sys.executable, "-m", "readdod", "browser-host", "--socket", str(sock)],
        input=struct.pack("<I", len(frame)) + frame,
        capture_output=True,
        timeout=120,
        env=_clean_env(HOME=str(tmp_path)),
    )
    (size,) = struct.unpack("<I", proc.stdout[:4])
    answer = msgspec.json.decode(proc.stdout[4 : 4 + size])
    err = answer["error"]
    return proc.returncode, f"{err['data']['error_code']}: {err['message']}"


CLIENTS = {
    "cli": ("ping",),
    "tui": ("tui",),
    "import": ("import", str(Path(__file__).parent / "imports" / "urls.txt"), "--intent", "x"),
}


@pytest.mark.parametrize("client", [*CLIENTS, "browser-host"])
def test_every_client_refuses_a_directory_others_may_write(
    client: str, tmp_path: Path, open_to_all: tuple[Path, FakeDaemon]
) -> None:
    sock, fake = open_to_all
    if client == "browser-host":
        code, said = _browser_host(sock, tmp_path)
        assert code == 0  # the host stays up and answers the browser with why
    else:
        out = subprocess.run(
            [sys.executable, "-m", "readdod", *CLIENTS[client], "--socket", str(sock)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_clean_env(HOME=str(tmp_path)),
        )
        code, said = out.returncode, out.stderr
        assert code == 4, out
    assert "SOCKET_UNSAFE" in said and str(sock.parent) in said, said
    assert f"chmod go-w {sock.parent}" in said
    assert fake.received == b""


def test_the_daemon_refuses_a_directory_others_may_write(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    d = _daemon(daemons, tmp_path, control={"socket": str(loose / "r.sock")})
    d.start(wait=False)
    assert d.proc is not None and d.proc.wait(timeout=60) == 4
    d.close()
    said = d.stderr.decode()
    assert "SOCKET_UNSAFE" in said and f"chmod go-w {loose}" in said, said
    assert not (loose / "r.sock").exists()


@pytest.mark.skipif(not IS_ROOT, reason="needs root: runs a listener as the user nobody")
@pytest.mark.parametrize("client", [*CLIENTS, "browser-host"])
def test_every_client_checks_the_daemons_uid_before_it_sends_a_byte(
    client: str, tmp_path: Path, open_dir: Path
) -> None:
    """A safe directory (root's, 0755), but the process listening in it is nobody's:
    someone moved the daemon's socket aside and bound their own."""
    nobody = pwd.getpwnam("nobody")
    sock = open_dir / "readdod.sock"
    fake = FakeDaemon(sock, nobody.pw_uid, nobody.pw_gid, bind_first=True)
    try:
        if client == "browser-host":
            _, said = _browser_host(sock, tmp_path)
        else:
            out = subprocess.run(
                [sys.executable, "-m", "readdod", *CLIENTS[client], "--socket", str(sock)],
                capture_output=True,
                text=True,
                timeout=120,
                env=_clean_env(HOME=str(tmp_path)),
            )
            assert out.returncode == 4, out
            said = out.stderr
        assert "SOCKET_UNSAFE" in said and str(sock) in said, said
        assert f"runs as uid {nobody.pw_uid}" in said
        assert fake.received == b""
    finally:
        fake.close()


@pytest.mark.skipif(not IS_ROOT, reason="needs root: runs the daemon's listener as nobody")
def test_a_client_trusts_the_owner_of_a_directory_root_made() -> None:
    """systemd's /run/readdod for a DynamicUser: root made it (in /run, which only root
    may write) and gave it to the daemon's user, so that user's daemon is trusted there
    (by root, or by a member of its group); the same owner in /tmp is not."""
    nobody = pwd.getpwnam("nobody")
    runtime = Path(tempfile.mkdtemp(prefix="readdod-test-", dir="/run"))
    runtime.chmod(0o755)
    os.chown(runtime, nobody.pw_uid, nobody.pw_gid)
    sock = runtime / "readdod.sock"
    fake = FakeDaemon(sock, nobody.pw_uid, nobody.pw_gid)
    try:
        with Client(sock) as c:
            assert c.call("ping")["version"] == "a stranger"
        assert b'"ping"' in fake.received
    finally:
        fake.close()
        shutil.rmtree(runtime)
