"""The extension in a real headless Chromium, through the installed native host, to the
real daemon.

What a person does by hand, the test does through the DevTools protocol: the
toolbar popup is opened as a tab (``popup.html?tab=ID``, the same page and
code the toolbar button shows), the intent typed and the form submitted; the
context-menu click, which headless Chromium cannot make, is the background
worker's own handler called directly. The extension runs from a copy of
``browser/`` whose manifest adds a host permission for the loopback test
server: opening the popup from the toolbar grants ``activeTab``, which a test
cannot click.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.capture.browser_install import EXTENSION_ID, HOST_NAME
from tests.cdp import Chromium
from tests.daemon_proc import DaemonProc
from tests.extension_rig import (
    INTENT,
    OFFERED_SCRIPT,
    PARAGRAPHS,
    SECRET,
    TITLE,
    extension_copy,
    home_env,
    readdod_browser,
    submit_script,
)
from tests.pageserver import PageServer, html_page, serve

pytestmark = pytest.mark.slow


@pytest.fixture
def site() -> Iterator[PageServer]:
    with serve() as srv:
        yield srv


def _submit(browser: Chromium, session: str, intent: str) -> dict[str, Any]:
    """Type ``intent`` in the popup, press Save, and wait until the item settles."""
    result: dict[str, Any] = browser.evaluate(session, submit_script(intent), timeout=120)
    return result


def test_a_page_saved_from_the_popup_reaches_the_daemon_and_its_card_shows(
    daemons: list[DaemonProc],
    tmp_path: Path,
    site: PageServer,
    record_property: Callable[[str, object], None],
) -> None:
    (tmp_path / "daemon").mkdir()
    d = DaemonProc(tmp_path / "daemon", ai={"engine": "fixed"}, fetch={"allow_private": True})
    daemons.append(d)
    d.start()
    page_url = site.page("/tides", html_page(PARAGRAPHS, title=TITLE))
    linked_url = site.page("/charts", html_page(PARAGRAPHS[1:], title="Charts of the bar"))

    home = tmp_path / "home"
    env = home_env(home)
    readdod_browser(env, "install", "--browser", "chromium", "--socket", str(d.sock))
    profile = home / ".config" / "chromium"  # Chromium's per-user folder is its profile's
    assert (profile / "NativeMessagingHosts" / f"{HOST_NAME}.json").is_file()

    browser = Chromium(profile=profile, extension=extension_copy(tmp_path / "ext"), env=env)
    try:
        version = browser.send("Browser.getVersion")["product"]
        browser.send("Target.setDiscoverTargets", {"discover": True})
        worker_url = f"chrome-extension://{EXTENSION_ID}/background.js"
        created = browser.wait_event(
            lambda e: (
                e["method"] == "Target.targetCreated"
                and e["params"]["targetInfo"]["url"] == worker_url
            )
        )
        worker = browser.attach(created["params"]["targetInfo"]["targetId"])
        # Attached as it starts: its script has run once it has set its test hooks.
        browser.wait_true(worker, "typeof self.readdod === 'object'")

        browser.open_tab(page_url)
        tab_ids = browser.evaluate(
            worker,
            f"chrome.tabs.query({{url: {json.dumps(page_url)}}}).then(ts => ts.map(t => t.id))",
        )
        assert len(tab_ids) == 1
        popup_url = f"chrome-extension://{EXTENSION_ID}/popup.html?tab={tab_ids[0]}"
        popup = browser.open_tab(popup_url)
        shown = _submit(browser, popup, INTENT)
        assert shown["state"] == "READY", (shown, version)
        assert "READY" in shown["text"]
        assert shown["card"], "the card is shown once READY"

        (item,) = d.call("list")["items"]
        assert item["url"] == page_url
        assert item["title"] == TITLE
        assert item["intent"] == INTENT
        got = d.call("get", {"id": item["id"]})
        extraction = got["artifacts"]["extraction"]["payload"]
        assert extraction["source"] == "provided_html"
        assert SECRET in extraction["text"]
        assert site.hits("/tides") == 1  # the browser's own load; the daemon fetched nothing
        assert got["artifacts"]["card"]["payload"]["title"] in shown["card"]

        # The intent is remembered and offered the next time.
        stored = browser.evaluate(worker, "chrome.storage.local.get('recentIntents')")
        assert stored == {"recentIntents": [INTENT]}
        again = browser.open_tab(popup_url)
        offered = browser.evaluate(again, OFFERED_SCRIPT)
        assert offered == [INTENT]

        # A link through the context menu's handler: the daemon fetches that page itself.
        res = browser.evaluate(
            worker,
            f"self.readdod.captureLink({json.dumps(linked_url)}, 'read the charts', -1)",
        )
        linked_id = res["item"]["id"]
        d.wait_log(
            lambda e: (
                e["event"] == "item.transition"
                and e.get("item_id") == linked_id
                and e.get("to") == "READY"
            ),
            timeout=120,
        )
        assert site.hits("/charts") == 1
        linked = d.call("get", {"id": linked_id})
        assert linked["item"]["intent"] == "read the charts"
        assert linked["artifacts"]["extraction"]["payload"]["source"] == "fetched"
        recent = browser.evaluate(worker, "recentIntents()")
        assert recent == ["read the charts", INTENT]

        # The daemon stops: the popup says so, with the host's error code.
        assert d.stop() == 0
        down = _submit(browser, browser.open_tab(popup_url), "anything")
        assert down["state"] == "error"
        assert "DAEMON_UNAVAILABLE" in down["text"]

        # Without the host installed, the popup says how to install it.
        readdod_browser(env, "uninstall", "--browser", "chromium")
        missing = _submit(browser, browser.open_tab(popup_url), "anything")
        assert missing["state"] == "error"
        assert "HOST_UNAVAILABLE" in missing["text"]
        assert "readdod browser install --browser chromium" in missing["text"]
        record_property("figures", f"extension verified in {version}")
    finally:
        browser.close()
