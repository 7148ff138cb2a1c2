"""The real daemon as a subprocess, with its JSON log lines read as they come.

Tests synchronise on log events (``daemon.ready``, ``item.transition``), never
on sleeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from readdod.control.client import Client

LogLine = dict[str, Any]

#: Config sections with no automatic retry across runs: each item's first run is its
#: last, so its end state is final (a rate limit's Retry-After would queue it again at once).
NO_AUTO_RETRY: dict[str, dict[str, Any]] = {
    f"retry.{kind}": {"attempts": 0}
    for kind in ("network", "timeout", "rate_limit", "provider", "schema", "worker_lost")
}


def _limit_files(n: int | None, max_file_size: int | None = None) -> None:
    import resource

    if n is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    if max_file_size is not None:
        # The soft limit only, as `ulimit -S -f`: a test may lift it on the live daemon.
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_size, resource.RLIM_INFINITY))


def toml(sections: dict[str, dict[str, Any]]) -> str:
    out = []
    for name, values in sections.items():
        out.append(f"[{name}]")
        for key, value in values.items():
            out.append(f"{key} = {json.dumps(value)}")
    return "\n".join(out) + "\n"


def write_config(root: Path, sections: dict[str, dict[str, Any]]) -> Path:
    """``root/config.toml``: data, socket and exports under ``root``, then ``sections``."""
    cfg: dict[str, dict[str, Any]] = {
        "daemon": {"data_dir": str(root / "data")},
        "control": {"socket": str(root / "readdod.sock")},
        "export": {"dir": str(root / "exports")},
    }
    for name, values in sections.items():
        cfg.setdefault(name, {}).update(values)
    path = root / "config.toml"
    path.write_text(toml(cfg))
    return path


class DaemonProc:
    def __init__(self, root: Path, **sections: dict[str, Any]) -> None:
        self.root = root
        self.data = root / "data"
        self.sock = root / "readdod.sock"
        self.config = write_config(root, sections)
        #: The PostgreSQL database the daemon's store is on, if ``[store]`` names one.
        self.dsn: str | None = sections.get("store", {}).get("dsn")
        self.proc: subprocess.Popen[bytes] | None = None
        self.logs: list[LogLine] = []
        self.stderr = b""
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []

    @property
    def db_path(self) -> Path:
        return self.data / "readdod.db"

    def start(
        self,
        *,
        wait: bool = True,
        env: dict[str, str] | None = None,
        max_open_files: int | None = None,
        max_file_size: int | None = None,
    ) -> DaemonProc:
        self.logs = []
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "readdod", "serve", "--config", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            preexec_fn=(
                (lambda: _limit_files(max_open_files, max_file_size))
                if max_open_files or max_file_size
                else None
            ),
        )
        out = threading.Thread(target=self._read_stdout, args=(self.proc,), daemon=True)
        err = threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True)
        out.start()
        err.start()
        self._threads = [out, err]
        if wait:
            self.wait_log(lambda e: e["event"] == "daemon.ready", timeout=60)
        return self

    def _read_stdout(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with proc.stdout:
            for raw in proc.stdout:
                try:
                    entry = json.loads(raw)
                except ValueError:
                    entry = {"event": "<unparsed>", "raw": raw.decode(errors="replace")}
                with self._cond:
                    self.logs.append(entry)
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        with proc.stderr:
            self.stderr = proc.stderr.read()

    def wait_log(
        self, match: Callable[[LogLine], bool], *, count: int = 1, timeout: float = 60
    ) -> list[LogLine]:
        """Block until ``count`` log lines match (or the daemon exits, or time runs out)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [e for e in self.logs if match(e)]
                if len(found) >= count:
                    return found
                exited = self.proc is not None and self.proc.poll() is not None
                left = deadline - time.monotonic()
                if left <= 0 or (exited and not self._threads[0].is_alive()):
                    raise AssertionError(
                        f"waited for {count} matching log lines, saw {len(found)};"
                        f" exited={exited}; stderr={self.stderr[-2000:]!r};"
                        f" last logs={self.logs[-5:]}"
                    )
                self._cond.wait(min(left, 0.5))

    def wait_status(self, status: str, count: int, *, timeout: float = 120) -> None:
        self.wait_log(
            lambda e: e["event"] == "item.transition" and e.get("to") == status,
            count=count,
            timeout=timeout,
        )

    def client(self) -> Client:
        return Client(self.sock)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=10)
        return code

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)
        for t in self._threads:
            t.join(timeout=10)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for t in self._threads:
            t.join(timeout=10)

    def db(self) -> sqlite3.Connection:
        """A read-only look at the daemon's database."""
        return sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (``?`` marks its parameters) from the daemon's store, on
        whichever backend it is: a test's look at the database that works on both."""
        if self.dsn is None:
            with contextlib.closing(self.db()) as conn:
                return [tuple(r) for r in conn.execute(sql, params).fetchall()]
        import psycopg

        with psycopg.connect(self.dsn) as pg:
            return [tuple(r) for r in pg.execute(sql.replace("?", "%s"), params).fetchall()]


def run_cli(
    d: DaemonProc,
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``readdod ARGS`` as a person would, against ``d``'s socket."""
    return subprocess.run(
        [sys.executable, "-m", "readdod", *args, "--socket", str(d.sock)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
