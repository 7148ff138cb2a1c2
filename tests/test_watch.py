"""`watch` against the real daemon: every event of a run, filters, the CLI, and a
subscriber too slow to keep up."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client, RpcError
from readdod.runtime.events import DROPPED, EventBus
from readdod.steps import NAMES as STEPS
from tests.daemon_proc import DaemonProc

ARTICLE = "A short text about spaced repetition and how to schedule reviews of notes.\n" * 5


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    sections.setdefault("ai", {"engine": "fixed"})
    sections.setdefault("daemon", {"skip_below": 0})
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _subscribe(d: DaemonProc, params: dict[str, Any] | None = None) -> Client:
    c = Client(d.sock)
    c.send_raw(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "watch", "params": params or {}}).encode()
        + b"\n"
    )
    assert json.loads(c.read_raw())["result"]["subscribed"] is True
    return c


def _events_until(c: Client, stop: Any) -> list[dict[str, Any]]:
    seen = []
    while True:
        msg = json.loads(c.read_raw())
        assert msg["jsonrpc"] == "2.0" and msg["method"] == "event" and "id" not in msg
        seen.append(msg["params"])
        if stop(msg["params"]):
            return seen


def _is_ready(item_id: str) -> Any:
    return lambda e: e["item_id"] == item_id and e["data"].get("to") == "READY"


def test_watch_streams_every_event_of_a_run(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path).start()
    with _subscribe(d) as watcher:
        item_id = d.call("capture", {"text": ARTICLE, "intent": "review my notes"})["item"]["id"]
        seen = _events_until(watcher, _is_ready(item_id))
    mine = [e for e in seen if e["item_id"] == item_id]
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)
    moves = [
        (e["data"].get("from"), e["data"].get("to"))
        for e in mine
        if e["event"] == "item.transition"
    ]
    assert moves == [("CAPTURED", "QUEUED"), ("QUEUED", "PROCESSING"), ("PROCESSING", "READY")]
    assert mine[0]["event"] == "item.captured"
    steps = [(e["event"], e["data"]["step"]) for e in mine if e["event"].startswith("step.")]
    assert steps == [(ev, s) for s in STEPS for ev in ("step.started", "step.finished")]
    finished = [e for e in mine if e["event"] == "step.finished"]
    assert all(e["run_id"] and e["data"]["duration_ms"] >= 0 for e in finished)
    assert d.stop() == 0


def test_watch_one_item_and_unknown_ids(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path).start()
    item_id = d.call("capture", {"text": ARTICLE, "intent": "one"})["item"]["id"]
    d.wait_status("READY", count=1)
    with pytest.raises(RpcError) as exc:
        d.call("watch", {"id": "NOPE"})
    assert exc.value.error_code == "NOT_FOUND"
    with _subscribe(d, {"id": item_id}) as watcher:
        other = d.call("capture", {"text": ARTICLE, "intent": "two"})["item"]["id"]
        d.wait_status("READY", count=2)
        d.call("process", {"id": item_id, "regenerate": True})
        seen = _events_until(watcher, _is_ready(item_id))
    assert other != item_id and {e["item_id"] for e in seen} == {item_id}
    assert d.stop() == 0


def test_cli_watch_json_lines_and_the_live_view(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path).start()
    procs = {
        mode: subprocess.Popen(
            [sys.executable, "-m", "readdod", "watch", *flags, "--config", str(d.config)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for mode, flags in (("json", ["--json"]), ("human", []))
    }
    killers = [threading.Timer(60, p.kill) for p in procs.values()]
    for k in killers:
        k.start()
    try:
        d.wait_log(lambda e: e["event"] == "watch.subscribed", count=2)
        lines: dict[str, list[str]] = {"json": [], "human": []}
        item_id = d.call("capture", {"text": ARTICLE, "intent": "see it live"})["item"]["id"]
        for mode, proc in procs.items():
            assert proc.stdout is not None
            for line in proc.stdout:
                lines[mode].append(line)
                if item_id in line and "READY" in line:
                    break
    finally:
        for p in procs.values():
            p.kill()
            p.wait(timeout=30)
            if p.stdout is not None:
                p.stdout.close()
        for k in killers:
            k.cancel()
    events = [json.loads(line) for line in lines["json"]]
    assert all(e["event"] for e in events)
    assert events[-1]["item_id"] == item_id and events[-1]["data"]["to"] == "READY"
    human = [line for line in lines["human"] if item_id in line]
    assert any("PROCESSING  summary" in line for line in human)
    assert human[-1].split()[-1] == "READY"
    assert d.stop() == 0


def test_a_subscriber_that_cannot_keep_up_is_dropped_with_a_notice(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, control={"watch_buffer": 5, "send_timeout_s": 60.0}).start()
    items = 150
    with _subscribe(d) as slow:
        # Not reading: the socket buffers fill, then the subscriber's queue overflows.
        batch = [
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "capture",
                "params": {"text": ARTICLE, "intent": f"n{i}"},
            }
            for i in range(items)
        ]
        with d.client() as c:
            c.send_raw(json.dumps(batch).encode() + b"\n")
            assert len(json.loads(c.read_raw())) == items
        d.wait_log(lambda e: e["event"] == "watch.dropped")
        # The daemon did not wait for the slow reader: every item gets done.
        d.wait_status("READY", count=items)
        seen = _events_until(slow, lambda e: e["event"] == DROPPED)
        assert "behind" in seen[-1]["data"]["reason"]
        assert slow._file.readline() == b""  # and the connection is closed
    assert len(seen) < items * 10
    assert d.call("ping")["version"]
    assert d.stop() == 0


def test_the_bus_drops_a_full_subscriber_without_blocking() -> None:
    bus = EventBus()
    fast = bus.subscribe(buffer=100)
    slow = bus.subscribe(buffer=2)
    only = bus.subscribe(item_id="B", buffer=2)
    for n in range(5):
        bus.publish("item.transition", "A", None, to=str(n))
    assert slow.dropped is not None and bus.subscribers == 2 and bus.dropped == 1
    assert only.dropped is None  # none of those were for B
    assert slow.notice().event == DROPPED and slow.notice().data["last_seq"] == 2
    for sub in (fast, slow, only):
        sub.close()
    assert bus.subscribers == 0


def test_the_live_view_keeps_each_items_state() -> None:
    from readdod.cli import WatchView

    view = WatchView()
    base = {"at": "2026-01-01T10:00:00.000Z", "item_id": "I1", "run_id": "R1"}
    lines = [
        view.line(
            {**base, "event": "item.transition", "data": {"from": "QUEUED", "to": "PROCESSING"}}
        ),
        view.line({**base, "event": "step.started", "data": {"step": "summary"}}),
        view.line(
            {
                **base,
                "event": "chunk.progress",
                "data": {
                    "step": "summary",
                    "chunk": 2,
                    "state": "retrying",
                    "done": 2,
                    "active": 1,
                    "total": 5,
                    "error_code": "AI_TIMEOUT",
                },
            }
        ),
        view.line({**base, "event": "step.started", "data": {"step": "score"}}),
        view.line(
            {**base, "event": "item.transition", "data": {"from": "PROCESSING", "to": "READY"}}
        ),
    ]
    assert lines[1].endswith("PROCESSING  summary")
    # Processing and retrying chunks are one "active" figure beside done/total.
    assert lines[2].endswith("PROCESSING  summary  chunks 2/5, 1 active  last error AI_TIMEOUT")
    assert lines[3].endswith("PROCESSING  score")
    assert lines[4].endswith("item.transition  READY")
    assert lines[0].startswith("10:00:00  I1  item.transition")
