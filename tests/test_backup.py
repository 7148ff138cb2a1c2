"""`readdod backup` against the running daemon while it keeps writing."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from readdod.control.client import RpcError
from readdod.store.sqlite.backup import backup_database
from tests.daemon_proc import DaemonProc

BODY = "A paragraph about write-ahead logging and checkpoints. " * 40


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    d.start()
    yield d
    d.close()


def _check(path: Path) -> tuple[int, set[str]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        ids = {r[0] for r in db.execute("SELECT id FROM items")}
        # Every item in the copy has the capture's event: no half-written transaction.
        captured = {
            r[0] for r in db.execute("SELECT DISTINCT item_id FROM events WHERE kind = 'capture'")
        }
        journal = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "delete", "a backup is a single self-contained file"
    return len(ids), ids - captured


def test_backup_while_items_are_written(daemon: DaemonProc, tmp_path: Path) -> None:
    acknowledged: list[str] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with daemon.client() as c:
                i = 0
                while not stop.is_set() and i < 2000:
                    item = c.call("capture", {"text": f"Article {i}.\n\n{BODY}", "intent": "x"})
                    acknowledged.append(item["item"]["id"])
                    i += 1
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    try:
        daemon.wait_log(lambda e: e["event"] == "item.captured", count=50)
        results = []
        for n in range(3):
            before = len(acknowledged)
            res = daemon.call("backup", {"path": str(tmp_path / f"copy{n}.db")})
            after = len(acknowledged)
            results.append((res, before, after))
    finally:
        stop.set()
        t.join(timeout=60)
    assert not errors, errors
    for res, before, after in results:
        path = Path(res["path"])
        assert res["bytes"] == path.stat().st_size > 0 and res["pages"] > 0
        count, without_capture_event = _check(path)
        # The copy is one snapshot taken during the call: everything acknowledged
        # before the call is in it, nothing from after the call.
        assert before <= count <= after + 1, (before, count, after)
        assert without_capture_event == set()
    # Writes went on during the backups.
    assert results[-1][2] > results[0][1]
    assert not list(tmp_path.glob(".*.partial"))
    daemon.wait_log(lambda e: e["event"] == "backup.done", count=3)


def test_backup_through_the_cli_into_a_directory(daemon: DaemonProc, tmp_path: Path) -> None:
    daemon.call("capture", {"text": f"One.\n\n{BODY}", "intent": "x"})
    out_dir = tmp_path / "backups"
    out_dir.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "backup", str(out_dir), "--socket", str(daemon.sock)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    made = list(out_dir.glob("readdod-*.db"))
    assert len(made) == 1 and str(made[0]) in out.stdout
    assert _check(made[0])[0] == 1


@pytest.mark.parametrize("where", ["relative.db", "/nonexistent-dir/x.db", "/nonexistent-dir/"])
def test_bad_backup_paths_are_refused(daemon: DaemonProc, where: str) -> None:
    with pytest.raises(RpcError) as exc:
        daemon.call("backup", {"path": where})
    assert exc.value.error_code == "VALIDATION_ERROR"
    assert where in exc.value.message


def test_backup_of_a_file_written_by_another_connection(tmp_path: Path) -> None:
    """The copy keeps one snapshot even when a writer commits between its steps."""
    src = tmp_path / "src.db"
    with sqlite3.connect(src) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x INTEGER, pad TEXT)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(i, "p" * 500) for i in range(4000)])
    stop = threading.Event()
    writing = threading.Event()
    commits = 0

    def write() -> None:
        nonlocal commits
        with sqlite3.connect(src) as writer:
            while not stop.is_set():
                writer.execute("INSERT INTO t VALUES (-1, 'late')")
                writer.commit()
                commits += 1
                writing.set()

    t = threading.Thread(target=write)
    t.start()
    assert writing.wait(timeout=30)
    try:
        res = backup_database(src, tmp_path / "copy.db", pages_per_step=8)
    finally:
        stop.set()
        t.join()
    with sqlite3.connect(res.path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM t WHERE x >= 0").fetchone()[0] == 4000
    assert res.pages > 100
    assert commits > 0


def test_the_live_database_is_never_a_target_and_the_copy_is_private(
    daemon: DaemonProc, tmp_path: Path
) -> None:
    db = daemon.db_path
    inode = db.stat().st_ino
    for victim in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + ".lock")):
        with pytest.raises(RpcError) as exc:
            daemon.call("backup", {"path": str(victim)})
        assert exc.value.error_code == "VALIDATION_ERROR" and "live database" in exc.value.message
    assert db.stat().st_ino == inode
    item = daemon.call("capture", {"text": BODY, "intent": "still writing"})["item"]["id"]
    assert daemon.call("get", {"id": item})["item"]["id"] == item

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RpcError) as exc:
        daemon.call("backup", {"path": str(fifo)})
    assert "not a regular file" in exc.value.message and stat.S_ISFIFO(fifo.stat().st_mode)

    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    with pytest.raises(RpcError) as exc:
        daemon.call("backup", {"path": str(notes)})
    assert "not an SQLite database" in exc.value.message
    assert notes.read_text() == "not a database\n"

    # The daemon runs with the test's umask (usually 022): the copy is 0600 regardless.
    res = daemon.call("backup", {"path": str(tmp_path / "private.db")})
    assert stat.S_IMODE(Path(res["path"]).stat().st_mode) == 0o600
    # An earlier backup may be refreshed in place.
    again = daemon.call("backup", {"path": res["path"]})
    assert _check(Path(again["path"]))[0] == 1
