"""The model-based test of the state machine, run long.

    python -m bench.model [--examples 200] [--steps 50] [--auto-process] [--restarts]

Drives random sequences of operations and run outcomes against one real
daemon and the pure model in tests/model.py (the same machine as
tests/test_model_based.py, which runs a few fixed sequences in CI), with
fresh random sequences on every run. Prints how many sequences and steps
ran, how often each request was answered which way, which states items were
seen in, and, if the daemon and the model ever disagree, the shortest
sequence that shows it (exit code 1).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench._common import report
from tests.test_model_based import Env, environment, run


def _figures(env: Env, elapsed: float, failure: str | None) -> dict[str, object]:
    return {
        "auto_process": env.auto_process,
        "restarts": env.restarts,
        "sequences": env.sequences,
        "steps": env.steps,
        "seconds": round(elapsed, 1),
        "steps_per_s": round(env.steps / elapsed, 1) if elapsed else None,
        "answers": {f"{m} {a}": n for (m, a), n in sorted(env.answers.items())},
        "seen": dict(sorted(env.seen.items())),
        "failure": failure,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=200, help="sequences to try (default 200)")
    ap.add_argument("--steps", type=int, default=50, help="steps per sequence at most (default 50)")
    ap.add_argument(
        "--auto-process",
        action="store_true",
        help="daemon.auto_process = true: captures are queued (and may be claimed) at once",
    )
    ap.add_argument(
        "--restarts",
        action="store_true",
        help="sequences may also stop the daemon (SIGTERM) and start it again",
    )
    ap.add_argument(
        "--small", action="store_true", help="10 sequences of 20 steps: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.examples, args.steps = 10, 20
    failure = None
    with (
        tempfile.TemporaryDirectory() as tmp,
        environment(Path(tmp), auto_process=args.auto_process, restarts=args.restarts) as env,
    ):
        started = time.perf_counter()
        try:
            run(env, args.examples, args.steps, derandomize=False)
        except Exception as exc:
            failure = "".join(traceback.format_exception_only(exc)).strip()
            traceback.print_exc()
        elapsed = time.perf_counter() - started
    figures = _figures(env, elapsed, failure)
    report(
        "model_small" if args.small else "model",
        figures,
        sane={"no failure": failure is None, "steps run": env.steps > 0},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
