"""Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe).

The browser reads commands on its fd 3 and writes answers and events on fd 4,
each a JSON object ended by a NUL byte: no port, no websocket library.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The flags a test browser runs with: headless, nothing phoned home, a profile of its own.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Unpacked extensions from the command line (gone by default from some builds).
    "--disable-features=DisableLoadExtensionCommandLineSwitch",
)

Message = dict[str, Any]


class CdpError(Exception):
    pass


def chromium_binary() -> str:
    found = shutil.which("chromium")
    assert found, "chromium is not installed: run .ci/setup-chromium (apt-get install chromium)"
    return found


class Chromium:
    def __init__(self, *, profile: Path, extension: Path, env: dict[str, str]) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:
            # Out of the way first, so neither lands on the other's number.
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        argv = [chromium_binary(), *FLAGS, f"--user-data-dir={profile}"]
        argv += [f"--load-extension={extension}", f"--disable-extensions-except={extension}"]
        argv += ["--remote-debugging-pipe", "about:blank"]
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile.parent / "chromium.log"
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=(3, 4),
            preexec_fn=fds,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._answers: dict[int, Message] = {}
        self.events: list[Message] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._from_chrome, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buf += chunk
                *whole, buf = buf.split(b"\0")
                with self._cond:
                    for raw in whole:
                        msg = json.loads(raw)
                        if "id" in msg:
                            self._answers[msg["id"]] = msg
                        else:
                            self.events.append(msg)
                    self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _wait(self, found: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = found()
                if got is not None:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    tail = self.log.read_text(errors="replace")[-3000:]
                    raise CdpError(f"no {what} (closed={self._closed}); browser log: {tail}")
                self._cond.wait(min(left, 1.0))

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = 60,
    ) -> Any:
        msg_id = next(self._ids)
        msg: Message = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        answer = self._wait(lambda: self._answers.pop(msg_id, None), timeout, method)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait_event(self, match: Callable[[Message], bool], timeout: float = 60) -> Message:
        found: Message = self._wait(
            lambda: next((e for e in self.events if match(e)), None), timeout, "matching event"
        )
        return found

    def evaluate(self, session: str, expression: str, *, timeout: float = 60) -> Any:
        """The value of ``expression`` (awaited if a promise) in the target of ``session``."""
        got = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=session,
            timeout=timeout,
        )
        if "exceptionDetails" in got:
            raise CdpError(f"{expression[:80]}...: {got['exceptionDetails']}")
        return got["result"].get("value")

    def wait_true(self, session: str, expression: str, *, timeout: float = 60) -> None:
        """Evaluate ``expression`` until it is true: for a worker attached as it starts,
        whose first context may be gone before a promise made there could settle."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(session, expression):
            if time.monotonic() > deadline:
                raise CdpError(f"{expression} never became true")
            with self._cond:
                self._cond.wait(0.05)  # woken early by anything the browser says

    def attach(self, target_id: str) -> str:
        got = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        return str(got["sessionId"])

    def open_tab(self, url: str) -> str:
        """A new tab at ``url``, loaded; its session."""
        target = self.send("Target.createTarget", {"url": url})["targetId"]
        session = self.attach(target)
        # The tab shows about:blank until the page commits: wait for the page itself.
        here = f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
        self.wait_true(session, here)
        return session

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.write(self._to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode())
                os.write(self._to_chrome, b"\0")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=20)
        os.close(self._to_chrome)
        self._reader.join(timeout=20)
        self._log_file.close()
