"""Every bench's small mode in turn: ``python -m bench --small`` (what CI runs).

A small run checks that the bench still runs and that its figures are sane
(counts above zero, ratios finite, no errors), not how fast the machine is.
Each bench runs as its own process (``python -m bench.NAME --small``), its
figures printed as they come; the runner prints each one's wall seconds and
exits 1 if any of them failed.

    python -m bench --small                 # all of them
    python -m bench --small throughput tui  # some of them
    python -m bench --list                  # the names

``model_cost`` is not among them: it needs the llama-cpp-python server and a
GGUF model, so CI runs ``python -m bench.model_cost --small`` on its own line.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

# In the order CI runs them: the quickest first, so a broken one shows early.
SMALL = (
    "pdf",
    "pdf_corpus",
    "extraction",
    "retention",
    "import",
    "feed_poll",
    "browser_host",
    "search",
    "watch",
    "todos",
    "local_engine",
    "latency",
    "throughput",
    "concurrency",
    "recovery",
    "load",
    "crashloop",
    "model",
    "tui",
    "pdf_isolation",
    "fleet",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="every bench's small mode (required)")
    ap.add_argument("--list", action="store_true", help="print the benches' names")
    ap.add_argument("names", nargs="*", help="only these benches (default: all)")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(SMALL))
        return 0
    if not args.small:
        ap.error("only --small is run from here; a full bench runs alone: python -m bench.NAME")
    unknown = sorted(set(args.names) - set(SMALL))
    if unknown:
        ap.error(f"no small bench named {', '.join(unknown)} (see --list)")
    names = [n for n in SMALL if not args.names or n in args.names]
    took: dict[str, tuple[float, int]] = {}
    for name in names:
        print(f"\n=== bench.{name} --small", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"bench.{name}", "--small"])
        took[name] = (time.perf_counter() - t0, code)
    print("\n| bench | wall s | result |\n|---|---:|---|")
    for name, (secs, code) in took.items():
        print(f"| {name} | {secs:.1f} | {'ok' if code == 0 else f'FAILED (exit {code})'} |")
    total = sum(secs for secs, _ in took.values())
    failed = [name for name, (_, code) in took.items() if code != 0]
    print(f"\n{len(took)} small benches in {total:.1f} s; {len(failed)} failed {failed or ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
