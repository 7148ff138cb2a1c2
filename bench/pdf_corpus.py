"""Every PDF of a corpus through readdod's PDF extraction: outcome counts and the slowest files.

    python -m bench.pdf_corpus DIR [DIR ...] [--isolated] [--jobs 2] [--cpu-s 30]

``DIR`` is a fetched test corpus (pypdf's ``resources/`` and its
``sample-files``, pdf.js's ``test/pdfs/``): every ``*.pdf`` under it is read.
Nothing of those corpora is kept in this repository; ``tests/fixtures/pdf/``
holds a few files from them.

Each file's outcome is ``OK`` or the error code it was refused with. An
exception that is not one of readdod's errors is counted as
``INTERNAL_ERROR (<type>)``: that is what the daemon would answer, and what
must never happen.

- default: in this process, one file after another, each with a CPU-time
  budget (``--cpu-s``, by ``ITIMER_PROF``: over it the file is
  ``EXTRACTION_TOO_LARGE``) and the default text limit;
- ``--isolated``: through the child process the daemon uses
  (:mod:`readdod.extraction.pdf_process`), ``--jobs`` at a time.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import resource
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from readdod.errors import ReaddodError


class _OverBudget(BaseException):
    """Raised by the profiling timer: a BaseException, so no ``except Exception`` eats it."""


def _on_prof(signum: int, frame: FrameType | None) -> None:
    raise _OverBudget


def in_process(path: Path, cpu_s: float) -> tuple[str, float]:
    """One file's outcome and CPU seconds, read here under a CPU-time budget."""
    from readdod.extraction.pdf import extract_pdf

    data = path.read_bytes()
    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, cpu_s)
    try:
        extract_pdf(data)
        outcome = "OK"
    except _OverBudget:
        outcome = "EXTRACTION_TOO_LARGE (cpu)"
    except ReaddodError as exc:
        outcome = exc.code.value
    except Exception as exc:  # what the daemon would report as an internal error
        outcome = f"INTERNAL_ERROR ({type(exc).__name__})"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return outcome, time.process_time() - start


def isolated(path: Path, cpu_s: float) -> tuple[str, float]:
    """One file's outcome and wall seconds, read by the daemon's child process."""
    from readdod.extraction.pdf import DEFAULT_MAX_CHARS
    from readdod.extraction.pdf_process import PdfLimits, extract_pdf_bounded

    data = path.read_bytes()
    start = time.monotonic()
    try:
        extract_pdf_bounded(data, limits=PdfLimits(max_chars=DEFAULT_MAX_CHARS, cpu_s=cpu_s))
        outcome = "OK"
    except ReaddodError as exc:
        outcome = exc.code.value
    except Exception as exc:
        outcome = f"INTERNAL_ERROR ({type(exc).__name__})"
    return outcome, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument(
        "--small",
        action="store_true",
        help="the hostile PDFs kept in tests/pdf_corpus, each in its own process (CI)",
    )
    parser.add_argument("--isolated", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cpu-s", type=float, default=30.0)
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--slowest", type=int, default=10)
    args = parser.parse_args(argv)
    if args.small:
        args.dirs = [Path(__file__).resolve().parent.parent / "tests" / "pdf_corpus"]
        args.isolated = True
    if not args.dirs:
        parser.error("give one or more directories of PDFs, or --small")
    files = sorted(p for d in args.dirs for p in d.rglob("*") if p.suffix.lower() == ".pdf")
    files = [p for p in files if p.is_file() and p.stat().st_size > 0]
    results: dict[Path, tuple[str, float]] = {}
    started = time.monotonic()
    if args.isolated:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(isolated, p, args.cpu_s): p for p in files}
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
    else:
        size = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        signal.signal(signal.SIGPROF, _on_prof)
        for p in files:
            try:
                results[p] = in_process(p, args.cpu_s)
            except MemoryError:
                results[p] = ("EXTRACTION_TOO_LARGE (memory)", 0.0)
    elapsed = time.monotonic() - started
    by_corpus: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for p, (outcome, _) in results.items():
        corpus = next(str(d) for d in args.dirs if p.is_relative_to(d))
        by_corpus[corpus][outcome] += 1
    total: collections.Counter[str] = collections.Counter(o for o, _ in results.values())
    unit = "wall s" if args.isolated else "CPU s"
    print(f"{len(files)} PDFs in {elapsed:.0f} s ({'isolated' if args.isolated else 'in process'})")
    print()
    print("| outcome | " + " | ".join(Path(c).name or c for c in by_corpus) + " | all |")
    print("|---|" + "---:|" * (len(by_corpus) + 1))
    for outcome, n in total.most_common():
        row = " | ".join(str(by_corpus[c][outcome]) for c in by_corpus)
        print(f"| {outcome} | {row} | {n} |")
    print()
    print(f"| slowest | {unit} | outcome |")
    print("|---|---:|---|")
    for p, (outcome, secs) in sorted(results.items(), key=lambda r: -r[1][1])[: args.slowest]:
        print(f"| {p.name} | {secs:.2f} | {outcome} |")
    crashed = sorted(p.name for p, (o, _) in results.items() if o.startswith("INTERNAL_ERROR"))
    if crashed:
        print()
        print("INTERNAL_ERROR:", ", ".join(crashed))
    if not files:
        print("no PDF found: nothing was measured", file=sys.stderr)
        return 1
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
