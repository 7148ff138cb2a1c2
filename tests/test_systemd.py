"""The systemd protocol against the real daemon: sd_notify over a real datagram
socket bound here, and socket activation with a real listening fd passed in."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from readdod.control.client import Client
from readdod.service import systemd
from tests.daemon_proc import DaemonProc

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database."
)


class NotifySocket:
    """A bound AF_UNIX datagram socket, like systemd's, recording every message."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            with self._cond:
                for line in data.decode().splitlines():
                    self.messages.append((time.monotonic(), line))
                self._cond.notify_all()

    def wait(
        self, match: Callable[[str], bool], *, count: int = 1, timeout: float = 30
    ) -> list[tuple[float, str]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [m for m in self.messages if match(m[1])]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"waited for {count} messages; got {self.messages[-10:]}")
                self._cond.wait(min(left, 0.5))

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    n = NotifySocket(tmp_path / "notify")
    yield n
    n.close()


def test_ready_comes_after_recovery_and_binding(tmp_path: Path, notify: NotifySocket) -> None:
    d = DaemonProc(tmp_path)
    try:
        # Leave an orphaned PROCESSING item behind: the daemon dies inside a step.
        d.start(env={"READDOD_CRASH_AT": "step:summary"})
        d.call("capture", {"text": "A page.\n\nWith a body.", "intent": "x"})
        assert d.proc is not None and d.proc.wait(timeout=60) == 86
        d.close()

        d.start(wait=False, env={"NOTIFY_SOCKET": str(notify.path)})
        notify.wait(lambda m: m == "READY=1")
        # At READY the orphan is already back in the queue and the socket answers.
        with d.db() as db:
            recovered = db.execute(
                "SELECT count(*) FROM events WHERE json_extract(detail, '$.reason')"
                " = 'orphan_recovery'"
            ).fetchone()[0]
        assert recovered == 1
        assert d.call("ping")["pid"] == d.proc.pid
        assert [m for _, m in notify.messages].count("READY=1") == 1
        assert d.stop() == 0
        notify.wait(lambda m: m == "STOPPING=1")
    finally:
        d.close()


def test_status_watchdog_and_stopping(tmp_path: Path, notify: NotifySocket) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed", "fixed_delay_ms": 500})
    try:
        d.start(env={"NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": "200000"})
        notify.wait(lambda m: m == "READY=1")
        notify.wait(lambda m: m == "STATUS=running: 0 in flight, 0 queued")

        # Pings every WATCHDOG_USEC/2 from the event loop.
        pings = notify.wait(lambda m: m == "WATCHDOG=1", count=8, timeout=10)
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(pings)]
        assert max(gaps) < 0.2, gaps  # never as late as the watchdog timeout itself

        d.call("capture", {"text": "A page.\n\nWith a body.", "intent": "x"})
        notify.wait(lambda m: m == "STATUS=running: 1 in flight, 0 queued")
        d.call("pause")  # the item in flight goes back to the queue at once
        d.call("capture", {"text": "Another page.\n\nWith a body.", "intent": "y"})
        notify.wait(lambda m: m == "STATUS=paused: 0 in flight, 2 queued")
        d.call("resume")
        d.wait_status("READY", count=2)
        notify.wait(lambda m: m == "STATUS=running: 0 in flight, 0 queued", count=2)

        assert d.stop() == 0
        stopping = notify.wait(lambda m: m == "STOPPING=1")
        assert [m for _, m in notify.messages].index("STOPPING=1") > 0
        assert len(stopping) == 1
    finally:
        d.close()


def test_no_watchdog_pings_for_another_pid(tmp_path: Path) -> None:
    assert systemd.watchdog_interval({"WATCHDOG_USEC": "4000000"}) == 2.0
    mine = {"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid())}
    assert systemd.watchdog_interval(mine) == 2.0
    other = {"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert systemd.watchdog_interval(other) is None
    assert systemd.watchdog_interval({}) is None


def test_listen_fds_only_for_this_pid() -> None:
    env = {"LISTEN_PID": str(os.getpid() + 1), "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x"}
    assert systemd.listen_fds(env) == []
    assert env == {}, "the variables are consumed so children do not inherit them"
    assert systemd.listen_fds({"LISTEN_PID": "nope", "LISTEN_FDS": "1"}) == []


class ActivatedDaemon(DaemonProc):
    """The daemon started as systemd would for readdod.socket: fd 3 is the listener."""

    def start_activated(self, listener: socket.socket, env: dict[str, str]) -> None:
        fd = listener.fileno()
        serve = [sys.executable, "-m", "readdod", "serve", "--config", str(self.config)]
        # LISTEN_PID must be the daemon's own pid, and the socket must be fd 3:
        # a wrapper moves it there, sets LISTEN_PID to its pid, and execs the daemon.
        wrapper = (
            "import os, sys\n"
            f"os.dup2({fd}, 3)\n"
            f"if {fd} != 3: os.close({fd})\n"
            "os.environ['LISTEN_PID'] = str(os.getpid())\n"
            "os.environ['LISTEN_FDS'] = '1'\n"
            "os.execv(sys.argv[1], sys.argv[1:])\n"
        )
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
        full_env.update(env)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", wrapper, *serve],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            pass_fds=(fd,),
        )
        out = threading.Thread(target=self._read_stdout, args=(self.proc,), daemon=True)
        err = threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True)
        out.start()
        err.start()
        self._threads = [out, err]


def test_socket_activation_uses_the_passed_listener(tmp_path: Path, notify: NotifySocket) -> None:
    activated = tmp_path / "activated.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(activated))
    listener.listen(16)
    # A client may connect before the daemon runs: systemd queues it on the socket.
    early = Client(activated)
    d = ActivatedDaemon(tmp_path)
    try:
        d.start_activated(listener, {"NOTIFY_SOCKET": str(notify.path)})
        listener.close()
        d.wait_log(lambda e: e["event"] == "daemon.ready")
        notify.wait(lambda m: m == "READY=1")
        with early:
            assert d.proc is not None and early.call("ping")["pid"] == d.proc.pid
        ready = d.wait_log(lambda e: e["event"] == "daemon.ready")[0]
        assert str(activated) in ready["socket"]
        # It did not bind the configured socket path of its own.
        assert not d.sock.exists()
        with Client(activated) as c:
            item = c.call("capture", {"text": ARTICLE, "intent": "learn how WAL works"})
        d.wait_status("READY", count=1)
        assert item["created"] is True
        assert d.stop() == 0
        # The socket belongs to systemd: the daemon leaves it in place.
        assert activated.exists()
    finally:
        d.close()


def test_a_passed_tcp_socket_is_refused(tmp_path: Path) -> None:
    """The control protocol trusts SO_PEERCRED: it must never listen on the network."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    d = ActivatedDaemon(tmp_path)
    try:
        d.start_activated(listener, {})
        listener.close()
        assert d.proc is not None and d.proc.wait(timeout=60) == 2
        for t in d._threads:
            t.join(timeout=10)
        assert b"not a Unix stream socket" in d.stderr
        assert not d.sock.exists()
    finally:
        d.close()


@pytest.mark.anyio
async def test_a_blocked_event_loop_stops_the_watchdog_pings(
    notify: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pings come from the loop itself, so systemd sees a stuck daemon as stuck."""
    import anyio

    monkeypatch.setenv("NOTIFY_SOCKET", str(notify.path))
    async with anyio.create_task_group() as tg:
        tg.start_soon(systemd.watchdog_loop, 0.02)
        await anyio.to_thread.run_sync(lambda: notify.wait(lambda m: m == "WATCHDOG=1", count=3))
        time.sleep(0.5)  # the fault under test: something blocks the event loop
        before = len(notify.messages)
        await anyio.to_thread.run_sync(
            lambda: notify.wait(lambda m: m == "WATCHDOG=1", count=before + 3)
        )
        tg.cancel_scope.cancel()
    stamps = [t for t, m in notify.messages if m == "WATCHDOG=1"]
    assert max(b - a for a, b in itertools.pairwise(stamps)) >= 0.45


@pytest.mark.anyio
async def test_status_is_sent_on_change_and_refreshed(
    notify: NotifySocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    monkeypatch.setenv("NOTIFY_SOCKET", str(notify.path))
    state = {"queued": 0}

    async def read() -> str:
        return systemd.status_line(
            in_flight=0, queued=state["queued"], paused=False, draining=False
        )

    reporter = systemd.StatusReporter(read, poll_s=30, refresh_s=0.3)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reporter.run)
        first = "STATUS=running: 0 in flight, 0 queued"
        await anyio.to_thread.run_sync(lambda: notify.wait(lambda m: m == first))
        state["queued"] = 4
        reporter.poke()  # a change is sent at once, not at the next poll
        changed = "STATUS=running: 0 in flight, 4 queued"
        await anyio.to_thread.run_sync(lambda: notify.wait(lambda m: m == changed, timeout=5))
        tg.cancel_scope.cancel()
    assert [m for _, m in notify.messages].count(first) == 1

    # Polled often, an unchanged line is still only repeated every refresh_s.
    reporter = systemd.StatusReporter(read, poll_s=0.02, refresh_s=0.4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reporter.run)
        got = await anyio.to_thread.run_sync(
            lambda: notify.wait(lambda m: m == changed, count=3, timeout=10)
        )
        tg.cancel_scope.cancel()
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(got[1:])]
    assert gaps and min(gaps) >= 0.35, gaps


UNITS = Path(__file__).parent.parent / "systemd"


def _directives(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def _seconds(value: str) -> float:
    return float(value.removesuffix("s"))


@pytest.mark.parametrize("unit", ["readdod.service", "user/readdod.service"])
def test_the_service_units_carry_the_protocol_and_the_sandbox(unit: str) -> None:
    from readdod.settings.config import DaemonConfig

    d = _directives(UNITS / unit)
    for key, value in {
        "Type": "notify",
        "NotifyAccess": "main",
        "Restart": "on-failure",
        "NoNewPrivileges": "yes",
        "SystemCallFilter": "@system-service",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    }.items():
        assert value in d.get(key, []), f"{unit}: {key}={value}"
    for key in ("WatchdogSec", "StateDirectory", "RuntimeDirectory", "ConfigurationDirectory"):
        assert d.get(key), f"{unit}: {key}"
    assert _seconds(d["TimeoutStopSec"][0]) > DaemonConfig().shutdown_grace_s + 10


def test_the_system_unit_is_sandboxed_and_starts_without_a_key_file(tmp_path: Path) -> None:
    from readdod.engines.openai import read_api_key

    d = _directives(UNITS / "readdod.service")
    for key, value in {
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "DynamicUser": "yes",
    }.items():
        assert value in d.get(key, []), key
    # A missing LoadCredential= file fails the start unless SetCredential= gives a
    # fallback; the fallback must read as "no key", not as a key.
    loaded = {v.split(":", 1)[0] for v in d["LoadCredential"]}
    fallback = {k: v for k, _, v in (s.partition(":") for s in d.get("SetCredential", []))}
    assert loaded and loaded <= set(fallback)
    for name in loaded:
        (tmp_path / name).write_bytes(fallback[name].encode().decode("unicode_escape").encode())
        assert read_api_key(name, {"CREDENTIALS_DIRECTORY": str(tmp_path)}) is None
