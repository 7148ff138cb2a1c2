"""Todos a person ticks, against the real daemon: the ``todo`` method and its refusals,
ticks that outlive a regenerated card, and what ``get``, ``show``, the Markdown export
and ``stats`` say of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client, RpcError
from readdod.control.protocol import INVALID_PARAMS
from readdod.items.todos import keys
from tests.daemon_proc import DaemonProc, run_cli

TEXT = "Write-ahead logging lets readers go on while a writer commits its pages. " * 12


def start(daemons: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    root.mkdir(parents=True, exist_ok=True)
    d = DaemonProc(root, ai={"engine": "fixed"}, **sections)
    daemons.append(d)
    return d.start()


def ready_item(d: DaemonProc, **extra: Any) -> str:
    """A text captured and processed to READY by the fixed engine."""
    res = d.call("capture", {"text": TEXT, "intent": "decide on WAL", **extra})
    item_id: str = res["item"]["id"]
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] == "READY"
        )
    )
    return item_id


def ticks(got: dict[str, Any]) -> list[bool]:
    return [t["done"] for t in got["todos"]]


def tick(d: DaemonProc, item_id: str, index: int, done: bool = True) -> dict[str, Any]:
    res: dict[str, Any] = d.call("todo", {"id": item_id, "index": index, "done": done})
    return res


def refusal(d: DaemonProc, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as caught:
        d.call("todo", params)
    return caught.value


def test_the_todo_method_ticks_by_position_and_refuses_with_stable_codes(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path, daemon={"auto_process": False})
    # A captured item shows no todos yet: a refused move, not a bad request.
    waiting = d.call("capture", {"text": TEXT, "intent": "decide on WAL"})["item"]["id"]
    err = refusal(d, {"id": waiting, "index": 1, "done": True})
    assert (err.rpc_code, err.error_code) == (409, "INVALID_TRANSITION")
    assert "CAPTURED" in err.message and "no todos" in err.message
    d.call("process", {"id": waiting})
    d.wait_status("READY", 1)
    item_id = waiting

    got = d.call("get", {"id": item_id})
    shown = got["artifacts"]["card"]["payload"]["todos"]
    n = len(shown)
    assert n >= 3
    assert [t["done"] for t in shown] == [False] * n
    assert [t["done"] for t in got["artifacts"]["todos"]["payload"]["items"]] == [False] * n
    assert [t["index"] for t in got["todos"]] == list(range(1, n + 1))
    assert [t["key"] for t in got["todos"]] == keys([t["title"] for t in shown])

    with Client(d.sock, timeout_s=30) as watcher:
        watcher.call("watch", {"id": item_id})
        res = tick(d, item_id, 2)
        event = json.loads(watcher.read_raw())["params"]
    assert (event["event"], event["item_id"]) == ("todo.done", item_id)
    assert event["data"]["index"] == 2 and event["data"]["key"] == res["todos"][1]["key"]
    assert res["item"]["id"] == item_id and res["item"]["status"] == "READY"
    assert ticks(res) == [n == 2 for n in range(1, n + 1)]
    assert res["artifacts"]["card"]["payload"]["todos"][1]["done"] is True
    assert res["todos"][1]["done_at"] is not None
    again = tick(d, item_id, 2)
    assert again["todos"][1]["done_at"] == res["todos"][1]["done_at"]
    assert ticks(d.call("get", {"id": item_id})) == ticks(res)
    d.wait_log(lambda e: e["event"] == "todo.done" and e.get("item_id") == item_id)
    history = d.call("get", {"id": item_id, "history": True})["events"]
    assert [e["detail"]["index"] for e in history if e["kind"] == "todo"] == [2]

    assert ticks(tick(d, item_id, 2, done=False)) == [False] * n
    assert ticks(tick(d, item_id, 2, done=False)) == [False] * n

    err = refusal(d, {"id": "01NOSUCHITEM", "index": 1, "done": True})
    assert (err.rpc_code, err.error_code) == (404, "NOT_FOUND")
    for index in (0, -1, n + 1):
        err = refusal(d, {"id": item_id, "index": index, "done": True})
        assert (err.rpc_code, err.error_code) == (422, "VALIDATION_ERROR")
        assert f"1 to {n}" in err.message and str(index) in err.message
    for bad in ({"id": item_id, "index": "2", "done": True}, {"id": item_id, "index": 1}):
        assert refusal(d, bad).rpc_code == INVALID_PARAMS
    # Nothing of that reached the store; the daemon answers on.
    assert ticks(d.call("get", {"id": item_id})) == [False] * n
    assert d.call("ping")["paused"] is False
    assert d.stop() == 0


def test_ticks_outlive_a_regenerated_card_and_show_in_show_markdown_and_stats(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path)
    item_id = ready_item(d)
    other = ready_item(d)
    out = run_cli(d, "todo", "done", item_id, "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{item_id} todo 1 [x] ")
    assert run_cli(d, "todo", "done", item_id, "3").returncode == 0
    assert run_cli(d, "todo", "done", other, "2").returncode == 0
    out = run_cli(d, "todo", "undo", other, "9")
    assert out.returncode == 1 and "VALIDATION_ERROR" in out.stderr and "todo 9" in out.stderr
    before = d.call("get", {"id": item_id})
    assert ticks(before)[:3] == [True, False, True]

    # A new run with the same todo words: the ticks stay where the words are.
    first_run = before["item"]["ready_run_id"]
    d.call("process", {"id": item_id, "regenerate": True})
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == item_id
            and e["to"] == "READY"
            and e.get("run_id") != first_run
        )
    )
    after = d.call("get", {"id": item_id})
    assert after["item"]["ready_run_id"] != first_run
    assert ticks(after) == ticks(before)

    # A person rewrites the todos: the first keeps its words (up to case, spacing and a
    # full stop), the third is new. The payload is what `get` showed, `done` and all.
    mine = after["artifacts"]["todos"]["payload"]
    mine["items"][0]["title"] = "  " + mine["items"][0]["title"].upper() + ". "
    mine["items"][2]["title"] = "Something else entirely"
    edited = d.call("edit", {"id": item_id, "type": "todos", "payload": mine})["artifact"]
    assert edited["created_by"] == "user"
    now = d.call("get", {"id": item_id})
    assert ticks(now)[:3] == [True, False, False]

    # In $EDITOR the todos are as stored, without ticks; the edit keeps the ticks of
    # the words it keeps.
    editor = (
        f'{sys.executable} -c "import json,sys; p=sys.argv[1]; t=open(p).read();'
        " sys.exit(3) if 'done' in t else None; d=json.loads(t);"
        " d['items'][1]['title']='A second todo of mine'; json.dump(d, open(p, 'w'))\""
    )
    out = run_cli(d, "edit", item_id, "todos", env={"EDITOR": editor, "VISUAL": ""})
    assert out.returncode == 0, out.stderr
    assert ticks(d.call("get", {"id": item_id}))[:3] == [True, False, False]

    show = run_cli(d, "show", item_id)
    assert show.returncode == 0
    assert "   1. [x] " in show.stdout and "   3. [ ] Something else entirely" in show.stdout

    stats = d.call("stats")
    assert stats["todos"] == {"done": 2, "items": 2}
    assert "todos ticked done: 2 on 2 items" in run_cli(d, "stats").stdout

    exported = d.call("export", {"id": item_id, "format": "markdown"})
    body = Path(exported["files"][0]).read_text()
    lines = [line for line in body.splitlines() if line.startswith("- [")]
    assert [line[:6] for line in lines] == ["- [x] "] + ["- [ ] "] * (len(lines) - 1)
    # A tick changes the file, so exporting again writes it again.
    tick(d, item_id, 2)
    again = d.call("export", {"id": item_id, "format": "markdown"})
    assert again["reused"] is False
    body = Path(again["files"][0]).read_text()
    assert [ln[:6] for ln in body.splitlines() if ln.startswith("- [")][:3] == ["- [x] "] * 2 + [
        "- [ ] "
    ]
    assert json.loads(run_cli(d, "show", item_id, "--json").stdout)["todos"][1]["done"] is True
    # Kept in the database: a restarted daemon shows the same ticks.
    kept = ticks(d.call("get", {"id": item_id}))
    assert d.stop() == 0
    d.start()
    assert ticks(d.call("get", {"id": item_id})) == kept
    assert d.call("stats")["todos"] == {"done": 3, "items": 2}
    assert d.stop() == 0
