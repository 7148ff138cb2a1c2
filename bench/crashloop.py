"""The long crash loop: kill the daemon hundreds of times under a mixed workload.

    python -m bench.crashloop [--cycles 300] [--seed S] [--delay-ms 20]
                              [--engine fixed|local] [--concurrency 4] [--auto-export]
                              [--keep]

Each cycle starts the daemon, sends a few random requests (captures of text,
HTML and blocked URLs, process, regenerate, export, archive, unarchive,
ship, edit, retry-failed, pause/resume) and ends it: SIGKILL after a random
number of answers or log lines or while it starts, a crash point
(``READDOD_CRASH_AT``) inside a step, a transaction or an export write, or
SIGTERM, now and then cut short by SIGKILL half-way through the shutdown.
After every death, and once more after a last clean run, it checks the
invariants of tests/invariants.py. Prints crashes survived, items and
violations (which must be 0); exits 1 on the first violation, with the seed
to replay it.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench._common import report
from tests.test_crash_loop import CrashLoop, LoopFailure


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    ap.add_argument("--delay-ms", type=int, default=20, help="each AI step's delay (fixed engine)")
    ap.add_argument("--engine", choices=("fixed", "local"), default="fixed")
    ap.add_argument("--concurrency", type=int, default=4, help="daemon.concurrency")
    ap.add_argument("--auto-export", action="store_true", help="daemon.auto_export = true")
    ap.add_argument("--keep", action="store_true", help="keep the data folder and print it")
    ap.add_argument("--small", action="store_true", help="5 cycles: that it runs (CI)")
    args = ap.parse_args()
    if args.small:
        args.cycles = 5
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**9)
    print(f"crash loop: seed {seed}, {args.cycles} cycles", flush=True)
    tmp = tempfile.mkdtemp(prefix="readdod-crashloop-")
    started = time.perf_counter()
    try:
        loop = CrashLoop(
            Path(tmp),
            seed,
            engine=args.engine,
            engine_delay_ms=args.delay_ms,
            concurrency=args.concurrency,
            auto_export=args.auto_export,
        )
        got = loop.run(args.cycles)
    except LoopFailure as exc:
        print(f"FAILED (data kept in {tmp}):\n{exc}", file=sys.stderr)
        sys.exit(1)
    got["wall_s"] = round(time.perf_counter() - started, 1)
    print(
        f"crashes survived: {got['crashes']}  items: {got['items']}"
        f"  invariant violations: {got['violations']}  ({got['wall_s']} s)"
    )
    report(
        "crashloop_small" if args.small else "crashloop",
        got,
        sane={
            "crashes survived": got["crashes"] > 0,
            "items captured": got["items"] > 0,
            "no invariant violated": not got["violations"],
        },
    )
    if args.keep:
        print(f"data kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
