"""Shared bits for the benchmarks: a daemon to measure, sample texts, machine info, reports.

``python -m bench._common`` prints the machine the figures come from.
"""

from __future__ import annotations

import json
import math
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from readdod.control.client import Client
from readdod.steps import NAMES, next_step
from tests.daemon_proc import write_config

RESULTS = Path(__file__).parent / "results"

WORDS = [
    "sqlite",
    "wal",
    "checkpoint",
    "durability",
    "fsync",
    "group",
    "commit",
    "latency",
    "throughput",
    "lease",
    "heartbeat",
    "orchestrator",
    "supervisor",
    "actor",
    "pipeline",
    "extraction",
    "summary",
    "score",
    "todos",
    "card",
    "intent",
    "reader",
    "article",
    "paragraph",
    "sentence",
    "budget",
    "model",
    "server",
    "retry",
    "backoff",
    "jitter",
    "socket",
    "protocol",
    "json",
]


def short_text(i: int) -> str:
    """A two-line text: items whose extraction costs next to nothing."""
    return f"Item {i}.\n\nA short body for item {i}."


def article(i: int, paragraphs: int = 6) -> str:
    """A deterministic, varied plain-text article of a few hundred words."""
    out = []
    for p in range(paragraphs):
        sentences = []
        for s in range(5):
            n = 8 + (i + p + s) % 9
            words = [WORDS[(i * 7 + p * 13 + s * 5 + k * 3) % len(WORDS)] for k in range(n)]
            sentences.append(" ".join(words).capitalize() + ".")
        out.append(" ".join(sentences))
    return f"Article number {i}\n\n" + "\n\n".join(out)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the figures depend on: CPU, cores, memory, Python, SQLite, the load at the start."""
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def not_finite(value: Any, path: str = "") -> list[str]:
    """The paths of every figure in ``value`` that is NaN or infinite (a division gone wrong)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [path or "figure"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in not_finite(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in not_finite(v, f"{path}[{i}]")]
    return []


def report(name: str, figures: dict[str, Any], *, sane: dict[str, bool] | None = None) -> None:
    """Print ``figures`` and write them, with the machine, to bench/results/NAME.json.

    Then exit 1 if a figure is NaN or infinite or one of ``sane`` (label → holds) does
    not hold: what a bench's ``--small`` run checks is that its figures make sense
    (counts above zero, ratios finite), never how fast the machine is.
    """
    figures = {
        "bench": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        **figures,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {json.dumps(value) if isinstance(value, dict | list) else value}")
    problems = [f"{path} is not finite" for path in not_finite(figures)]
    problems += [f"not sane: {label}" for label, holds in (sane or {}).items() if not holds]
    if problems:
        print(f"{name}: " + "; ".join(problems), file=sys.stderr)
        raise SystemExit(1)


def percentiles(values: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """Nearest-rank percentiles, rounded to 0.01."""
    ordered = sorted(values)
    if not ordered:
        return {}
    out = {}
    for q in qs:
        rank = max(1, -(-len(ordered) * q // 100))
        out[f"p{q}"] = round(ordered[int(rank) - 1], 2)
    return out


class Daemon:
    """The real daemon as a subprocess, its log lines going to a file (no reader in the way).

    A bench must not slow the daemon down by parsing its output as it comes,
    so the lines are written to ``log_path`` and read when needed.
    """

    def __init__(self, root: Path, **sections: dict[str, Any]) -> None:
        self.root = root
        self.data = root / "data"
        self.sock = root / "readdod.sock"
        control = {"max_connections": 1024, **sections.pop("control", {})}
        self.config = write_config(root, {"control": control, **sections})
        self.log_path = root / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self._offset = 0

    @property
    def db_path(self) -> Path:
        return self.data / "readdod.db"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, *, timeout: float = 600) -> float:
        """Start, wait for ``daemon.ready``; returns the wall seconds from spawn to it."""
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
        with self.log_path.open("ab") as out, (self.root / "daemon.err").open("ab") as err:
            self.started_at = time.time()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "readdod", "serve", "--config", str(self.config)],
                stdout=out,
                stderr=err,
                env=env,
            )
        ready = self.wait_log("daemon.ready", timeout=timeout)
        return parse_ts(ready["ts"]) - self.started_at

    def lines(self) -> Iterator[dict[str, Any]]:
        """The log lines of the current process so far."""
        with self.log_path.open("rb") as f:
            f.seek(self._offset)
            for raw in f:
                if raw.endswith(b"\n"):
                    yield json.loads(raw)

    def wait_log(self, event: str, *, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        pos = self._offset
        while True:
            with self.log_path.open("rb") as f:
                f.seek(pos)
                for raw in f:
                    if not raw.endswith(b"\n"):
                        break
                    pos += len(raw)
                    if f'"event":"{event}"'.encode() in raw:
                        line: dict[str, Any] = json.loads(raw)
                        return line
            if self.proc is not None and self.proc.poll() is not None:
                err = (self.root / "daemon.err").read_text()[-2000:]
                raise RuntimeError(f"the daemon exited before {event}: {err}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            time.sleep(0.005)

    def tail(self) -> LogTail:
        """Read the log from now on, as it grows."""
        return LogTail(self.log_path, self.log_path.stat().st_size)

    def client(self, timeout_s: float | None = 600) -> Client:
        return Client(self.sock, timeout_s=timeout_s)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params)

    def db(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)

    def count(self, status: str) -> int:
        with self.db() as db:
            return int(
                db.execute("SELECT count(*) FROM items WHERE status = ?", (status,)).fetchone()[0]
            )

    def wait_count(
        self, status: str, n: int, *, timeout: float = 3600, poll_s: float = 0.01
    ) -> float:
        """Poll the database until ``n`` items are in ``status``; returns time.perf_counter()."""
        deadline = time.monotonic() + timeout
        db = self.db()
        try:
            while True:
                got = db.execute(
                    "SELECT count(*) FROM items WHERE status = ?", (status,)
                ).fetchone()[0]
                if got >= n:
                    return time.perf_counter()
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"the daemon exited with {got}/{n} items {status}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{got}/{n} items {status} after {timeout} s")
                time.sleep(poll_s)
        finally:
            db.close()

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self, timeout: float = 120) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=60)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)


class LogTail:
    """New lines of a log file, as they are written."""

    def __init__(self, path: Path, pos: int) -> None:
        self._f = path.open("rb")
        self._f.seek(pos)
        self._partial = b""
        self._lines: deque[bytes] = deque()

    def close(self) -> None:
        self._f.close()

    def wait(self, *needles: str, timeout: float = 60) -> dict[str, Any]:
        """The next line containing every one of ``needles`` (raw substrings), parsed."""
        keys = [n.encode() for n in needles]
        deadline = time.monotonic() + timeout
        while True:
            while self._lines:
                raw = self._lines.popleft()
                if all(k in raw for k in keys):
                    line: dict[str, Any] = json.loads(raw)
                    return line
            chunk = self._f.read()
            if chunk:
                *complete, self._partial = (self._partial + chunk).split(b"\n")
                self._lines.extend(complete)
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(f"no line with {needles} within {timeout} s")
            time.sleep(0.0005)


def parse_ts(ts: str) -> float:
    """A log line's ``ts`` (RFC 3339 UTC, microseconds) as epoch seconds."""
    from datetime import datetime

    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def capture_all(
    d: Daemon,
    texts: Sequence[str],
    *,
    connections: int = 4,
    batch: int = 50,
    intent: Callable[[int], str] = lambda i: f"learn about item {i % 7}",
) -> list[str]:
    """Capture every text over ``connections`` sockets, ``batch`` requests per JSON-RPC line.

    Each answer arrives once its capture is durable. Returns the item ids in order.
    """
    ids: list[str] = [""] * len(texts)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            with d.client() as c:
                for first in range(k * batch, len(texts), connections * batch):
                    reqs = [
                        {"jsonrpc": "2.0", "id": i, "method": "capture",
                         "params": {"text": texts[i], "intent": intent(i)}}
                        for i in range(first, min(len(texts), first + batch))
                    ]  # fmt: skip
                    c.send_raw(json.dumps(reqs).encode() + b"\n")
                    for answer in json.loads(c.read_raw()):
                        if "result" not in answer:
                            raise RuntimeError(f"capture refused: {answer}")
                        ids[answer["id"]] = answer["result"]["item"]["id"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return ids


def store_counters(d: Daemon) -> dict[str, int] | None:
    """The daemon's cumulative store counters (``stats``), when it reports them."""
    store = d.call("stats").get("store")
    return dict(store) if isinstance(store, dict) else None


def capture_paused(d: Daemon, texts: Sequence[str], **kwargs: Any) -> float:
    """Pause the daemon, capture ``texts`` (see :func:`capture_all`); the seconds it took."""
    d.call("pause")
    start = time.perf_counter()
    capture_all(d, texts, **kwargs)
    return time.perf_counter() - start


STEPS = NAMES


def item_writes(rp: Any, it: dict[str, Any]) -> list[list[tuple[str, tuple[Any, ...]]]]:
    """The statements that process one item, grouped by step (claim, 5 steps, READY).

    ``rp`` holds what the daemon wrote, read back (``runs``, ``artifacts`` and
    ``events`` by item id): the floors of bench.throughput (SQLite) and
    bench.fleet (PostgreSQL) replay it.
    """
    iid, run = it["id"], rp.runs[it["id"]]
    rid, now = run["run_id"], it["updated_at"]
    events = {(e["kind"], e["to_status"], e["detail"]): e for e in rp.events[iid]}
    ev = "INSERT INTO events (at, item_id, run_id, kind, from_status, to_status, trigger, detail)"
    ev += " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    claim_ev = next(e for e in events.values() if e["to_status"] == "PROCESSING")
    groups = [
        [
            (
                "UPDATE items SET status = 'PROCESSING', lease_owner = ?, lease_expires_at = ?,"
                " updated_at = ? WHERE id = ? AND status = 'QUEUED'",
                (run["worker_id"], now + 30_000, now, iid),
            ),
            (
                "UPDATE runs SET status = 'running', attempts = 1, worker_id = ?, started_at = ?"
                " WHERE run_id = ?",
                (run["worker_id"], now, rid),
            ),
            (
                ev,
                (now, iid, rid, "transition", "QUEUED", "PROCESSING", "system", claim_ev["detail"]),
            ),
        ]
    ]
    step_events = [e for e in rp.events[iid] if e["kind"] == "step"]
    for i, step in enumerate(STEPS):
        art = rp.artifacts[iid][step]
        fields: dict[str, Any] = {"orphan_count": 0, "updated_at": now}
        if step == "extraction":
            fields["title"] = it["title"]
        if step == "score":
            fields["priority"] = it["priority"]
            fields["match_score"] = it["match_score"]
        sets = ", ".join(f"{k} = ?" for k in fields)
        nxt = next_step(step)
        groups.append(
            [
                # The daemon's order: the item (a title, a score) first, then the
                # artifact, whose trigger indexes the title with the extracted text.
                (
                    f"UPDATE items SET {sets} WHERE id = ? AND status = 'PROCESSING'"
                    " AND lease_owner = ? AND current_run_id = ?",
                    (*fields.values(), iid, run["worker_id"], rid),
                ),
                (
                    "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,"
                    " payload, meta, created_at) VALUES (?, ?, 1, 'system', ?, ?, ?, ?)",
                    (iid, step, rid, art["payload"], art["meta"], now),
                ),
                ("UPDATE runs SET current_step = ? WHERE run_id = ?", (nxt, rid)),
                (ev, (now, iid, rid, "step", None, None, "system", step_events[i]["detail"])),
            ]
        )
    groups.append(
        [
            (
                "UPDATE runs SET status = 'succeeded', finished_at = ?, current_step = NULL"
                " WHERE run_id = ?",
                (now, rid),
            ),
            (
                "UPDATE items SET status = 'READY', updated_at = ?, lease_owner = NULL,"
                " lease_expires_at = NULL, orphan_count = 0, auto_retries = 0"
                " WHERE id = ? AND status = 'PROCESSING'",
                (now, iid),
            ),
            (ev, (now, iid, rid, "transition", "PROCESSING", "READY", "system", "{}")),
        ]
    )
    return groups


if __name__ == "__main__":
    print(json.dumps(machine(), indent=2))
