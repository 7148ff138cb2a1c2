"""Faults from outside, against the real daemon: a database locked by another
process, an export folder that cannot be written, a file size limit that stops
the export, then SQLite itself, then the log file.

Every scenario ends the same way: the fault is lifted, the daemon finishes its
work, stops cleanly, and :func:`tests.invariants.check` finds nothing wrong
with what it left (no acknowledged capture lost, no stray lease, whole
artifact sets, exports on disk matching the ``exports`` table).
"""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import RpcError
from tests.daemon_proc import DaemonProc
from tests.invariants import check

TEXT = (
    "Write-ahead logging keeps readers and writers out of each other's way.\n\n"
    "A checkpoint copies pages from the log back into the database file, and group"
    " commit batches many small transactions into one fsync."
)


def _capture(d: DaemonProc, cid: str) -> dict[str, Any]:
    params = {"text": f"{TEXT}\n\nNote {cid}.", "intent": f"learn about {cid}", "capture_id": cid}
    got: dict[str, Any] = d.call("capture", params)
    return got


def _stop_and_check(
    d: DaemonProc, acknowledged: list[str], export_dir: Path | None = None
) -> list[str]:
    assert d.stop() == 0, d.stderr[-2000:]
    return check(d.db_path, acknowledged=acknowledged, export_dir=export_dir)


def _statuses(d: DaemonProc) -> dict[str, tuple[str, str | None]]:
    with d.db() as db:
        rows = db.execute(
            "SELECT id, status, json_extract(failure, '$.error_code') FROM items"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


# --- another process holds the write lock ---------------------------------------------


class _Capturer(threading.Thread):
    """Captures one item after another until told to stop; sorts the answers."""

    def __init__(self, d: DaemonProc, name: str, saw_busy: threading.Event) -> None:
        super().__init__(daemon=True)
        self.d, self.name_ = d, name
        self.acked: dict[str, str] = {}
        #: Captures answered STORE_BUSY, with how long each waited for that answer.
        self.busy: dict[str, float] = {}
        self.other: list[str] = []
        self.stop = threading.Event()
        self.saw_busy = saw_busy

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            cid = f"{self.name_}-{n}"
            n += 1
            sent = time.monotonic()
            try:
                self.acked[cid] = _capture(self.d, cid)["item"]["id"]
            except RpcError as exc:
                if exc.error_code == "STORE_BUSY" and exc.rpc_code == 503:
                    self.busy[cid] = time.monotonic() - sent
                    self.saw_busy.set()
                else:
                    self.other.append(f"{cid}: {exc.rpc_code} {exc.error_code} {exc.message}")
            except Exception as exc:
                self.other.append(f"{cid}: {exc!r}")
                return


def test_a_write_lock_held_by_another_process(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    """A lock shorter than busy_timeout (5 s) is waited for. Past it, writes answer
    STORE_BUSY and store nothing; items in flight wait QUEUED, none fails for it."""
    d = DaemonProc(
        tmp_path,
        ai={"engine": "fixed", "fixed_delay_ms": 150},
        daemon={"skip_below": 0, "lease_ttl_s": 2.0, "claim_interval_s": 0.5},
    )
    daemons.append(d)
    d.start()
    assert d.proc is not None
    acked = {"before": _capture(d, "before")["item"]["id"]}

    # A lock shorter than busy_timeout: a write waits for it, then succeeds.
    answers: list[tuple[dict[str, Any], float]] = []
    sent = threading.Event()

    def capture_raw() -> None:
        params = {"text": TEXT, "intent": "wait for the lock", "capture_id": "short"}
        line = {"jsonrpc": "2.0", "id": 1, "method": "capture", "params": params}
        with d.client() as c:
            c.send_raw(json.dumps(line).encode() + b"\n")
            sent.set()
            answers.append((json.loads(c.read_raw()), time.monotonic()))

    locker = sqlite3.connect(d.db_path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    waiter = threading.Thread(target=capture_raw, daemon=True)
    waiter.start()
    try:
        assert sent.wait(10)
        time.sleep(0.5)  # the fault itself: the lock stays held half a second more
    finally:
        released = time.monotonic()
        locker.execute("COMMIT")
    waiter.join(10)
    [(answer, answered)] = answers
    assert answer["result"]["created"] is True and answered > released, answer
    acked["short"] = answer["result"]["item"]["id"]
    ready = acked["before"]
    d.wait_log(lambda e: e.get("item_id") == ready and e.get("to") == "READY")

    # Items in the middle of their runs when the long lock comes: each step takes 150 ms.
    flying = {f"flying-{i}": _capture(d, f"flying-{i}")["item"]["id"] for i in range(8)}
    acked.update(flying)
    d.wait_log(
        lambda e: (
            e["event"] == "step.finished"
            and e.get("step") == "summary"
            and e.get("item_id") in flying.values()
        ),
        count=2,
    )
    exported: list[Any] = []

    def export() -> None:
        try:
            exported.append(d.call("export", {"id": ready}))
        except RpcError as exc:
            exported.append(exc)

    locker.execute("BEGIN EXCLUSIVE")  # in WAL mode, as IMMEDIATE: readers still read
    held_at = time.monotonic()
    # Clients keep capturing while the lock is held; an export is on its way too.
    saw_busy = threading.Event()
    clients = [_Capturer(d, f"client{k}", saw_busy) for k in range(4)]
    for c in clients:
        c.start()
    exporter = threading.Thread(target=export, daemon=True)
    exporter.start()
    try:
        # Reads and pings do not need the write lock: they answer at once.
        started = time.monotonic()
        assert d.call("ping")["pid"] == d.proc.pid
        assert d.call("get", {"id": ready})["item"]["status"] == "READY"
        assert time.monotonic() - started < 4.0  # waiting for the lock takes busy_timeout, 5 s
        # Hold the lock until a client was told the database is busy and an actor
        # met the busy database in a step (that item must wait, not fail).
        assert saw_busy.wait(20)
        d.wait_log(
            lambda e: e["event"] == "step.waiting" and e.get("error_code") == "STORE_BUSY",
            timeout=20,
        )
    finally:
        locker.execute("COMMIT")
        locker.close()
        held_s = time.monotonic() - held_at
        for c in clients:
            c.stop.set()
        for c in clients:
            c.join(30)
        exporter.join(30)
    for c in clients:
        assert not c.is_alive()
        assert c.other == [], c.other
        acked.update(c.acked)
    busy = {cid: waited for c in clients for cid, waited in c.busy.items()}
    # Each busy answer came only after the daemon's busy_timeout (5 s) ran out.
    assert busy and held_s >= 5.0 and min(busy.values()) > 4.0, busy
    waited = [e for e in d.logs if e["event"] == "step.waiting"]
    print(f"\nlock held {held_s:.1f} s: {len(busy)} captures and {len(waited)} steps met it")

    # A busy answer stored nothing: the same capture_id now makes the item.
    for cid in busy:
        again = _capture(d, cid)
        assert again["created"] is True, cid
        acked[cid] = again["item"]["id"]
    d.wait_status("READY", count=len(acked), timeout=60)
    statuses = _statuses(d)
    assert set(statuses) == set(acked.values())
    assert {s for i, (s, _) in statuses.items() if i != ready} == {"READY"}, statuses

    # The export wrote its file but, if its commit met the lock, recorded nothing:
    # exporting again adopts that file instead of writing a second one.
    [first] = exported
    if isinstance(first, RpcError):
        assert (first.rpc_code, first.error_code) == (503, "STORE_BUSY"), first.message
        again = d.call("export", {"id": ready})
    else:
        again = first
    assert again["item"]["status"] == "SHIPPED"
    exports = tmp_path / "exports"
    assert [p.name for p in exports.iterdir()] == [Path(again["files"][0]).name]
    assert _stop_and_check(d, list(acked.values()), exports) == []


# --- export folder unwritable, file size limit ------------------------------------------


def _sig_ignored(pid: int, signum: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    raise AssertionError("no SigIgn line")


def _set_fsize(pid: int, limit: int) -> None:
    """The soft limit only (lifting it again needs no privilege)."""
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def _error(d: DaemonProc, method: str, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as exc:
        d.call(method, params)
    return exc.value


def test_unwritable_export_folder_and_file_size_limit(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    notes = tmp_path / "notes"
    notes.write_text("a file where the export folder's parent should be\n")
    exports = notes / "cards"
    d = DaemonProc(
        tmp_path,
        ai={"engine": "fixed", "fixed_delay_ms": 150},
        daemon={"skip_below": 0, "lease_ttl_s": 1.5, "claim_interval_s": 0.5},
        export={"dir": str(exports)},
    )
    daemons.append(d)
    d.start()
    small = _capture(d, "small")["item"]["id"]
    big = _capture(d, "big")["item"]["id"]
    acked = [small, big]
    d.wait_status("READY", count=2)

    # The folder cannot be made: its parent is a file (tests run as root, whom modes do not stop).
    err = _error(d, "export", {"id": small})
    assert (err.rpc_code, err.error_code) == (500, "EXPORT_WRITE_FAILED")
    assert f"{notes} is a file, not a folder" in err.message
    assert err.data["item_status"] == "FAILED_EXPORT"
    failure = d.call("get", {"id": small})["item"]["failure"]
    assert failure["error_code"] == "EXPORT_WRITE_FAILED" and failure["failed_step"] == "export"

    # A card whose JSON export is bigger than the limit the daemon will run under.
    card = d.call("artifact", {"id": big, "type": "card"})["artifact"]["payload"]
    card["source"]["site_name"] = "S" * 700_000
    d.call("edit", {"id": big, "type": "card", "payload": card})
    assert d.stop() == 0

    notes.unlink()  # fix the folder
    limit = 400_000  # bigger than SQLite's log grows to in this test, smaller than the card
    d.start(max_file_size=limit)
    assert d.proc is not None
    pid = d.proc.pid
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG instead of killing us.
    assert _sig_ignored(pid, signal.SIGXFSZ)

    shipped = d.call("export", {"id": small})
    assert shipped["item"]["status"] == "SHIPPED"
    err = _error(d, "export", {"id": big, "format": "json"})
    assert (err.rpc_code, err.error_code) == (500, "EXPORT_WRITE_FAILED")
    assert "file size limit" in err.message and "ulimit -f" in err.message
    assert err.data["item_status"] == "FAILED_EXPORT"
    assert d.proc.poll() is None
    assert sorted(p.name for p in exports.iterdir()) == [Path(shipped["files"][0]).name]

    _set_fsize(pid, resource.RLIM_INFINITY)  # the limit is lifted: export again
    done = d.call("export", {"id": big, "format": "json"})
    assert done["item"]["status"] == "SHIPPED"
    assert Path(done["files"][0]).stat().st_size > limit

    # Now SQLite's own files hit the limit, with items in flight.
    flying = [_capture(d, f"fly-{i}")["item"]["id"] for i in range(4)]
    acked += flying
    d.wait_log(lambda e: e["event"] == "step.started" and e.get("step") == "summary", count=2)
    _set_fsize(pid, 4096)
    refused = []
    for i in range(3):
        err = _error(d, "capture", {"text": TEXT, "intent": "later", "capture_id": f"full-{i}"})
        assert (err.rpc_code, err.error_code) == (503, "STORE_WRITE_FAILED"), err.message
        assert "ulimit -f" in err.message
        refused.append(f"full-{i}")
    assert d.call("ping")["pid"] == pid
    assert d.call("get", {"id": big})["item"]["status"] == "SHIPPED"
    # An actor meets it in a step: its item waits for the store instead of failing.
    d.wait_log(
        lambda e: e["event"] == "step.waiting" and e.get("error_code") == "STORE_WRITE_FAILED",
        timeout=20,
    )
    _set_fsize(pid, resource.RLIM_INFINITY)

    for cid in refused:
        again = d.call("capture", {"text": TEXT, "intent": "later", "capture_id": cid})
        assert again["created"] is True
        acked.append(again["item"]["id"])
    d.wait_status("READY", count=len(flying) + len(refused), timeout=60)  # since the restart
    statuses = _statuses(d)
    assert {statuses[i][0] for i in flying} == {"READY"}, statuses
    assert d.proc.poll() is None
    met = [e["event"] for e in d.logs if e.get("error_code") == "STORE_WRITE_FAILED"]
    print(
        f"\nfile size limit: 2 failed exports, 3 refused captures, {len(met)} store failures logged"
    )
    assert _stop_and_check(d, acked, exports) == []


# --- a log file that cannot grow ----------------------------------------------------------


def _file_events(path: Path) -> list[str]:
    events = []
    for raw in path.read_bytes().splitlines():
        try:
            events.append(json.loads(raw)["event"])
        except (ValueError, KeyError, TypeError):
            continue  # the filler, or a line cut by the limit
    return events


def _until(cond: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll ``cond`` (the log goes to a file here, so there are no log lines to wait on)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.02)


def test_a_log_file_that_cannot_grow_costs_log_lines_not_the_daemon(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    log_file = tmp_path / "logs" / "readdod.log"
    log_file.parent.mkdir()
    log_file.write_bytes(b"#" * (4 << 20) + b"\n")  # bigger than the database gets here
    d = DaemonProc(
        tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 0}, log={"file": str(log_file)}
    )
    daemons.append(d)
    d.start(wait=False)
    _until(lambda: "daemon.ready" in _file_events(log_file), "the daemon is ready")
    assert d.proc is not None
    _set_fsize(d.proc.pid, log_file.stat().st_size)

    ids = [_capture(d, f"quiet-{i}")["item"]["id"] for i in range(3)]

    def all_ready() -> bool:
        return all(d.call("get", {"id": i})["item"]["status"] == "READY" for i in ids)

    _until(all_ready, "every item is READY")
    assert d.proc.poll() is None and d.call("ping")["pid"] == d.proc.pid
    assert "item.captured" not in _file_events(log_file)

    _set_fsize(d.proc.pid, resource.RLIM_INFINITY)
    ids.append(_capture(d, "heard")["item"]["id"])
    _until(lambda: "item.captured" in _file_events(log_file), "the log is written again")
    assert d.stop() == 0
    assert b"log lines are being lost" in d.stderr and b"File too large" in d.stderr
    assert check(d.db_path, acknowledged=ids) == []
