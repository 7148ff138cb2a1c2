"""Items/s through the whole pipeline of a real daemon (subprocess, socket, SQLite FULL).

    python -m bench.pipeline [--items 1000] [--engine local|fixed] [--concurrency 8]

Two phases. Capture: N text items over one connection with the daemon paused
(captures/s, each acknowledged only once durable). Process: resume, then wait
on the daemon's log lines until every item is READY (items/s through
extraction → summary → score → todos → card → gate, every artifact durable).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench._common import article, report
from tests.daemon_proc import DaemonProc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--engine", default="local", choices=["local", "fixed"])
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProc(
            Path(tmp),
            daemon={"concurrency": args.concurrency},
            ai={"engine": args.engine},
            log={"level": "info"},
        )
        d.start()
        try:
            texts = [article(i) for i in range(args.items)]
            with d.client() as c:
                c.call("pause")
                start = time.perf_counter()
                for i, text in enumerate(texts):
                    c.call("capture", {"text": text, "intent": f"learn about item {i % 7}"})
                captured = time.perf_counter()
                c.call("resume")
            d.wait_status("READY", count=args.items, timeout=3600)
            done = time.perf_counter()
            assert d.stop() == 0
        finally:
            d.close()
        with d.db() as db:
            statuses = dict(db.execute("SELECT status, count(*) FROM items GROUP BY status"))
    report(
        f"pipeline-{args.engine}",
        {
            "items": args.items,
            "engine": args.engine,
            "concurrency": args.concurrency,
            "capture_s": round(captured - start, 3),
            "captures_per_s": round(args.items / (captured - start), 1),
            "process_s": round(done - captured, 3),
            "items_per_s": round(args.items / (done - captured), 1),
            "statuses": statuses,
        },
    )


if __name__ == "__main__":
    main()
