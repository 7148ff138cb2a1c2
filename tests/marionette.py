"""Firefox driven through Marionette, its own remote protocol: ``LENGTH:JSON`` messages
on a loopback TCP port that Firefox picks and names in its output."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

#: Preferences of a quiet test profile: no first-run pages, nothing phoned home.
PREFS: dict[str, Any] = {
    "marionette.port": 0,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "extensions.update.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}


#: What Marionette prints once it listens (``marionette.port`` 0: a port of its choosing).
LISTENING = re.compile(rb"Marionette\s+INFO\s+Listening on port (\d+)")


class MarionetteError(Exception):
    pass


def firefox_binary() -> str:
    found = shutil.which("firefox-esr") or shutil.which("firefox")
    assert found, "Firefox is not installed: run .ci/setup-firefox (apt-get install firefox-esr)"
    return found


#: Chrome-context script behind ``Firefox.load_privileged``: ``arguments`` are the URL
#: and the tab's WebDriver handle (its browser's ``browserId``).
LOAD_PRIVILEGED = """
const [url, handle] = [arguments[0], arguments[1]];
const win = Services.wm.getMostRecentWindow("navigator:browser");
const tab = win.gBrowser.tabs.find((t) => String(t.linkedBrowser.browserId) === handle)
  || win.gBrowser.selectedTab;
const browser = tab.linkedBrowser;
const WPL = Ci.nsIWebProgressListener;
const listener = {
  QueryInterface: ChromeUtils.generateQI(["nsIWebProgressListener", "nsISupportsWeakReference"]),
  onStateChange(progress, request, flags, status) {
    const done = WPL.STATE_STOP | WPL.STATE_IS_WINDOW;
    if (progress.isTopLevel && (flags & done) === done && browser.currentURI.spec === url) {
      win.gBrowser.removeTabsProgressListener(tabs);
      resolve(browser.currentURI.spec);
    }
  },
};
const tabs = {
  onStateChange(b, progress, request, flags, status) {
    if (b === browser) listener.onStateChange(progress, request, flags, status);
  },
};
win.gBrowser.addTabsProgressListener(tabs);
browser.fixupAndLoadURIString(url, {
  triggeringPrincipal: Services.scriptSecurityManager.getSystemPrincipal(),
});
"""


class Firefox:
    def __init__(self, *, profile: Path, env: dict[str, str], prefs: dict[str, Any]) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        every = PREFS | prefs
        lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in every.items()]
        (profile / "user.js").write_text("\n".join(lines) + "\n")
        self.log = profile.parent / "firefox.log"
        # -remote-allow-system-access lets the chrome context open the extension's own
        # pages (``load_privileged``); a Firefox that predates it ignores the flag.
        argv = [firefox_binary(), "--headless", "--marionette", "--no-remote"]
        argv.append("-remote-allow-system-access")
        self.proc = subprocess.Popen(
            [*argv, "--profile", str(profile), "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self._port: int | None = None
        self._cond = threading.Condition()
        self._output = threading.Thread(target=self._read_output, daemon=True)
        self._output.start()
        self._ids = itertools.count(1)
        self._sock = socket.create_connection(("127.0.0.1", self._wait_port()), timeout=120)
        self._buf = b""
        self._read_message()  # the server's greeting

    def _read_output(self) -> None:
        """Keep Firefox's output in the log; note the port Marionette says it listens on."""
        assert self.proc.stdout is not None
        with self.proc.stdout, self.log.open("wb") as log:
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                found = LISTENING.search(line)
                if found:
                    with self._cond:
                        self._port = int(found.group(1))
                        self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _wait_port(self, timeout: float = 60) -> int:
        with self._cond:
            self._cond.wait_for(
                lambda: self._port is not None or not self._output.is_alive(), timeout
            )
            if self._port is None:
                raise MarionetteError(f"Firefox never listened; log: {self.tail()}")
            return self._port

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def _read_message(self) -> Any:
        while True:
            head, sep, rest = self._buf.partition(b":")
            if sep:
                length = int(head)
                if len(rest) >= length:
                    self._buf = rest[length:]
                    return json.loads(rest[:length])
            chunk = self._sock.recv(65536)
            if not chunk:
                raise MarionetteError(f"Firefox closed the connection; log: {self.tail()}")
            self._buf += chunk

    def send(self, command: str, params: dict[str, Any] | None = None) -> Any:
        msg_id = next(self._ids)
        body = json.dumps([0, msg_id, command, params or {}]).encode()
        self._sock.sendall(str(len(body)).encode() + b":" + body)
        while True:
            kind, got_id, error, result = self._read_message()
            if kind == 1 and got_id == msg_id:
                break
        if error:
            raise MarionetteError(f"{command}: {error}")
        return result

    def execute(self, script: str, *args: Any) -> Any:
        """Run ``script`` in the current page; it ends by calling ``resolve(value)``."""
        wrapped = f"const resolve = arguments[arguments.length - 1];\n{script}"
        return self.send("WebDriver:ExecuteAsyncScript", {"script": wrapped, "args": list(args)})[
            "value"
        ]

    def load_privileged(self, url: str) -> str:
        """Load ``url`` in the current tab as the browser itself would, and wait for it.

        Firefox (ESR 153 on) refuses ``WebDriver:Navigate`` to an extension's own pages
        (``moz-extension://``), as it refuses a page's script; the browser's own window
        may still open them, as its toolbar button opens the popup. So the load is made
        from the chrome context with the system principal, and the answer waits for the
        tab's top-level document to stop loading.
        """
        handle = self.send("WebDriver:GetWindowHandle")["value"]
        self.send("Marionette:SetContext", {"value": "chrome"})
        try:
            loaded: str = self.execute(LOAD_PRIVILEGED, url, handle)
        finally:
            self.send("Marionette:SetContext", {"value": "content"})
        return loaded

    def close(self) -> None:
        try:
            self.send("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (MarionetteError, OSError):
            pass
        self._sock.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._output.join(timeout=30)
