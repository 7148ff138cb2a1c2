"""Article-extraction quality and speed against trafilatura, in one process.

    python -m bench.extraction [--bench-dir DIR] [--passes 5] [--worst 10]

Scores ``readdod.extraction.extract`` and, when the ``bench`` extra is
installed, trafilatura (``fast=True`` and default settings) on the pages of
the shared extraction bench (``shared/extraction-bench`` beside the
repository by default). Quality uses the bench's own scorer (its
``evaluate.py``: 4-token shingles, F1 of the mean precision and recall);
speed is pages per second over the extraction call only, with the HTML
already in memory, the median of ``--passes`` passes, in wall-clock and in
CPU time (steadier when other processes share the machine). Prints a table, the
speed ratios and the worst pages for readdod, and writes
``bench/results/extraction.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from readdod.errors import ExtractionError
from readdod.extraction import extract

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH_DIR = REPO.parent / "shared" / "extraction-bench"
RESULTS = Path(__file__).resolve().parent / "results"

Extractor = Callable[[str, str | None], str]


def ours(html: str, url: str | None) -> str:
    try:
        return extract(html, url).text
    except ExtractionError:
        return ""


def extractors() -> dict[str, Extractor]:
    found: dict[str, Extractor] = {"readdod": ours}
    try:
        import trafilatura
    except ImportError as exc:  # missing, or one of its own imports failing
        print(f"trafilatura cannot be imported ({exc}; pip install -e '.[bench]'): skipping it")
        return found

    def fast(html: str, url: str | None) -> str:
        return trafilatura.extract(html, url=url, fast=True, include_comments=False) or ""

    def default(html: str, url: str | None) -> str:
        return trafilatura.extract(html, url=url, include_comments=False) or ""

    found["trafilatura-fast"] = fast
    found["trafilatura"] = default
    return found


def load_scorer(bench_dir: Path) -> ModuleType:
    """The bench's own scorer, so that the figures match its README exactly."""
    path = bench_dir / "evaluate.py"
    spec = importlib.util.spec_from_file_location("extraction_bench_evaluate", path)
    if spec is None or spec.loader is None or not path.exists():
        sys.exit(f"no extraction bench at {bench_dir} (expected evaluate.py there)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed_pass(fn: Extractor, pages: list[dict[str, Any]]) -> tuple[list[str], float, float]:
    """One pass over every page: the answers, and the wall-clock and CPU
    seconds spent inside ``fn`` (CPU time does not count the moments another
    process had the core)."""
    wall = cpu = 0.0
    outs: list[str] = []
    for page in pages:
        start, start_cpu = time.perf_counter(), time.process_time()
        try:
            text = fn(page["html"], page["url"])
        except Exception as exc:  # a crash counts as an empty answer, as in evaluate.py
            print(f"! {page['id'][:12]}: {type(exc).__name__}: {exc}", file=sys.stderr)
            text = ""
        wall += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        outs.append(text or "")
    return outs, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH_DIR)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--worst", type=int, default=10)
    args = ap.parse_args()

    scorer = load_scorer(args.bench_dir)
    pages = scorer.load_pages(args.bench_dir)
    if not pages:
        sys.exit(f"no pages under {args.bench_dir}/truth")
    truths = [page["truth"] for page in pages]

    fns = extractors()
    outputs: dict[str, list[str]] = {}
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    # Each pass runs every extractor over all pages (a batch, as a daemon
    # extracts), the extractors taking turns pass by pass so that a change in
    # the machine's load falls on all of them.
    for _ in range(max(1, args.passes)):
        for name, fn in fns.items():
            outs, wall, cpu = timed_pass(fn, pages)
            outputs.setdefault(name, outs)
            walls[name].append(wall)
            cpus[name].append(cpu)

    results: dict[str, dict[str, Any]] = {}
    per_page: list[dict[str, Any]] = []
    for name in fns:
        metrics = scorer.score(truths, outputs[name])
        counts = metrics.pop("_per_page")
        results[name] = {
            "f1": round(metrics["f1"], 4),
            "precision": round(metrics["precision"], 4),
            "recall": round(metrics["recall"], 4),
            "accuracy": round(metrics["accuracy"], 4),
            "empty": metrics["empty_predictions"],
            "pages_per_s": round(len(pages) / statistics.median(walls[name]), 1),
            "pages_per_cpu_s": round(len(pages) / statistics.median(cpus[name]), 1),
        }
        if name == "readdod":
            per_page = [_page_row(page, *count) for page, count in zip(pages, counts, strict=True)]

    print(f"\n{len(pages)} pages, median of {args.passes} passes, extraction call only\n")
    print(f"{'extractor':<18} {'F1':>6} {'P':>6} {'R':>6} {'pages/s':>9} {'pages/cpu-s':>12}")
    for name, row in results.items():
        print(
            f"{name:<18} {row['f1']:>6.3f} {row['precision']:>6.3f} {row['recall']:>6.3f} "
            f"{row['pages_per_s']:>9.1f} {row['pages_per_cpu_s']:>12.1f}"
        )
    ratios: dict[str, float] = {}
    for other in ("trafilatura-fast", "trafilatura"):
        if other in results:
            wall = results["readdod"]["pages_per_s"] / results[other]["pages_per_s"]
            cpu = results["readdod"]["pages_per_cpu_s"] / results[other]["pages_per_cpu_s"]
            ratios[f"speed_vs_{other}"] = round(wall, 2)
            ratios[f"cpu_speed_vs_{other}"] = round(cpu, 2)
            print(f"readdod is {wall:.1f}x the speed of {other} ({cpu:.1f}x in CPU time)")

    worst = sorted(per_page, key=lambda row: row["f1"])[: args.worst]
    print(f"\n{len(worst)} lowest-F1 pages for readdod:")
    for row in worst:
        print(
            f"  F1 {row['f1']:.3f}  P {row['precision']:.3f}  R {row['recall']:.3f}  "
            f"{row['id'][:12]}  {row['url']}"
        )

    RESULTS.mkdir(exist_ok=True)
    report = {
        "bench": "extraction",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "pages": len(pages),
        "passes": args.passes,
        "results": results,
        **ratios,
        "worst": worst,
    }
    (RESULTS / "extraction.json").write_text(json.dumps(report, indent=2) + "\n")


def _page_row(page: dict[str, Any], tp: float, fp: float, fn: float) -> dict[str, Any]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "id": page["id"],
        "url": page["url"],
        "f1": round(f1, 4),
        "precision": round(precision, 4),
        "recall": round(recall, 4),
    }


if __name__ == "__main__":
    main()
