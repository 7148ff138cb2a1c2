"""What `watch` subscribers cost: items/s through a real daemon with 0..K watchers.

    python -m bench.watch [--items 2000] [--watchers 0 1 4]

Each run: capture N text items with the daemon paused, subscribe K clients
that read every event, resume, and time until every item is READY (the
`fixed` engine, so what is measured is readdod's own overhead).
"""

from __future__ import annotations

import argparse
import json
import socket
import tempfile
import threading
import time
from pathlib import Path

from bench._common import article, report
from readdod.control.client import Client
from tests.daemon_proc import DaemonProc


def _run(items: int, watchers: int) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProc(Path(tmp), ai={"engine": "fixed"}, daemon={"skip_below": 0})
        d.start()
        subs: list[Client] = []
        seen: list[list[int]] = []
        try:
            with d.client() as c:
                c.call("pause")
                for first in range(0, items, 100):  # batches well under the 1 MiB line cap
                    batch = [
                        {"jsonrpc": "2.0", "id": i, "method": "capture",
                         "params": {"text": article(i), "intent": "learn"}}
                        for i in range(first, min(items, first + 100))
                    ]  # fmt: skip
                    c.send_raw(json.dumps(batch).encode() + b"\n")
                    answers = json.loads(c.read_raw())
                    assert all("result" in a for a in answers), answers[:1]
            for _ in range(watchers):
                w = Client(d.sock, timeout_s=None)
                w.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"watch"}\n')
                w.read_raw()
                count = [0]

                def drain(w: Client = w, count: list[int] = count) -> None:
                    try:
                        while True:
                            w.read_raw()
                            count[0] += 1
                    except Exception:
                        return

                threading.Thread(target=drain, daemon=True).start()
                subs.append(w)
                seen.append(count)
            start = time.perf_counter()
            d.call("resume")
            d.wait_status("READY", count=items, timeout=3600)
            took = time.perf_counter() - start
            for w in subs:
                w._sock.shutdown(socket.SHUT_RDWR)
                w.close()
            assert d.stop() == 0
        finally:
            d.close()
    return {
        "watchers": watchers,
        "items_per_s": round(items / took, 1),
        "events_per_watcher": min((n[0] for n in seen), default=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--watchers", type=int, nargs="+", default=[0, 1, 4])
    ap.add_argument(
        "--small", action="store_true", help="200 items, 0 and 2 watchers: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.items, args.watchers = 200, [0, 2]
    runs = [_run(args.items, k) for k in args.watchers]
    report(
        "watch_small" if args.small else "watch",
        {"items": args.items, "engine": "fixed", "runs": runs},
        sane={
            "items/s above zero": all(r["items_per_s"] > 0 for r in runs),
            "every watcher saw events": all(
                r["events_per_watcher"] > 0 for r in runs if r["watchers"]
            ),
        },
    )


if __name__ == "__main__":
    main()
