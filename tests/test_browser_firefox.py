"""The extension in a real headless Firefox (ESR), through the installed native host, to
the real daemon.

Firefox is driven through Marionette: the extension is installed as a
temporary add-on (as ``about:debugging`` does) from a copy of ``browser/``
with a host permission for the loopback server (see ``tests/extension_rig``),
its pages get a fixed internal UUID by preference, and the popup's page is
opened in a tab (``popup.html?tab=ID``), typed into and submitted; the link
menu's handler is called in the background page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.capture.browser_install import GECKO_ID, HOST_NAME
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
from tests.marionette import Firefox
from tests.pageserver import PageServer, html_page, serve

#: The extension's internal UUID in the test profile (moz-extension://UUID/).
UUID = "0f5a1b2c-3d4e-4f60-8a7b-9c0d1e2f3a4b"

pytestmark = pytest.mark.slow


@pytest.fixture
def site() -> Iterator[PageServer]:
    with serve() as srv:
        yield srv


def _open(ff: Firefox, url: str) -> None:
    """The extension's page ``url`` in a new tab, which becomes the current one."""
    handle = ff.send("WebDriver:NewWindow", {"type": "tab"})["handle"]
    ff.send("WebDriver:SwitchToWindow", {"handle": handle})
    ff.load_privileged(url)


def _run(ff: Firefox, promise: str) -> Any:
    return ff.execute(f"({promise}).then(resolve, (e) => resolve({{thrown: String(e)}}))")


def test_a_page_saved_from_the_popup_in_firefox_reaches_the_daemon(
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
    readdod_browser(env, "install", "--browser", "firefox", "--socket", str(d.sock))
    assert (home / ".mozilla" / "native-messaging-hosts" / f"{HOST_NAME}.json").is_file()

    uuids = json.dumps({GECKO_ID: UUID})
    ff = Firefox(
        profile=tmp_path / "profile", env=env, prefs={"extensions.webextensions.uuids": uuids}
    )
    try:
        version = ff.send("WebDriver:NewSession", {"capabilities": {}})["capabilities"]
        ff.send("WebDriver:SetTimeouts", {"script": 120_000})
        installed = ff.send("Addon:Install", {"path": str(extension_copy(tmp_path / "ext"))}
                            | {"temporary": True})  # fmt: skip
        assert installed["value"] == GECKO_ID

        ff.send("WebDriver:Navigate", {"url": page_url})
        popup = f"moz-extension://{UUID}/popup.html"
        _open(ff, popup)
        # Firefox's URL patterns take no port: the tab is picked out by its URL here.
        tab_ids = _run(
            ff,
            f"chrome.tabs.query({{}}).then(ts => ts.filter(t => t.url === {json.dumps(page_url)})"
            ".map(t => t.id))",
        )
        assert isinstance(tab_ids, list) and len(tab_ids) == 1, tab_ids
        ff.load_privileged(f"{popup}?tab={tab_ids[0]}")
        shown = _run(ff, submit_script(INTENT))
        assert shown["state"] == "READY", shown
        assert shown["card"]

        (item,) = d.call("list")["items"]
        assert (item["url"], item["title"], item["intent"]) == (
            page_url,
            TITLE,
            INTENT,
        )
        got = d.call("get", {"id": item["id"]})
        extraction = got["artifacts"]["extraction"]["payload"]
        assert extraction["source"] == "provided_html"
        assert SECRET in extraction["text"]
        assert site.hits("/tides") == 1

        _open(ff, f"{popup}?tab={tab_ids[0]}")
        assert _run(ff, OFFERED_SCRIPT) == [INTENT]

        # The link menu's handler, in the background page.
        res = _run(
            ff,
            "chrome.runtime.getBackgroundPage().then(bg => bg.readdod.captureLink("
            f"{json.dumps(linked_url)}, 'read the charts', -1))",
        )
        assert "thrown" not in res, res
        d.wait_log(
            lambda e: (
                e["event"] == "item.transition"
                and e.get("item_id") == res["item"]["id"]
                and e.get("to") == "READY"
            ),
            timeout=120,
        )
        assert site.hits("/charts") == 1

        assert d.stop() == 0
        _open(ff, f"{popup}?tab={tab_ids[0]}")
        down = _run(ff, submit_script("anything"))
        assert down["state"] == "error"
        assert "DAEMON_UNAVAILABLE" in down["text"]
        record_property("figures", f"extension verified in Firefox {version['browserVersion']}")
    finally:
        ff.close()
