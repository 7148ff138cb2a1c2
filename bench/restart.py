"""Time from restart to all orphans requeued, after kill -9 with N items PROCESSING.

    python -m bench.restart [--items 1000]

Puts N items in flight on a slow engine, kills the daemon with SIGKILL,
starts it again and reads its log: the recovery duration it reports, and the
wall time from process start to `daemon.ready`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench._common import report
from tests.daemon_proc import DaemonProc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    args = ap.parse_args()
    n = args.items
    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProc(
            Path(tmp),
            daemon={"concurrency": n, "batch_size": 1000, "shutdown_grace_s": 0},
            ai={"engine": "fixed", "fixed_delay_ms": 600_000},
        )
        d.start()
        try:
            with d.client() as c:
                for i in range(n):
                    c.call("capture", {"text": f"Item {i}.", "intent": "x"})
            d.wait_status("PROCESSING", count=n, timeout=600)
            d.kill9()
            t0 = time.perf_counter()
            d.start()
            ready_s = time.perf_counter() - t0
            rec = d.wait_log(lambda e: e["event"] == "recovery.done")[0]
            assert rec["requeued"] == n, rec
            d.stop()
        finally:
            d.close()
    report(
        "restart",
        {
            "orphans": n,
            "recovery_ms": rec["duration_ms"],
            "start_to_ready_s": round(ready_s, 3),
        },
    )


if __name__ == "__main__":
    main()
