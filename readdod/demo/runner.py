"""`readdod demo`: a private daemon on a temporary directory, fed the bundled pages.

The caller hands in how a card reads for people (the CLI's renderer), so the
demo needs nothing from the CLI and the CLI can run the demo.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from readdod.control.client import Client
from readdod.demo import sample_pages
from readdod.errors import DaemonUnavailable

#: A card for people from `get`'s answer: the item and its artifacts in, text out.
CardRenderer = Callable[[dict[str, Any], dict[str, Any]], str]

TERMINAL = {"READY", "SHIPPED", "ARCHIVED", "FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT"}


def _say(msg: str) -> None:
    print(msg, flush=True)  # noqa: T201 - the demo talks to a person


def _connect(sock: Path, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> Client:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the demo daemon exited early with code {proc.returncode}")
        try:
            client = Client(sock)
            client.call("ping")
            return client
        except DaemonUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def run_demo(*, render_card: CardRenderer, json_out: bool = False, keep: bool = False) -> int:
    """Capture every sample page, wait for the cards, print them; 0 when all are READY."""
    tmp = Path(tempfile.mkdtemp(prefix="readdod-demo-"))
    sock = tmp / "readdod.sock"
    cfg = tmp / "config.toml"
    cfg.write_text(
        "[daemon]\n"
        f'data_dir = "{tmp / "data"}"\n'
        "[control]\n"
        f'socket = "{sock}"\n'
        "[export]\n"
        f'dir = "{tmp / "exports"}"\n'
        "[log]\n"
        f'file = "{tmp / "daemon.log"}"\n',
        encoding="utf-8",
    )
    _say(f"readdod demo: starting a private daemon in {tmp}")
    proc = subprocess.Popen(
        # -P: the readdod that runs is the installed one, never a folder of that name
        # in the directory the demo was started from.
        [sys.executable, "-P", "-m", "readdod", "serve", "--config", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    results: list[dict[str, Any]] = []
    ok = False
    try:
        with _connect(sock, proc) as client:
            pages = sample_pages()
            ids = []
            for page in pages:
                res = client.call(
                    "capture",
                    {"url": page.url, "html": page.html, "intent": page.intent, "tags": page.tags},
                )
                ids.append(res["item"]["id"])
                _say(f"  captured {res['item']['id']}  {page.url}\n    intent: {page.intent}")
            pending = set(ids)
            last = ""
            deadline = time.monotonic() + 120
            while pending and time.monotonic() < deadline:
                for item_id in list(pending):
                    if client.call("get", {"id": item_id})["item"]["status"] in TERMINAL:
                        pending.discard(item_id)
                line = f"  progress: {len(ids) - len(pending)}/{len(ids)} done"
                if line != last:
                    _say(line)
                    last = line
                if pending:
                    time.sleep(0.05)
            for item_id in ids:
                results.append(client.call("get", {"id": item_id}))
        ok = all(r["item"]["status"] == "READY" for r in results)
        if json_out:
            _say(json.dumps(results, indent=2, ensure_ascii=False))
        else:
            for r in results:
                _say("")
                _say(render_card(r["item"], r["artifacts"]))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        _say(f"\nreaddod demo: daemon stopped (exit code {code})")
        if code != 0 and proc.stderr is not None:
            _say(proc.stderr.read().decode(errors="replace")[-2000:])
        if proc.stderr is not None:
            proc.stderr.close()
        if keep:
            _say(f"readdod demo: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    ready = sum(r["item"]["status"] == "READY" for r in results)
    _say(f"readdod demo: {ready}/{len(results)} cards READY")
    return 0 if ok and code == 0 else 1
