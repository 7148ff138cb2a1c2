"""Control characters from anywhere (a feed entry, a bookmark file, a page's title)
never reach a terminal: one-line fields are cleaned at capture, and the CLI shows
whatever else it prints visibly."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import icalendar
import pytest

from readdod.tasks.document import todo_uid
from readdod.text.controls import single_line, visible
from tests.daemon_proc import DaemonProc, run_cli
from tests.test_tasks_e2e import task
from tests.test_todos_e2e import TEXT, ready_item, start
from tests.tmux_pane import Pane

#: What a terminal would act on: every C0 control but newline and tab, DEL, every C1.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

HOSTILE_INTENT = "learn\x1b]0;pwned\x07 the tides\r\x00"
HOSTILE_TITLE = "Tides\x1b[2J\x1b[H of\x9b31m the\nworld"
HOSTILE_TAG = "sea\x1bPdcs\x1b\\side"


def test_one_line_fields_are_cleaned_and_bodies_shown_visibly() -> None:
    assert single_line(HOSTILE_INTENT) == "learn the tides"
    assert single_line(HOSTILE_TITLE) == "Tides of the world"
    assert single_line(HOSTILE_TAG) == "seaside"
    assert single_line("a\tb\r\nc") == "a b c"
    assert visible("a\x1b]0;x\x07b\r\x00\x7f\x9b\nc\td") == "a␛]0;x␇b␍␀␡\\x9b\nc\td"
    assert not RAW.search(visible("".join(map(chr, range(0xA0)))))


def test_ls_and_show_never_print_a_control_character(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"auto_process": False})
    daemons.append(d)
    d.start()
    got = d.call(
        "capture",
        {
            "intent": HOSTILE_INTENT,
            "title": HOSTILE_TITLE,
            "url": "https://example.org/tides\x1b[31m",
            "tags": [HOSTILE_TAG],
            "text": "The sea rises twice a day.\x1b]2;owned\x07 Sailors plan for it.",
        },
    )
    item = got["item"]
    assert item["intent"] == "learn the tides"
    assert item["title"] == "Tides of the world"
    assert item["url"] == "https://example.org/tides"
    for verb in (("ls",), ("show", item["id"]), ("show", item["id"], "--history")):
        out = run_cli(d, *verb)
        assert out.returncode == 0, out
        assert not RAW.search(out.stdout + out.stderr), (verb, out.stdout)
    assert "learn the tides" in run_cli(d, "show", item["id"]).stdout
    # A row written before cleaning existed (or by another tool): shown, visibly.
    db = sqlite3.connect(d.db_path, timeout=30)
    try:
        db.execute("UPDATE items SET title = ? WHERE id = ?", (HOSTILE_TITLE, item["id"]))
        db.commit()
    finally:
        db.close()
    for verb in (("ls",), ("show", item["id"])):
        out = run_cli(d, *verb)
        assert not RAW.search(out.stdout + out.stderr), (verb, out.stdout)
        assert "Tides␛[2J␛[H of\\x9b31m the" in out.stdout, out.stdout
    assert d.stop() == 0


HOSTILE_TODO = (
    "Check\x1b]0;pwned\x07 the\r tide\x00 table h:1 t:2099-01-01 uid:evil-uid due:tomorrow"
)


@pytest.fixture
def hostile_card(tmp_path: Path, daemons: list[DaemonProc]) -> Iterator[tuple[DaemonProc, str]]:
    """A READY card whose first todo (a person's edit, or a page's words) carries
    escapes and todo.txt look-alike tags, and whose stored title carries escapes."""
    d = start(daemons, tmp_path / "d")
    item_id = d.call("capture", {"text": TEXT, "intent": "decide on WAL"})["item"]["id"]
    d.wait_status("READY", 1)
    todos = d.call("get", {"id": item_id})["artifacts"]["todos"]["payload"]
    todos["items"][0]["title"] = HOSTILE_TODO
    d.call("edit", {"id": item_id, "type": "todos", "payload": todos})
    db = sqlite3.connect(d.db_path, timeout=30)
    try:
        db.execute("UPDATE items SET title = ? WHERE id = ?", (HOSTILE_TITLE, item_id))
        db.commit()
    finally:
        db.close()
    yield d, item_id
    d.stop()


def _export(d: DaemonProc, fmt: str, out: Path) -> str:
    res = run_cli(d, "todos", "export", "--format", fmt, "--out", str(out))
    assert res.returncode == 0, res.stderr
    return out.read_text()


def test_exports_carry_no_control_character_and_no_tag_of_the_texts(
    hostile_card: tuple[DaemonProc, str], tmp_path: Path
) -> None:
    d, item_id = hostile_card
    ics = _export(d, "ics", tmp_path / "todos.ics")
    assert not RAW.search(ics.replace("\r\n", "\n"))
    summaries = [str(t["SUMMARY"]) for t in icalendar.Calendar.from_ical(ics).walk("VTODO")]
    assert "Check the tide table h:1 t:2099-01-01 uid:evil-uid due:tomorrow" in summaries

    tw = _export(d, "taskwarrior", tmp_path / "todos.json")
    assert not RAW.search(tw)
    data = tmp_path / "task"
    assert task(data, "import", str(tmp_path / "todos.json")).returncode == 0
    out = task(data, "export")
    assert out.returncode == 0, out.stderr
    tasks = json.loads(out.stdout)  # Taskwarrior's own export is valid JSON
    assert any(t["description"].startswith("Check the tide table") for t in tasks)
    assert not RAW.search(out.stdout)

    txt = _export(d, "todotxt", tmp_path / "todo.txt")
    assert not RAW.search(txt.replace("\n", ""))
    hostile = next(line for line in txt.splitlines() if line.count("Check the tide") == 1)
    words = hostile.split(" ")
    # readdod's own uid is the only uid: tag, and the text's h:, t:, due: are no tags.
    first_key = d.call("get", {"id": item_id})["todos"][0]["key"]
    assert [w for w in words if w.startswith("uid:")] == [f"uid:{todo_uid(item_id, first_key)}"]
    assert not [w for w in words if w.split(":")[0] in ("h", "t", "due")]


def test_the_tui_in_a_real_terminal_is_not_driven_by_a_title(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """``readdod tui`` under tmux: a stored title with an OSC sequence (a row from
    before capture cleaned them) neither retitles the terminal nor garbles the rows."""
    d = DaemonProc(tmp_path, daemon={"auto_process": False})
    daemons.append(d)
    d.start()
    item_id = d.call("capture", {"text": TEXT, "intent": "decide on WAL"})["item"]["id"]
    db = sqlite3.connect(d.db_path, timeout=30)
    try:
        raw = "Tides\x1b]2;PWNED\x07 of\x1b[2J the world"
        db.execute("UPDATE items SET title = ? WHERE id = ?", (raw, item_id))
        db.commit()
    finally:
        db.close()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("READDOD_", "TMUX"))},
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    pane = Pane(tmp_path, [sys.executable, "-m", "readdod", "tui", "--socket", str(d.sock)], env)
    try:
        screen = pane.settled(lambda s: "● live" in s and "Tides" in s, "the inbox")
        assert "Tides␛]2;PWNED␇ of" in screen, screen
        title = pane._run("display-message", "-p", "-t", "t", "#{pane_title}")
        assert "PWNED" not in title, title
    finally:
        pane.close()
    assert d.stop() == 0


def _strings(value: object) -> list[str]:
    """Every string inside a JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_an_edited_card_is_cleaned_as_a_capture_is(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """`readdod edit ID card`: the person's title, tags and todos are cleaned in the core
    as capture cleans an intent, a title and a tag; the summary keeps its lines."""
    d = start(daemons, tmp_path / "d")
    item_id = ready_item(d)
    card = d.call("get", {"id": item_id})["artifacts"]["card"]["payload"]
    card = {k: v for k, v in card.items() if k != "todos"} | {
        "title": HOSTILE_TITLE,
        "tags": [HOSTILE_TAG, "plain"],
        "summary": "First line\x1b]2;owned\x07.\nSecond line.",
        "key_points": [HOSTILE_INTENT, "b", "c"],
        "todos": [{"title": "Check\x1b[31m the tide\r table", "kind": "output", "estimate_min": 5}],
    }
    edited = tmp_path / "card.json"
    edited.write_text(json.dumps(card))
    out = run_cli(d, "edit", item_id, "card", "--file", str(edited))
    assert out.returncode == 0, out.stderr
    shown = json.loads(run_cli(d, "show", item_id, "--json").stdout)
    payload = shown["artifacts"]["card"]["payload"]
    assert shown["artifacts"]["card"]["created_by"] == "user"
    assert not [s for s in _strings(shown) if RAW.search(s)]
    assert payload["title"] == "Tides of the world"
    assert payload["tags"] == ["seaside", "plain"]
    assert payload["key_points"][0] == "learn the tides"
    assert payload["todos"][0]["title"] == "Check the tide table"
    assert payload["summary"] == "First line.\nSecond line."
    assert d.stop() == 0


def test_watch_never_prints_a_control_character_from_a_hostile_capture(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = start(daemons, tmp_path / "d")
    base = [sys.executable, "-m", "readdod", "watch", "--socket", str(d.sock)]
    watchers = [
        subprocess.Popen([*base, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for extra in ((), ("--json",))
    ]
    try:
        d.wait_log(lambda e: e["event"] == "watch.subscribed", count=2)
        item = d.call(
            "capture",
            {
                "intent": HOSTILE_INTENT,
                "title": HOSTILE_TITLE,
                "tags": [HOSTILE_TAG],
                "text": ("The tide\x1b]0;pwned\x07 turns twice a day.\r\x00 " * 20),
            },
        )["item"]
        d.wait_log(
            lambda e: (
                e["event"] == "item.transition"
                and e.get("item_id") == item["id"]
                and e["to"] == "READY"
            )
        )
        d.call("archive", {"id": item["id"]})
        d.wait_log(lambda e: e.get("item_id") == item["id"] and e.get("to") == "ARCHIVED")
    finally:
        d.stop()
        outs = [w.communicate(timeout=60) for w in watchers]
    text, as_json = (out.decode() for out, _ in outs)
    assert item["id"] in text and "READY" in text and "ARCHIVED" in text
    assert not RAW.search(text) and not RAW.search(outs[0][1].decode())
    events = [json.loads(line) for line in as_json.splitlines()]
    assert {e.get("item_id") for e in events} >= {item["id"]}
    assert not RAW.search(as_json) and not [s for e in events for s in _strings(e) if RAW.search(s)]
