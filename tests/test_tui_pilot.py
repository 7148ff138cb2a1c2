"""The TUI driven by Textual's pilot against a real daemon subprocess."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from readdod.tui.app import ReaddodTui
from readdod.tui.capture import CaptureScreen
from readdod.tui.card import CardScreen
from readdod.tui.inbox import InboxScreen
from readdod.tui.table import ItemTable
from tests.daemon_proc import DaemonProc
from tests.tui_rig import seed, start_daemon, until, wait_until

pytestmark = pytest.mark.anyio

SIZE = (80, 24)


@pytest.fixture
def daemon(tmp_path: Path, daemons: list[DaemonProc]) -> DaemonProc:
    return start_daemon(tmp_path, daemons, daemon={"skip_below": 0})


def inbox(app: ReaddodTui) -> InboxScreen:
    screen = app.screen
    assert isinstance(screen, InboxScreen), screen
    return screen


def top(app: ReaddodTui) -> str:
    return str(app.screen.query_one("#top", Static).render())


def shown_keys(app: ReaddodTui) -> set[str]:
    """The keys the footer shows now (an action the screen refuses is not among them)."""
    return {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}


def select(app: ReaddodTui, item_id: str) -> None:
    table = app.screen.query_one(ItemTable)
    table.move_cursor(row=table.get_row_index(item_id))


async def open_card(app: ReaddodTui, pilot: Pilot[Any], item_id: str) -> CardScreen:
    """Highlight ``item_id``, press Enter, and wait for its card's content."""
    select(app, item_id)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CardScreen), "the card")
    card = app.screen
    assert isinstance(card, CardScreen)
    await until(pilot, lambda: card.got is not None, "the card's content")
    return card


def said(app: ReaddodTui, words: str) -> bool:
    return any(words in line for line in app.said)


async def test_the_inbox_lists_updates_live_and_opens_cards(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(inbox(app).items) == 4, "the four items")
        await until(pilot, lambda: app.connection == "live", "the watch")
        screen = inbox(app)
        assert [screen.shown[i][0] for i in screen.items] == ["failed", "ready", "ready", "ready"]

        select(app, ids["Spaced repetition"])
        await pilot.pause()
        assert {"e", "s", "E", "g", "a"} <= shown_keys(app)
        assert not {"r", "u", "C"} & shown_keys(app)
        select(app, ids["blocked"])
        await pilot.pause()
        assert {"r", "a"} <= shown_keys(app) and not {"e", "s", "g", "u"} & shown_keys(app)

        fresh = daemon.call("capture", {"text": "A new thing to read. " * 40, "intent": "see it"})
        new_id = fresh["item"]["id"]
        await until(pilot, lambda: new_id in inbox(app).items, "the capture to appear")
        # The daemon's pace is not under test, and a loaded machine slows it: once the
        # daemon has the item READY, the inbox has the usual bound to show it.
        await until(
            pilot,
            lambda: daemon.call("get", {"id": new_id})["item"]["status"] == "READY",
            "the daemon to make it READY",
            timeout=180,
        )
        await until(pilot, lambda: inbox(app).items[new_id]["status"] == "READY", "it to settle")
        await until(pilot, lambda: inbox(app).shown[new_id][0] == "ready", "its row to say so")

        card = await open_card(app, pilot, ids["SQLite WAL mode"])
        text = str(card.query_one("#card", Static).render())
        for part in (
            "SQLite WAL mode",
            "Key points",
            "Todos",
            "1. [ ]",
            "Why this fit",
            "readdod's",
        ):
            assert part in text, part
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox again")


async def test_the_highlight_moves_by_key_and_mouse_and_the_lines_follow(
    daemon: DaemonProc,
) -> None:
    ids = seed(daemon)
    newest_first = [ids[t] for t in ("blocked", "SQLite WAL mode", "Sourdough starter")]
    newest_first.append(ids["Spaced repetition"])
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        screen = inbox(app)
        await until(pilot, lambda: list(screen.items) == newest_first, "the four items")
        table = screen.query_one(ItemTable)

        def detail() -> str:
            return str(screen.query_one("#detail", Static).render())

        def row_text(n: int) -> str:
            return table.render_line(n + 1).text  # line 0 is the header

        for key, row in (("end", 3), ("up", 2), ("k", 1), ("home", 0), ("up", 0), ("pagedown", 3)):
            await pilot.press(key)
            assert table.cursor_row == row, key
            assert screen.highlighted_id() == newest_first[row], key
        assert newest_first[3] in detail()
        await pilot.press("j")  # the last row: nowhere further to go
        assert table.cursor_row == 3
        assert "ready" in row_text(3) and "Spaced repetition" in row_text(3)
        assert "STATUS" in table.render_line(0).text

        # A row that changes is drawn again with what it says now.
        table.update_row(newest_first[3], ("shipped", "", "P1", "99", "x", "Changed", "1d"))
        assert "shipped" in row_text(3) and "Changed" in row_text(3)

        await pilot.click(ItemTable, offset=(10, 2))  # the second row
        assert table.cursor_row == 1 and newest_first[1] in detail()
        await pilot.click(ItemTable, offset=(10, 2))  # the highlighted row again: open it
        await until(pilot, lambda: isinstance(app.screen, CardScreen), "the card")
        card = app.screen
        assert isinstance(card, CardScreen) and card.item_id == newest_first[1]
        await until(pilot, lambda: card.got is not None, "the card's content")
        assert "SQLite WAL mode" in str(card.query_one("#card", Static).render())

        # The next card is the same screen showing the other item, never the first's text.
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "the inbox again")
        await pilot.press("end")
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is card, "the card again")
        await until(pilot, lambda: card.got is not None, "the other card's content")
        got = card.got
        assert card.item_id == newest_first[3] and got is not None
        assert got["item"]["id"] == newest_first[3]
        text = str(card.query_one("#card", Static).render())
        assert "Spaced repetition" in text and "SQLite WAL mode" not in text


async def test_keys_act_and_a_refusal_is_said_in_words(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    # No watch: the TUI keeps believing what it last read, as it would before an event lands.
    app = ReaddodTui(daemon.sock, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(inbox(app).items) == 4, "the items")
        select(app, ids["Spaced repetition"])
        await pilot.press("a")
        wait_until(
            lambda: (
                daemon.call("get", {"id": ids["Spaced repetition"]})["item"]["status"] == "ARCHIVED"
            ),
            "the archive",
        )
        await until(pilot, lambda: said(app, "archive"), "the archive to be told")

        daemon.call("archive", {"id": ids["Sourdough starter"]})  # behind the TUI's back
        select(app, ids["Sourdough starter"])
        await pilot.press("s")
        await until(pilot, lambda: said(app, "readdod said no"), "the refusal")
        refusal = app.said[-1]
        assert "INVALID_TRANSITION" in refusal and "ARCHIVED" in refusal, refusal
        # The refusal shows what was out of date: the row is read again, and ship is gone.
        screen = inbox(app)
        await until(pilot, lambda: screen.shown[ids["Sourdough starter"]][0] == "archived", "it")
        assert "s" not in shown_keys(app) and "u" in shown_keys(app)


async def test_a_failure_shows_its_reason_and_retries(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: ids["blocked"] in inbox(app).items, "the failed item")
        select(app, ids["blocked"])
        await pilot.pause()
        detail = str(app.screen.query_one("#detail", Static).render())
        assert "EXTRACTION_BLOCKED_ADDRESS" in detail and "r retries" in detail, detail
        assert "r" in shown_keys(app)
        await pilot.press("r")
        await until(pilot, lambda: said(app, "retry"), "the retry")
        daemon.wait_status("FAILED_EXTRACTION", 2)
        attempts = daemon.call("get", {"id": ids["blocked"]})["attempts"]
        assert len(attempts) == 2


async def test_search_and_filters(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(inbox(app).items) == 4, "the items")
        await pilot.press("slash")
        for ch in "#db":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: list(inbox(app).items) == [ids["SQLite WAL mode"]], "one tag")
        assert "“#db”" in top(app)

        await pilot.press("slash")
        await pilot.press("ctrl+u")  # clear the line
        for ch in "is:failed":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: list(inbox(app).items) == [ids["blocked"]], "the failed")

        await pilot.press("slash", "escape")
        await until(pilot, lambda: len(inbox(app).items) == 1, "the group kept")
        await pilot.press("f")  # failed -> shipped: nothing is shipped yet
        await until(pilot, lambda: inbox(app).loaded and not inbox(app).items, "no shipped")
        assert "shipped" in top(app)


async def test_the_capture_form(daemon: DaemonProc) -> None:
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: inbox(app).loaded, "the empty inbox")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CaptureScreen), "the form")
        form = app.screen
        form.query_one("#source", Input).value = "Notes on habits. " * 30
        await pilot.press("enter", "enter", "enter")  # no intent: refused here, form kept
        problem = str(form.query_one("#problem", Static).render())
        assert "intent" in problem and isinstance(app.screen, CaptureScreen)
        form.query_one("#intent", Input).value = "build a habit"
        form.query_one("#tags", Input).value = "#life, habits"
        form.query_one("#tags", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: said(app, "captured"), "the capture")
        assert isinstance(app.screen, InboxScreen)
        await until(pilot, lambda: len(inbox(app).items) == 1, "the new row")
        item = next(iter(inbox(app).items.values()))
        assert item["intent"] == "build a habit" and sorted(item["tags"]) == ["habits", "life"]


async def test_it_survives_a_daemon_restart(daemon: DaemonProc) -> None:
    seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.connection == "live", "the watch")
        daemon.stop()
        await until(pilot, lambda: app.connection == "reconnecting", "the watch to notice")
        assert "reconnecting" in top(app)
        await pilot.press("f")  # the UI keeps answering meanwhile
        assert "ready" in top(app)
        daemon.start()
        await until(pilot, lambda: app.connection == "live", "the watch to come back")
        assert "● live" in top(app)
        fresh = daemon.call("capture", {"text": "After the restart. " * 40, "intent": "see it"})
        await pilot.press("f", "f", "f", "f", "f")  # ready -> ... -> all
        await until(pilot, lambda: fresh["item"]["id"] in inbox(app).items, "news after it")


async def test_a_stalled_daemon_never_freezes_the_screen(daemon: DaemonProc) -> None:
    seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(inbox(app).items) == 4, "the items")
        app.link.timeout_s = 1.0
        assert daemon.proc is not None
        os.kill(daemon.proc.pid, signal.SIGSTOP)
        try:
            await pilot.press("f")
            # The key is answered at once, the page still on its way.
            assert "ready" in top(app) and len(inbox(app).items) == 4
            await pilot.press("P")
            await until(pilot, lambda: said(app, "did not answer within 1 s"), "the deadline")
        finally:
            os.kill(daemon.proc.pid, signal.SIGCONT)
        await pilot.press("f")
        await until(pilot, lambda: inbox(app).filter.group == "active", "the next group")


async def test_pause_and_resume(daemon: DaemonProc) -> None:
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.connection == "live" and app.paused is False, "ping")
        await pilot.press("P")
        await until(pilot, lambda: bool(app.paused), "the pause")
        assert daemon.call("ping")["paused"] is True
        await until(pilot, lambda: "paused" in top(app), "the top line")
        await pilot.press("P")
        await until(pilot, lambda: app.paused is False, "the resume")
        assert daemon.call("ping")["paused"] is False


async def test_a_ping_answered_before_a_pause_does_not_undo_it(daemon: DaemonProc) -> None:
    """Answers come back from worker threads in any order: a ping asked before
    the pause and answered after it ("not paused") is out of date."""
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.connection == "live" and app.paused is False, "ping")
        asked = app.pause_news
        await pilot.press("P")
        await until(pilot, lambda: bool(app.paused), "the pause")
        app.pinged(False, asked)
        assert app.paused is True and "paused" in top(app)
        app.pinged(True, app.pause_news)  # a ping asked after it still counts
        assert app.paused is True
        await pilot.press("P")
        await until(pilot, lambda: app.paused is False, "the resume")


async def test_a_list_answered_before_an_event_does_not_undo_it(daemon: DaemonProc) -> None:
    """Pages and rows are read in workers and come back in any order: a list asked
    before an item's transition and answered after it is out of date for that item,
    which keeps what the event said and is read again."""
    ids = seed(daemon)
    item_id = ids["Sourdough starter"]
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(inbox(app).items) == 4 and app.connection == "live", "it")
        screen = inbox(app)
        asked = screen.news
        before = daemon.call("list", {"limit": app.page_size})
        daemon.call("archive", {"id": item_id})
        await until(pilot, lambda: screen.shown[item_id][0] == "archived", "the archive's event")
        screen.show_page(screen.generation, before, {}, asked)
        assert screen.items[item_id]["status"] == "ARCHIVED"
        assert screen.shown[item_id][0] == "archived"
        assert item_id in screen.stale  # read again at the next flush
        got = daemon.call("get", {"id": item_id})
        screen.refreshed([{**got, "item": {**got["item"], "status": "READY"}}], asked)
        assert screen.items[item_id]["status"] == "ARCHIVED"  # a row read too early, too
        await until(pilot, lambda: not screen.stale, "the row read again")
        assert screen.shown[item_id][0] == "archived"
        screen.show_page(screen.generation, before, {}, screen.news)  # asked after: it counts
        assert screen.items[item_id]["status"] == "READY"


async def test_a_card_read_before_an_event_does_not_undo_it(daemon: DaemonProc) -> None:
    """Of two reads of a card on their way, only the newer one's answer is shown."""
    item_id = seed(daemon)["Spaced repetition"]
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: item_id in inbox(app).items and app.connection == "live", "it")
        card = await open_card(app, pilot, item_id)
        before, read = daemon.call("get", {"id": item_id}), card.reads
        daemon.call("archive", {"id": item_id})

        def status() -> str | None:
            return card.got["item"]["status"] if card.got is not None else None

        await until(pilot, lambda: status() == "ARCHIVED", "the new state")
        card.fetched(before, read)
        assert status() == "ARCHIVED"


async def test_todos_tick_from_the_card(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    item_id = ids["Spaced repetition"]
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: item_id in inbox(app).items, "the item")
        card = await open_card(app, pilot, item_id)

        def ticks() -> list[bool]:
            payload = daemon.call("get", {"id": item_id})["artifacts"]["card"]["payload"]
            return [t["done"] for t in payload["todos"]]

        count = len(ticks())
        assert "1" in shown_keys(app)
        await pilot.press("2")
        await until(pilot, lambda: ticks()[1], "todo 2 ticked")
        await until(
            pilot, lambda: "2. [x]" in str(card.query_one("#card", Static).render()), "it shown"
        )
        assert ticks() == [n == 1 for n in range(count)]
        await pilot.press("2")
        await until(pilot, lambda: not any(ticks()), "todo 2 open again")
        await pilot.press(str(count + 1))  # no such todo: no key, nothing asked
        await pilot.pause()
        assert not any(ticks()) and not said(app, "readdod said no")


async def test_active_items_show_progress_and_can_be_cancelled(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    slow = start_daemon(
        tmp_path, daemons, daemon={"skip_below": 0}, ai={"engine": "fixed", "fixed_delay_ms": 400}
    )
    app = ReaddodTui(slow.sock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.connection == "live" and inbox(app).loaded, "the watch")
        item_id = slow.call("capture", {"text": "Slow work ahead. " * 60, "intent": "wait"})[
            "item"
        ]["id"]
        screen = inbox(app)
        await until(pilot, lambda: item_id in screen.items, "the capture")
        await until(pilot, lambda: screen.shown[item_id][0] == "active", "it to be active")
        await until(pilot, lambda: "1/5" in screen.shown[item_id][1], "a step done")
        assert screen.shown[item_id][1].startswith(("▰", "▱"))
        select(app, item_id)
        await pilot.pause()
        assert "C" in shown_keys(app) and not {"a", "r", "s", "e"} & shown_keys(app)
        await pilot.press("C")
        slow.wait_status("ARCHIVED", 1)
        await until(pilot, lambda: screen.shown[item_id][0] == "archived", "the row to say so")
        assert screen.shown[item_id][1] == ""
        await until(pilot, lambda: "u" in shown_keys(app), "unarchive on offer")


async def test_the_list_is_read_a_page_at_a_time(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    newest_first = [ids["blocked"], ids["SQLite WAL mode"], ids["Sourdough starter"]]
    app = ReaddodTui(daemon.sock, page_size=3)
    async with app.run_test(size=SIZE) as pilot:
        screen = inbox(app)
        await until(pilot, lambda: list(screen.items) == newest_first, "the first page")
        assert screen.query_one(ItemTable).row_count == 3 and "page 1+" in top(app)
        await pilot.press("right_square_bracket")
        await until(pilot, lambda: list(screen.items) == [ids["Spaced repetition"]], "page 2")
        assert screen.query_one(ItemTable).row_count == 1 and "page 2 " in top(app)
        await pilot.press("right_square_bracket")  # no page after the last: nothing asked
        await pilot.pause()
        assert screen.generation == screen.shown_generation and len(screen.cursors) == 2
        await pilot.press("left_square_bracket")
        await until(pilot, lambda: list(screen.items) == newest_first, "page 1 again")


async def test_an_editor_needs_a_terminal_and_says_so(daemon: DaemonProc) -> None:
    ids = seed(daemon)
    app = ReaddodTui(daemon.sock)
    async with app.run_test(size=SIZE) as pilot:  # headless: nothing to hand an editor
        await until(pilot, lambda: ids["Spaced repetition"] in inbox(app).items, "the item")
        select(app, ids["Spaced repetition"])
        await pilot.press("E")
        await until(pilot, lambda: said(app, "cannot hand itself to an editor"), "the reason")
        card = daemon.call("get", {"id": ids["Spaced repetition"]})["artifacts"]["card"]
        assert card["created_by"] == "system" and card["version"] == 1
