"""The real ``readdod tui`` in a real terminal (tmux, 80x24), read with capture-pane.

The main screens are compared with the text snapshots in tests/snapshots/tui/
(ids and ages masked); ``READDOD_UPDATE_SNAPSHOTS=1`` writes them anew.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from tests.daemon_proc import DaemonProc
from tests.tmux_pane import Pane, normalised
from tests.tui_rig import seed, start_daemon, wait_until

SNAPSHOTS = Path(__file__).parent / "snapshots" / "tui"

#: An "editor" that changes the card's one-liner, as a person would in $EDITOR.
EDITOR = """\
import json, sys
path = sys.argv[1]
card = json.load(open(path, encoding="utf-8"))
card["one_liner"] = "My own words on this."
json.dump(card, open(path, "w", encoding="utf-8"))
"""


def shows(text: str) -> Callable[[str], bool]:
    return lambda screen: text in screen


def assert_snapshot(name: str, screen: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    got = normalised(screen)
    if os.environ.get("READDOD_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path}; write it with READDOD_UPDATE_SNAPSHOTS=1"
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), lineterm=""))
        raise AssertionError(f"the {name} screen changed:\n{diff}")


def test_the_real_tui_in_a_terminal(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = start_daemon(tmp_path, daemons, daemon={"skip_below": 0})
    ids = seed(d)
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("READDOD_", "TMUX"))},
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "EDITOR": f"{sys.executable} {editor}",
    }
    env.pop("VISUAL", None)
    command = [sys.executable, "-m", "readdod", "tui", "--socket", str(d.sock)]
    pane = Pane(tmp_path, command, env)
    try:
        inbox = pane.settled(
            lambda s: "● live" in s and "Spaced repetition" in s and " r retry " in s, "the inbox"
        )
        assert_snapshot("inbox", inbox)

        # The failed item is the newest, so highlighted first: its reason is on show.
        assert "EXTRACTION_BLOCKED_ADDRESS" in inbox

        def back_home(gone: str) -> None:
            # Wait for the inbox before the next key: an Esc and a key sent at once read as Alt+key.
            pane.keys("Escape")
            pane.wait_for(
                lambda s: s.startswith("readdod · inbox") and gone not in s, "the inbox again"
            )

        pane.keys("?")
        keys = pane.settled(lambda s: "Keys (Esc closes)" in s, "the key map")
        assert_snapshot("keys", keys)
        back_home("Keys (Esc closes)")

        pane.keys("c")
        form = pane.settled(lambda s: "URL or text" in s and "Intent" in s, "the capture form")
        assert_snapshot("capture", form)
        back_home("URL or text")

        pane.keys("Down", "Enter")
        card = pane.settled(lambda s: "Todos" in s and "e export" in s, "the card")
        assert_snapshot("card", card)
        pane.keys("2")

        def ticks() -> list[bool]:
            card = d.call("get", {"id": ids["SQLite WAL mode"]})["artifacts"]["card"]
            return [bool(t["done"]) for t in card["payload"]["todos"]]

        wait_until(lambda: ticks()[:2] == [False, True], "todo 2 ticked")
        pane.keys("End")  # the todos are below the fold at 80x24
        pane.wait_for(lambda s: "2. [x]" in s, "todo 2 shown ticked")
        pane.keys("E")  # the editor runs, changes the one-liner, exits

        def whose() -> str:
            got = d.call("get", {"id": ids["SQLite WAL mode"]})
            return str(got["artifacts"]["card"]["created_by"])

        wait_until(lambda: whose() == "user", "the edited card")
        pane.keys("Home")
        pane.wait_for(lambda s: "My own words on this." in s and "yours" in s, "your version")
        back_home("Key points")

        pane.keys("c")
        pane.wait_for(lambda s: "URL or text" in s, "the capture form")
        # Each field is seen on screen before Enter: keys sent in one burst may be read as a paste.
        for typed in ("Notes on deep work and long focus.", "focus better", "#focus"):
            pane.text(typed)
            pane.wait_for(shows(typed), f"{typed!r} typed")
            pane.keys("Enter")
        pane.wait_for(lambda s: "captured" in s, "the capture told")
        wait_until(lambda: len(d.call("list", {"tags": ["focus"]})["items"]) == 1, "the item")

        d.stop()
        gone = pane.wait_for(lambda s: "reconnecting" in s, "the restart noticed")
        assert "○ reconnecting" in gone
        d.start()
        pane.wait_for(lambda s: "● live" in s, "the watch back")

        pane.keys("q")
        pane.wait_for(lambda s: not pane.alive(), "the TUI to quit", timeout=15)
    finally:
        pane.close()
