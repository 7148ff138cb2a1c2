"""What the browser tests share: the page that only a logged-in browser sees, a home
with the host installed, the extension's copy, the scripts run in its popup, and the
daemon those tests end at with the checks made on what it received."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.daemon_proc import DaemonProc
from tests.pageserver import PageServer, html_page, serve

EXTENSION = Path(__file__).resolve().parent.parent / "browser"
#: Only a browser with the session behind the login sees this text: the daemon must get
#: the page from the browser, never fetch it itself.
SECRET = "The members-only tide table says high water at 14:07 on the north quay."
PARAGRAPHS = [
    SECRET,
    "Harbour pilots plan each passage around the flood and the ebb, since the channel"
    " over the bar carries barely two metres at low water springs.",
    "A neap tide gives the smallest range of the month and the easiest crossing, while"
    " a spring tide floods the saltings and runs hard through the narrows.",
    "Sailors who arrive early anchor in the bay and wait for the young flood, then ride"
    " it through the gap with the engine barely ticking over.",
]
READDOD = (sys.executable, "-m", "readdod")
INTENT = "plan the crossing over the bar"
#: Not ASCII: the title goes browser → host → daemon as UTF-8 JSON, untouched.
TITLE = "Tides at the bar — Øresund, 潮汐 🌊"
#: The statuses after which the popup stops following an item (its own list, not
#: reachable from a WebDriver script: a page's ``const`` is no property of its window).
SETTLED = [
    *("READY", "SHIPPED", "ARCHIVED", "CAPTURED"),
    *("FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT"),
]


def home_env(home: Path) -> dict[str, str]:
    """The environment of a person whose home is ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("READDOD_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    return env


def readdod_browser(env: dict[str, str], *args: str) -> None:
    """``readdod browser ARGS`` as that person runs it; it must succeed."""
    done = subprocess.run(
        [*READDOD, "browser", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def extension_copy(dest: Path) -> Path:
    """``browser/`` with a host permission for the loopback test server: the toolbar
    button grants ``activeTab`` when clicked, which a test cannot do."""
    shutil.copytree(EXTENSION, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["host_permissions"] = ["http://127.0.0.1/*"]
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def submit_script(intent: str) -> str:
    """A promise, run in the popup: type ``intent``, press Save, settle with what shows."""
    return """
    new Promise((resolve) => {
      const done = () => {
        const s = document.getElementById("status").dataset.state;
        return ["error", "saved", ...SETTLED_STATES].includes(s);
      };
      const report = () => resolve({
        state: document.getElementById("status").dataset.state,
        text: document.getElementById("status").textContent,
        card: document.getElementById("card").textContent,
      });
      const start = () => {
        document.getElementById("intent").value = INTENT_TEXT;
        document.getElementById("form").requestSubmit();
        new MutationObserver(() => { if (done()) report(); })
          .observe(document.getElementById("status"), { attributes: true, childList: true });
      };
      if (document.body.dataset.ready) start();
      else new MutationObserver((_, obs) => {
        if (document.body.dataset.ready) { obs.disconnect(); start(); }
      }).observe(document.body, { attributes: true });
    })
    """.replace("INTENT_TEXT", json.dumps(intent)).replace("SETTLED_STATES", json.dumps(SETTLED))


#: A promise, run in the popup: the intents it offers, once it has shown them.
OFFERED_SCRIPT = (
    "new Promise(r => { const f = () => document.body.dataset.ready ? r("
    "[...document.querySelectorAll('#recent button')].map(b => b.textContent))"
    " : setTimeout(f, 50); f(); })"
)


@dataclass
class Rig:
    """A running daemon, a loopback site with the page to save and a page to link to,
    and a home with readdod's native host installed for one browser."""

    daemon: DaemonProc
    site: PageServer
    home: Path
    env: dict[str, str]
    page_url: str
    linked_url: str
    extension: Path


@contextlib.contextmanager
def rig(tmp_path: Path, browser: str) -> Iterator[Rig]:
    """Everything a browser test needs but the browser, stopped afterwards."""
    with serve() as site:
        (tmp_path / "daemon").mkdir()
        d = DaemonProc(tmp_path / "daemon", ai={"engine": "fixed"}, fetch={"allow_private": True})
        try:
            d.start()
            home = tmp_path / "home"
            env = home_env(home)
            readdod_browser(env, "install", "--browser", browser, "--socket", str(d.sock))
            yield Rig(
                daemon=d,
                site=site,
                home=home,
                env=env,
                page_url=site.page("/tides", html_page(PARAGRAPHS, title=TITLE)),
                linked_url=site.page(
                    "/charts", html_page(PARAGRAPHS[1:], title="Charts of the bar")
                ),
                extension=extension_copy(tmp_path / "ext"),
            )
        finally:
            d.close()


def check_saved(r: Rig, shown: dict[str, Any]) -> None:
    """The popup's save reached the daemon as the page the browser had, and its card shows."""
    assert shown["state"] == "READY", shown
    assert "READY" in shown["text"]
    assert shown["card"], "the card is shown once READY"
    (item,) = r.daemon.call("list")["items"]
    assert (item["url"], item["title"], item["intent"]) == (r.page_url, TITLE, INTENT)
    got = r.daemon.call("get", {"id": item["id"]})
    extraction = got["artifacts"]["extraction"]["payload"]
    assert extraction["source"] == "provided_html"
    assert SECRET in extraction["text"]
    assert r.site.hits("/tides") == 1  # the browser's own load; the daemon fetched nothing
    assert got["artifacts"]["card"]["payload"]["title"] in shown["card"]


def check_linked(r: Rig, res: dict[str, Any]) -> None:
    """The link menu's capture (``res``, its handler's answer): the daemon fetched the
    linked page itself and the item became READY with the intent given."""
    assert "thrown" not in res, res
    linked_id = res["item"]["id"]
    r.daemon.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == linked_id
            and e.get("to") == "READY"
        ),
        timeout=120,
    )
    assert r.site.hits("/charts") == 1
    linked = r.daemon.call("get", {"id": linked_id})
    assert linked["item"]["intent"] == "read the charts"
    assert linked["artifacts"]["extraction"]["payload"]["source"] == "fetched"


def capture_link_script(r: Rig) -> str:
    """A call, in the background, to the link menu's handler for the linked page."""
    return f"readdod.captureLink({json.dumps(r.linked_url)}, 'read the charts', -1)"
