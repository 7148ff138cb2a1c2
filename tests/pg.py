"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary directory, started
with ``pg_ctl`` on a random port, reachable only through a Unix socket in that directory.

PostgreSQL refuses to run as root, and CI runs the tests as root: then the
cluster runs as the ``postgres`` system user (Debian's package makes it)
through ``runuser``, which owns the directory. A missing PostgreSQL is an
error, never a skip: ``.ci/setup-postgresql`` installs it.

One cluster serves a whole test session (:func:`shared`); every test that
wants a database gets a new one (:meth:`Cluster.new_database`), so tests
never see each other's rows. ``python -m tests.pg`` starts one and prints
its DSN until interrupted, for benchmarks and a person's own tries.
"""

from __future__ import annotations

import itertools
import os
import pwd
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg

#: The system user a cluster runs as when the tests run as root.
SYSTEM_USER = "postgres"


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/*/bin`` with initdb and pg_ctl, else the one on PATH."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PostgresMissing(
        "PostgreSQL's server (initdb, pg_ctl) is not installed; the PostgreSQL tests need it."
        " Run .ci/setup-postgresql (apt-get install postgresql) and run the tests again"
    )


class Cluster:
    """One PostgreSQL server in a directory of its own; :meth:`stop` removes it all."""

    def __init__(self, *, durable: bool = False, settings: dict[str, str] | None = None) -> None:
        """``durable``: a commit waits for its WAL on disk (fsync, synchronous_commit and
        full_page_writes on), as a benchmark of durable work needs; tests run without.
        ``settings``: more server settings, given on the command line."""
        self.durable = durable
        self.settings = dict(settings or {})
        self.bin = bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="readdod-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root
        self.port = random.randint(20_000, 60_000)
        self._as: list[str] = []
        self.user = pwd.getpwuid(os.getuid()).pw_name
        if os.getuid() == 0:
            try:
                account = pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                raise PostgresMissing(
                    f"PostgreSQL will not run as root, and there is no {SYSTEM_USER!r} user to run"
                    " it as; run .ci/setup-postgresql (it installs Debian's postgresql)"
                ) from None
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as = ["runuser", "-u", SYSTEM_USER, "--"]
            self.user = SYSTEM_USER
        self._names = itertools.count(1)
        self._lock = threading.Lock()
        self.started = False

    def _run(self, *args: str) -> None:
        subprocess.run(
            [*self._as, *args], check=True, capture_output=True, cwd=self.root, timeout=120
        )

    def start(self) -> Cluster:
        """initdb, then pg_ctl start; waits until the server takes connections."""
        self._run(
            str(self.bin / "initdb"),
            "--pgdata",
            str(self.data),
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--username",
            self.user,
        )
        self.start_server()
        self.started = True
        return self

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.sockets} port={self.port} user={self.user} dbname={dbname}"

    def new_database(self) -> str:
        """A new, empty database; its DSN."""
        with self._lock:
            name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.dsn(name)

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run ``sql`` as the cluster's superuser (test setup: roles, grants)."""
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            conn.execute(sql.encode())

    def password_role(self, role: str, password: str, database: str) -> str:
        """A login role that must give ``password`` (SCRAM), owning ``database``; its DSN
        without the password. Its pg_hba.conf line goes first, so no trust rule lets it in."""
        self.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        self.execute(f'ALTER DATABASE "{database}" OWNER TO "{role}"')
        with self._lock:
            hba = self.data / "pg_hba.conf"
            rules = hba.read_text()
            hba.write_text(f"local all {role} scram-sha-256\n{rules}")
            self.execute("SELECT pg_reload_conf()")
        dsn = f"host={self.sockets} port={self.port} user={role} dbname={database}"
        # The server reloads its rules on a signal: wait (bounded) until it asks for the password.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                psycopg.connect(dsn, connect_timeout=5).close()
            except psycopg.OperationalError as exc:
                if "password" in str(exc):
                    return dsn
                raise
            threading.Event().wait(0.02)
        raise TimeoutError("the server did not load the password rule within 30 s")

    def restart(self) -> None:
        """Stop the server (fast: connections are cut) and start it again on the same port."""
        self.stop_server()
        self.start_server()

    def stop_server(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "stop", "--pgdata", str(self.data), "-m", "fast")

    def start_server(self) -> None:
        options = [
            f"-p {self.port}",
            f"-k {self.sockets}",
            "-c listen_addresses=''",
            "-c max_connections=300",
        ]
        if not self.durable:
            # A test cluster is thrown away: it need not survive a power cut.
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        self._run(
            str(self.bin / "pg_ctl"),
            "start",
            "--pgdata",
            str(self.data),
            "--log",
            str(self.root / "server.log"),
            "--options",
            " ".join(options),
            "--wait",
            "--timeout=60",
        )

    def stop(self) -> None:
        """Stop the server, if it runs, and remove the directory."""
        try:
            if self.started:
                self._run(
                    str(self.bin / "pg_ctl"), "stop", "--pgdata", str(self.data), "-m", "immediate"
                )
        except subprocess.CalledProcessError:
            pass  # already stopped (a test stopped it)
        finally:
            self.started = False
            shutil.rmtree(self.root, ignore_errors=True)


_shared: Cluster | None = None
_shared_lock = threading.Lock()


def shared() -> Cluster:
    """The session's cluster, started on first use; :func:`stop_shared` ends it."""
    global _shared
    with _shared_lock:
        if _shared is None:
            cluster = Cluster()
            try:
                cluster.start()
            except BaseException:
                cluster.stop()
                raise
            _shared = cluster
        return _shared


def stop_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


def main() -> None:
    """Start a cluster, print a database's DSN, stop it on SIGINT or SIGTERM."""
    cluster = Cluster().start()
    try:
        print(cluster.new_database(), flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        cluster.stop()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    main()
