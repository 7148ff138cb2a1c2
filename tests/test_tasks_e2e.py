"""`todos export` against the real daemon, each format read back by what reads it:
iCalendar by the icalendar library, Taskwarrior by a real `task import` into a
temporary TASKDATA (twice, then after a tick: no duplicate, the status moves),
todo.txt line by line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import icalendar
import pytest

from readdod.tasks.document import todo_uid
from tests.daemon_proc import DaemonProc, run_cli
from tests.test_todos_e2e import TEXT, start, tick

PAGE = (
    "<html><head><title>Checkpoints in WAL mode</title></head><body><article>"
    + "<p>A checkpoint moves pages from the write-ahead log back into the database file,"
    " and readers keep reading while it runs.</p>" * 12 + "</article></body></html>"
)
URL = "https://example.org/wal/checkpoints?x=1"


@pytest.fixture
def cards(tmp_path: Path, daemons: list[DaemonProc]) -> Iterator[tuple[DaemonProc, list[str]]]:
    """A daemon with two READY cards (one from a page with a URL, tagged), and a
    captured item with no card yet."""
    d = start(daemons, tmp_path / "d")
    first = d.call(
        "capture",
        {"url": URL, "html": PAGE, "intent": "tune checkpoints", "tags": ["db", "wal tuning"]},
    )["item"]["id"]
    second = d.call("capture", {"text": TEXT, "intent": "decide on WAL"})["item"]["id"]
    d.wait_status("READY", 2)
    d.call("pause")
    d.call("capture", {"text": TEXT, "intent": "not processed while paused"})
    yield d, [first, second]
    d.stop()


def export(d: DaemonProc, fmt: str, out: Path, *extra: str) -> str:
    res = run_cli(d, "todos", "export", "--format", fmt, "--out", str(out), *extra)
    assert res.returncode == 0, res.stderr
    return out.read_text()


def all_todos(d: DaemonProc, ids: list[str]) -> list[dict[str, Any]]:
    return [t | {"item_id": i} for i in ids for t in d.call("get", {"id": i})["todos"]]


def test_ics_parses_back_with_stable_uids_and_the_ticks(
    cards: tuple[DaemonProc, list[str]], tmp_path: Path
) -> None:
    d, ids = cards
    tick(d, ids[0], 1)
    todos = all_todos(d, ids)
    cal = icalendar.Calendar.from_ical(export(d, "ics", tmp_path / "a.ics"))
    found = cal.walk("VTODO")
    assert cal["PRODID"] and str(cal["VERSION"]) == "2.0"
    assert len(found) == len(todos)
    by_uid = {str(v["UID"]): v for v in found}
    assert set(by_uid) == {todo_uid(t["item_id"], t["key"]) for t in todos}
    for t in todos:
        v = by_uid[todo_uid(t["item_id"], t["key"])]
        assert str(v["SUMMARY"]) == t["title"]
        assert v.decoded("DTSTAMP").tzinfo is not None
        desc = str(v["DESCRIPTION"])
        got = d.call("get", {"id": t["item_id"]})
        card = got["artifacts"]["card"]["payload"]
        assert got["item"]["intent"] in desc and card["one_liner"] in desc
        assert v.decoded("PRIORITY") == {"P0": 1, "P1": 3, "P2": 5, "P3": 9}[card["priority"]]
        if t["done"]:
            assert str(v["STATUS"]) == "COMPLETED"
            completed = v.decoded("COMPLETED")
            ticked = datetime.fromisoformat(t["done_at"].replace("Z", "+00:00"))
            assert completed == ticked.replace(microsecond=0)  # iCalendar keeps seconds
            assert completed.utcoffset() == timedelta(0)
        else:
            assert str(v["STATUS"]) == "NEEDS-ACTION" and "COMPLETED" not in v
    assert sum(str(v["STATUS"]) == "COMPLETED" for v in found) == 1
    assert {str(v["URL"]) for v in found if "URL" in v} == {URL}
    # Exported again after a tick: the same UIDs, the ticked one newer and completed.
    before = {u: v.decoded("LAST-MODIFIED") for u, v in by_uid.items()}
    tick(d, ids[1], 2)
    again = icalendar.Calendar.from_ical(export(d, "ics", tmp_path / "b.ics")).walk("VTODO")
    assert {str(v["UID"]) for v in again} == set(by_uid)
    moved = [v for v in again if str(v["STATUS"]) == "COMPLETED"]
    assert len(moved) == 2
    newly = next(v for v in moved if str(v["UID"]) == todo_uid(ids[1], todos_of(d, ids[1])[1]))
    assert newly.decoded("LAST-MODIFIED") >= before[str(newly["UID"])]
    assert newly.decoded("SEQUENCE") >= by_uid[str(newly["UID"])].decoded("SEQUENCE")


def todos_of(d: DaemonProc, item_id: str) -> list[str]:
    return [t["key"] for t in d.call("get", {"id": item_id})["todos"]]


def task(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `task`, on a TASKDATA of its own and a taskrc that asks nothing."""
    rc = data / "taskrc"
    if not rc.exists():
        data.mkdir(parents=True, exist_ok=True)
        rc.write_text(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\n")
    exe = shutil.which("task")
    assert exe, "Taskwarrior is missing: .ci/setup-taskwarrior installs it"
    env = {**os.environ, "TASKRC": str(rc), "TASKDATA": str(data)}
    return subprocess.run(
        [exe, "rc.confirmation=off", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def exported(data: Path) -> list[dict[str, Any]]:
    out = task(data, "export")
    assert out.returncode == 0, out.stderr
    tasks: list[dict[str, Any]] = json.loads(out.stdout)
    return tasks


def test_taskwarrior_imports_twice_without_duplicates_and_a_tick_completes_the_task(
    cards: tuple[DaemonProc, list[str]], tmp_path: Path
) -> None:
    d, ids = cards
    todos = all_todos(d, ids)
    file = tmp_path / "tasks.json"
    export(d, "taskwarrior", file)
    data = tmp_path / "taskdata"
    for _ in range(2):
        out = task(data, "import", str(file))
        assert out.returncode == 0, out.stderr
    tasks = exported(data)
    assert len(tasks) == len(todos)
    assert {t["uuid"] for t in tasks} == {todo_uid(t["item_id"], t["key"]) for t in todos}
    assert {t["status"] for t in tasks} == {"pending"}
    with_url = [t for t in tasks if t["uuid"] in {todo_uid(ids[0], k) for k in todos_of(d, ids[0])}]
    for t in with_url:
        assert t["project"].startswith("readdod.")
        assert {"readdod", "db", "wal_tuning"} <= set(t["tags"])
        notes = [a["description"] for a in t["annotations"]]
        assert URL in notes and any(n.startswith("estimate: ~") for n in notes)
        assert t["priority"] in ("H", "M", "L")

    tick(d, ids[1], 3)
    export(d, "taskwarrior", file)
    out = task(data, "import", str(file))
    assert out.returncode == 0, out.stderr
    tasks = exported(data)
    assert len(tasks) == len(todos)
    done = [t for t in tasks if t["status"] == "completed"]
    assert [t["uuid"] for t in done] == [todo_uid(ids[1], todos_of(d, ids[1])[2])]
    assert "end" in done[0]
    # Taken back in readdod: pending again in Taskwarrior after the next import.
    tick(d, ids[1], 3, done=False)
    export(d, "taskwarrior", file)
    assert task(data, "import", str(file)).returncode == 0
    assert {t["status"] for t in exported(data)} == {"pending"}


LINE = re.compile(
    r"^(?:x (?P<done>\d{4}-\d{2}-\d{2}) |\((?P<pri>[A-D])\) )(?P<created>\d{4}-\d{2}-\d{2}) "
    r"(?P<rest>.+)$"
)


def test_todotxt_has_one_line_per_todo_with_marks_projects_contexts_and_keys(
    cards: tuple[DaemonProc, list[str]], tmp_path: Path
) -> None:
    d, ids = cards
    tick(d, ids[0], 2)
    todos = all_todos(d, ids)
    lines = export(d, "todotxt", tmp_path / "todo.txt").splitlines()
    assert len(lines) == len(todos)
    by_uid = {w[4:]: line for line in lines for w in line.split(" ") if w.startswith("uid:")}
    assert set(by_uid) == {todo_uid(t["item_id"], t["key"]) for t in todos}
    # Newest item first; each item's todos in their order.
    first = [line for line in lines if f"readdod:{ids[0]}" in line]
    assert first == [by_uid[todo_uid(ids[0], k)] for k in todos_of(d, ids[0])]
    for t in todos:
        line = by_uid[todo_uid(t["item_id"], t["key"])]
        m = LINE.match(line)
        assert m, line
        got = d.call("get", {"id": t["item_id"]})
        priority = "ABCD"[int(got["artifacts"]["card"]["payload"]["priority"][1])]
        words = m["rest"].split(" ")
        assert m["rest"].startswith(t["title"] + " +")
        assert f"@{t['kind']}" in words and f"readdod:{t['item_id']}" in words
        assert f"uid:{todo_uid(t['item_id'], t['key'])}" in words
        assert f"est:{t['estimate_min']}m" in words
        assert sum(w.startswith("+") for w in words) >= 1
        assert m["created"] == got["item"]["created_at"][:10]
        if t["done"]:
            assert m["done"] == t["done_at"][:10] and f"pri:{priority}" in words
        else:
            assert m["pri"] == priority
        if t["item_id"] == ids[0]:
            assert f"url:{URL}" in words and "+db" in words and "+wal-tuning" in words
        else:
            assert not [w for w in words if w.startswith("url:")]
    assert sum(line.startswith("x ") for line in lines) == 1


def test_the_status_filter_stdout_and_bad_input(
    cards: tuple[DaemonProc, list[str]], tmp_path: Path
) -> None:
    d, ids = cards
    d.call("ship", {"id": ids[1]})
    shipped = run_cli(d, "todos", "export", "--format", "todotxt", "--status", "shipped")
    assert shipped.returncode == 0, shipped.stderr
    rows = shipped.stdout.splitlines()
    assert rows and all(f"readdod:{ids[1]}" in r for r in rows)
    everything = run_cli(d, "todos", "export", "--format", "todotxt", "--status", "READY,SHIPPED")
    assert len(everything.stdout.splitlines()) == len(all_todos(d, ids))
    # An item without a card has no todos to hand on.
    captured = run_cli(d, "todos", "export", "--format", "todotxt", "--status", "CAPTURED")
    assert captured.returncode == 0 and captured.stdout == ""
    bad = run_cli(d, "todos", "export", "--format", "ics", "--status", "READY,DONE")
    assert bad.returncode == 1 and "VALIDATION_ERROR" in bad.stderr and "DONE" in bad.stderr
    empty = run_cli(d, "todos", "export", "--format", "ics", "--status", ",")
    assert empty.returncode == 1 and "--status" in empty.stderr
    folder = run_cli(d, "todos", "export", "--format", "ics", "--out", str(tmp_path))
    assert folder.returncode == 1 and "folder" in folder.stderr
    missing = tmp_path / "no" / "such" / "dir" / "x.ics"
    gone = run_cli(d, "todos", "export", "--format", "ics", "--out", str(missing))
    assert gone.returncode == 1 and "cannot write" in gone.stderr and not missing.exists()
    said = run_cli(
        d, "todos", "export", "--format", "ics", "--out", str(tmp_path / "t.ics"), "--json"
    )
    assert said.returncode == 0, said.stderr
    assert json.loads(said.stdout) == {
        "path": str(tmp_path / "t.ics"),
        "format": "ics",
        "todos": len(all_todos(d, ids)),
        "items": 2,
    }
    usage = run_cli(d, "todos", "export", "--format", "csv")
    assert usage.returncode == 64
