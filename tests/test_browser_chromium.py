"""The extension in a real headless Chromium, through the installed native host, to the
real daemon.

What a person does by hand, the test does through the DevTools protocol: the
toolbar popup is opened as a tab (``popup.html?tab=ID``, the same page and
code the toolbar button shows), the intent typed and the form submitted; the
context-menu click, which headless Chromium cannot make, is the background
worker's own handler called directly. The extension runs from a copy of
``browser/`` whose manifest adds a host permission for the loopback test
server: opening the popup from the toolbar grants ``activeTab``, which a test
cannot click (see ``tests/extension_rig``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from readdod.capture.browser_install import EXTENSION_ID, HOST_NAME
from tests.cdp import Chromium
from tests.extension_rig import (
    INTENT,
    OFFERED_SCRIPT,
    capture_link_script,
    check_linked,
    check_saved,
    readdod_browser,
    rig,
    submit_script,
)

pytestmark = pytest.mark.slow


def _submit(browser: Chromium, session: str, intent: str) -> dict[str, Any]:
    """Type ``intent`` in the popup, press Save, and wait until the item settles."""
    result: dict[str, Any] = browser.evaluate(session, submit_script(intent), timeout=120)
    return result


def test_a_page_saved_from_the_popup_reaches_the_daemon_and_its_card_shows(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with rig(tmp_path, "chromium") as r:
        profile = r.home / ".config" / "chromium"  # Chromium's per-user folder is its profile's
        assert (profile / "NativeMessagingHosts" / f"{HOST_NAME}.json").is_file()
        browser = Chromium(profile=profile, extension=r.extension, env=r.env)
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

            browser.open_tab(r.page_url)
            tab_ids = browser.evaluate(
                worker,
                f"chrome.tabs.query({{url: {json.dumps(r.page_url)}}})"
                ".then(ts => ts.map(t => t.id))",
            )
            assert len(tab_ids) == 1
            popup_url = f"chrome-extension://{EXTENSION_ID}/popup.html?tab={tab_ids[0]}"
            check_saved(r, _submit(browser, browser.open_tab(popup_url), INTENT))

            # The intent is remembered and offered the next time.
            stored = browser.evaluate(worker, "chrome.storage.local.get('recentIntents')")
            assert stored == {"recentIntents": [INTENT]}
            assert browser.evaluate(browser.open_tab(popup_url), OFFERED_SCRIPT) == [INTENT]

            # A link through the context menu's handler: the daemon fetches that page itself.
            check_linked(r, browser.evaluate(worker, f"self.{capture_link_script(r)}"))
            recent = browser.evaluate(worker, "recentIntents()")
            assert recent == ["read the charts", INTENT]

            # The daemon stops: the popup says so, with the host's error code.
            assert r.daemon.stop() == 0
            down = _submit(browser, browser.open_tab(popup_url), "anything")
            assert down["state"] == "error"
            assert "DAEMON_UNAVAILABLE" in down["text"]

            # Without the host installed, the popup says how to install it.
            readdod_browser(r.env, "uninstall", "--browser", "chromium")
            missing = _submit(browser, browser.open_tab(popup_url), "anything")
            assert missing["state"] == "error"
            assert "HOST_UNAVAILABLE" in missing["text"]
            assert "readdod browser install --browser chromium" in missing["text"]
            record_property("figures", f"extension verified in {version}")
        finally:
            browser.close()
