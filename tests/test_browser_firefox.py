"""The extension in a real headless Firefox (ESR), through the installed native host, to
the real daemon.

Firefox is driven through Marionette: the extension is installed as a
temporary add-on (as ``about:debugging`` does) from a copy of ``browser/``
with a host permission for the loopback server (see ``tests/extension_rig``),
its pages get a fixed internal UUID by preference, and the popup's page is
opened in a tab (``popup.html?tab=ID``) from the browser's chrome context, as its
toolbar button opens it (Firefox refuses a WebDriver navigation to an extension's
page), typed into and submitted; the link menu's handler is called in the
background page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from readdod.capture.browser_install import GECKO_ID, HOST_NAME
from tests.extension_rig import (
    INTENT,
    OFFERED_SCRIPT,
    capture_link_script,
    check_linked,
    check_saved,
    rig,
    submit_script,
)
from tests.marionette import Firefox

#: The extension's internal UUID in the test profile (moz-extension://UUID/).
UUID = "0f5a1b2c-3d4e-4f60-8a7b-9c0d1e2f3a4b"

pytestmark = pytest.mark.slow


def _open(ff: Firefox, url: str) -> None:
    """The extension's page ``url`` in a new tab, which becomes the current one."""
    handle = ff.send("WebDriver:NewWindow", {"type": "tab"})["handle"]
    ff.send("WebDriver:SwitchToWindow", {"handle": handle})
    ff.load_privileged(url)


def _run(ff: Firefox, promise: str) -> Any:
    return ff.execute(f"({promise}).then(resolve, (e) => resolve({{thrown: String(e)}}))")


def test_a_page_saved_from_the_popup_in_firefox_reaches_the_daemon(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    with rig(tmp_path, "firefox") as r:
        hosts = r.home / ".mozilla" / "native-messaging-hosts"
        assert (hosts / f"{HOST_NAME}.json").is_file()
        uuids = json.dumps({GECKO_ID: UUID})
        ff = Firefox(
            profile=tmp_path / "profile", env=r.env, prefs={"extensions.webextensions.uuids": uuids}
        )
        try:
            version = ff.send("WebDriver:NewSession", {"capabilities": {}})["capabilities"]
            ff.send("WebDriver:SetTimeouts", {"script": 120_000})
            installed = ff.send("Addon:Install", {"path": str(r.extension), "temporary": True})
            assert installed["value"] == GECKO_ID

            ff.send("WebDriver:Navigate", {"url": r.page_url})
            popup = f"moz-extension://{UUID}/popup.html"
            _open(ff, popup)
            # Firefox's URL patterns take no port: the tab is picked out by its URL here.
            tab_ids = _run(
                ff,
                "chrome.tabs.query({}).then(ts => ts.filter(t => t.url === "
                f"{json.dumps(r.page_url)}).map(t => t.id))",
            )
            assert isinstance(tab_ids, list) and len(tab_ids) == 1, tab_ids
            popup_url = f"{popup}?tab={tab_ids[0]}"
            ff.load_privileged(popup_url)
            check_saved(r, _run(ff, submit_script(INTENT)))

            _open(ff, popup_url)
            assert _run(ff, OFFERED_SCRIPT) == [INTENT]

            # The link menu's handler, in the background page.
            res = _run(
                ff, f"chrome.runtime.getBackgroundPage().then(bg => bg.{capture_link_script(r)})"
            )
            check_linked(r, res)

            assert r.daemon.stop() == 0
            _open(ff, popup_url)
            down = _run(ff, submit_script("anything"))
            assert down["state"] == "error"
            assert "DAEMON_UNAVAILABLE" in down["text"]
            record_property("figures", f"extension verified in Firefox {version['browserVersion']}")
        finally:
            ff.close()
