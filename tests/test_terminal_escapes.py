"""Control characters from anywhere (a feed entry, a bookmark file, a page's title)
never reach a terminal: one-line fields are cleaned at capture, and the CLI shows
whatever else it prints visibly."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from readdod.text.controls import single_line, visible
from tests.daemon_proc import DaemonProc, run_cli

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
