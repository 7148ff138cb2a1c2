"""Article-extraction quality and speed against trafilatura, in one process.

    python -m bench.extraction [--bench-dir DIR] [--passes 5] [--worst 10]
                               [--readability DIR [--no-bench]]

Scores ``readdod.extraction.extract`` (the whole extraction: text, metadata,
Markdown, word count) and ``article_text`` (the same text alone) and, when
the ``bench`` extra is installed, trafilatura (``fast=True``, default
settings, and ``with_metadata=True``) on the pages of the shared extraction
bench (``shared/extraction-bench`` beside the
repository by default). Quality uses the bench's own scorer (its
``evaluate.py``: 4-token shingles, F1 of the mean precision and recall);
speed is pages per second over the extraction call only, with the HTML
already in memory, the median of ``--passes`` passes, in wall-clock and in
CPU time (steadier when other processes share the machine). Prints a table, the
speed ratios of like against like (text alone against trafilatura's default,
which reads no metadata; text and metadata against trafilatura's with them)
and of readdod's whole extraction against trafilatura's default, the worst
pages for readdod, and writes
``bench/results/extraction.json``.

``--readability DIR`` also scores readdod on mozilla/readability's test pages
(``DIR/<name>/source.html`` with ``expected.html`` and
``expected-metadata.json``, either HTML file possibly gzipped; the
repository's ``test/test-pages``): word
recall, precision and F1 of the text against ``expected.html`` (multisets of
``\\w+`` words), and whether the title equals the expected one. Each source
is decoded from its bytes as the fetcher decodes a body without a header
charset, so a page's own charset declaration is part of the test.
``--no-bench`` skips the shared bench (and trafilatura).

``--small`` (what CI runs) scores readdod alone on the few readability pages
kept in ``tests/readability_pages``, and exits 1 unless every page was read
and its figures are sane (words found, finite scores).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import gzip
import importlib.util
import json
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from selectolax.lexbor import LexborHTMLParser

from bench._common import not_finite
from readdod.errors import ExtractionError
from readdod.extraction import article_text, extract
from readdod.extraction.charsets import decode_body
from readdod.text.dates import iso_8601

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BENCH_DIR = REPO.parent / "shared" / "extraction-bench"
RESULTS = Path(__file__).resolve().parent / "results"

Extractor = Callable[[str, str | None], str]


def ours(html: str, url: str | None) -> str:
    try:
        return extract(html, url).text
    except ExtractionError:
        return ""


def ours_text(html: str, url: str | None) -> str:
    try:
        return article_text(html, url)
    except ExtractionError:
        return ""


def extractors() -> dict[str, Extractor]:
    """Each extractor by name; readdod's first (the figures are its ratios)."""
    found: dict[str, Extractor] = {"readdod": ours, "readdod-text": ours_text}
    try:
        import trafilatura
    except ImportError as exc:  # missing, or one of its own imports failing
        print(f"trafilatura cannot be imported ({exc}; pip install -e '.[bench]'): skipping it")
        return found

    def fast(html: str, url: str | None) -> str:
        return trafilatura.extract(html, url=url, fast=True, include_comments=False) or ""

    def default(html: str, url: str | None) -> str:
        return trafilatura.extract(html, url=url, include_comments=False) or ""

    def metadata(html: str, url: str | None) -> str:
        return trafilatura.extract(html, url=url, include_comments=False, with_metadata=True) or ""

    found["trafilatura-fast"] = fast
    found["trafilatura"] = default
    found["trafilatura-metadata"] = metadata
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
    ap.add_argument("--readability", type=Path, metavar="DIR", help="readability's test-pages")
    ap.add_argument("--no-bench", action="store_true", help="only the readability pages")
    ap.add_argument(
        "--small", action="store_true", help="readdod on tests/readability_pages only (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.no_bench, args.readability = True, REPO / "tests" / "readability_pages"
    if args.no_bench and args.readability is None:
        ap.error("--no-bench needs --readability DIR")
    RESULTS.mkdir(exist_ok=True)
    if not args.no_bench:
        run_bench(args.bench_dir, args.passes, args.worst)
    if args.readability is not None:
        report = run_readability(args.readability, args.worst)
        path = RESULTS / f"extraction-readability{'_small' if args.small else ''}.json"
        path.write_text(json.dumps(report, indent=2) + "\n")
        problems = [f"{p} is not finite" for p in not_finite(report)]
        if report["recall_mean"] <= 0 or not all(r["words_found"] for r in report["per_page"]):
            problems.append("a page gave no words")
        if problems:
            sys.exit("extraction: " + "; ".join(problems))


# Which speeds are compared, and what each comparison holds alike. trafilatura's
# default extraction gives the text alone (no metadata); readdod's extract()
# also reads the title, byline, date and language and writes Markdown, a word
# count and an excerpt; article_text() gives the text alone.
_COMPARISONS: Final = (
    ("readdod-text", "trafilatura", "text alone, both at default settings"),
    ("readdod", "trafilatura-metadata", "text and metadata, both"),
    ("readdod", "trafilatura", "readdod's whole extraction against trafilatura's text"),
    ("readdod-text", "trafilatura-fast", "text alone, trafilatura without its fallbacks"),
)


def run_bench(bench_dir: Path, passes: int, worst_count: int) -> None:
    """F1 and speed on the shared bench, beside trafilatura."""
    scorer = load_scorer(bench_dir)
    pages = scorer.load_pages(bench_dir)
    if not pages:
        sys.exit(f"no pages under {bench_dir}/truth")
    truths = [page["truth"] for page in pages]

    fns = extractors()
    outputs: dict[str, list[str]] = {}
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    # Each pass runs every extractor over all pages (a batch, as a daemon
    # extracts), the extractors taking turns pass by pass so that a change in
    # the machine's load falls on all of them.
    for _ in range(max(1, passes)):
        for name, fn in fns.items():
            # The garbage the previous extractor left is collected before the
            # next one is timed, not during its pass.
            gc.collect()
            outs, wall, cpu = timed_pass(fn, pages)
            outputs.setdefault(name, outs)
            walls[name].append(wall)
            cpus[name].append(cpu)
    if outputs["readdod-text"] != outputs["readdod"]:
        sys.exit("extraction: article_text() and extract().text disagree on a page")

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

    print(f"\n{len(pages)} pages, median of {passes} passes, extraction call only\n")
    print(f"{'extractor':<21} {'F1':>6} {'P':>6} {'R':>6} {'pages/s':>9} {'pages/cpu-s':>12}")
    for name, row in results.items():
        print(
            f"{name:<21} {row['f1']:>6.3f} {row['precision']:>6.3f} {row['recall']:>6.3f} "
            f"{row['pages_per_s']:>9.1f} {row['pages_per_cpu_s']:>12.1f}"
        )
    ratios: dict[str, float] = {}
    for ours_name, other, what in _COMPARISONS:
        if ours_name in results and other in results:
            wall = results[ours_name]["pages_per_s"] / results[other]["pages_per_s"]
            cpu = results[ours_name]["pages_per_cpu_s"] / results[other]["pages_per_cpu_s"]
            key = f"{'text_' if ours_name == 'readdod-text' else ''}speed_vs_{other}"
            ratios[key] = round(wall, 2)
            ratios[f"cpu_{key}"] = round(cpu, 2)
            print(f"{ours_name} is {wall:.1f}x the speed of {other} ({cpu:.1f}x in CPU time)")
            print(f"    {what}")

    worst = sorted(per_page, key=lambda row: row["f1"])[:worst_count]
    print(f"\n{len(worst)} lowest-F1 pages for readdod:")
    for row in worst:
        print(
            f"  F1 {row['f1']:.3f}  P {row['precision']:.3f}  R {row['recall']:.3f}  "
            f"{row['id'][:12]}  {row['url']}"
        )

    report = {
        "bench": "extraction",
        "machine": platform.machine(),
        "python": platform.python_version(),
        "pages": len(pages),
        "passes": passes,
        "results": results,
        **ratios,
        "worst": worst,
    }
    (RESULTS / "extraction.json").write_text(json.dumps(report, indent=2) + "\n")


_WORD_RE = re.compile(r"\w+")
# Block-level tags get a space before them, so that words of adjacent blocks
# do not run together when the expected HTML is flattened to text.
_BLOCK_TAG_RE = re.compile(
    r"<(?=/?(?:p|div|br|li|h[1-6]|tr|td|th|blockquote|pre|section|article|figure|"
    r"figcaption|table|ul|ol|dl|dd|dt|hr|img|header|footer|aside|main)\b)",
    re.IGNORECASE,
)


# ISO 8601's extended form: a day, or a day and time with an optional offset.
_ISO_8601_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?$"
)


def html_words(html: str) -> list[str]:
    """The words of an HTML fragment (``expected.html``), blocks kept apart."""
    tree = LexborHTMLParser(_BLOCK_TAG_RE.sub(" <", html))
    root = tree.body or tree.root
    return _WORD_RE.findall(root.text() if root is not None else "")


def word_scores(expected: list[str], got: list[str]) -> dict[str, float]:
    """Recall, precision and F1 of ``got``'s words against ``expected``'s (multisets)."""
    common = sum((Counter(expected) & Counter(got)).values())
    recall = common / len(expected) if expected else (1.0 if not got else 0.0)
    precision = common / len(got) if got else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"recall": recall, "precision": precision, "f1": f1}


def same_title(expected: str | None, got: str | None) -> bool:
    """Titles compared with whitespace collapsed and case folded."""
    return _fold(expected) == _fold(got)


_SITE_SEPARATORS = "|-–—·•»:_~/[(（"


def title_agrees(expected: str | None, got: str | None) -> bool:
    """The same title, or one is the other with a site part added after (or before)
    a separator: ``Headline`` against readability's ``Headline | Site``."""
    want, have = _fold(expected), _fold(got)
    if not want or not have:
        return want == have
    if want == have:
        return True
    longer, shorter = (want, have) if len(want) > len(have) else (have, want)
    if longer.startswith(shorter):
        return longer[len(shorter) :].lstrip()[:1] in tuple(_SITE_SEPARATORS)
    if longer.endswith(shorter):
        return longer[: -len(shorter)].rstrip()[-1:] in tuple(_SITE_SEPARATORS + "]）)")
    return False


def _fold(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def same_instant(expected: str | None, got: str | None) -> bool:
    """Whether two stamps name the same instant (or day), however each is written."""
    want, have = iso_8601(expected or ""), iso_8601(got or "")
    if want is None or have is None:
        return False
    if "T" not in want or "T" not in have:
        return want[:10] == have[:10]
    a, b = (datetime.datetime.fromisoformat(x.replace("Z", "+00:00")) for x in (want, have))
    if (a.tzinfo is None) != (b.tzinfo is None):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    return a == b


def _page_file(page: Path, name: str) -> bytes:
    """A page's file, or its gzipped copy (``name.gz``); empty if it has neither."""
    if (page / name).is_file():
        return (page / name).read_bytes()
    if (page / f"{name}.gz").is_file():
        return gzip.decompress((page / f"{name}.gz").read_bytes())
    return b""


def run_readability(pages_dir: Path, worst_count: int) -> dict[str, Any]:
    """readdod on readability's test pages: word recall, precision, F1, titles."""
    rows: list[dict[str, Any]] = []
    for page in sorted(p for p in pages_dir.iterdir() if p.is_dir()):
        source = _page_file(page, "source.html")
        if not source:
            continue
        expected_html = _page_file(page, "expected.html").decode("utf-8")
        expected_meta = json.loads((page / "expected-metadata.json").read_text(encoding="utf-8"))
        html = decode_body(source, None)
        try:
            found = extract(html, None)
            text, title, published = found.text, found.title, found.published_at
        except ExtractionError:
            text, title, published = "", None, None
        expected = html_words(expected_html)
        scores = word_scores(expected, _WORD_RE.findall(text))
        rows.append(
            {
                "page": page.name,
                **{key: round(value, 4) for key, value in scores.items()},
                "words_expected": len(expected),
                "words_found": len(_WORD_RE.findall(text)),
                "title_ok": same_title(expected_meta.get("title"), title),
                "title_agrees": title_agrees(expected_meta.get("title"), title),
                "date_agrees": same_instant(expected_meta.get("publishedTime"), published),
                "title": title,
                "title_expected": expected_meta.get("title"),
                "published_at": published,
                "published_expected": expected_meta.get("publishedTime"),
            }
        )
    if not rows:
        sys.exit(f"no <page>/source.html under {pages_dir}")
    summary = {
        "pages": len(rows),
        "recall_median": round(statistics.median(r["recall"] for r in rows), 4),
        "recall_mean": round(statistics.fmean(r["recall"] for r in rows), 4),
        "precision_mean": round(statistics.fmean(r["precision"] for r in rows), 4),
        "f1_mean": round(statistics.fmean(r["f1"] for r in rows), 4),
        "pages_recall_below_0_5": sum(r["recall"] < 0.5 for r in rows),
        "title_accuracy": round(sum(r["title_ok"] for r in rows) / len(rows), 4),
        "title_agreement": round(sum(r["title_agrees"] for r in rows) / len(rows), 4),
        "dates_expected": sum(bool(r["published_expected"]) for r in rows),
        "dates_agree": sum(r["date_agrees"] for r in rows),
        "dates_not_iso": sum(
            bool(r["published_at"]) and not _ISO_8601_RE.match(r["published_at"]) for r in rows
        ),
    }
    print(f"\nreadability test pages: {len(rows)}")
    print(
        f"word recall median {summary['recall_median']:.3f} mean {summary['recall_mean']:.3f}, "
        f"precision mean {summary['precision_mean']:.3f}, F1 mean {summary['f1_mean']:.3f}, "
        f"{summary['pages_recall_below_0_5']} pages under 0.5 recall; "
        f"title accuracy {summary['title_accuracy']:.3f} (exact), "
        f"{summary['title_agreement']:.3f} (equal but for a site part)"
    )
    print(
        f"publication dates: {summary['dates_agree']} of {summary['dates_expected']} expected "
        f"found (the same instant); {summary['dates_not_iso']} not in ISO 8601"
    )
    worst = sorted(rows, key=lambda r: r["recall"])[:worst_count]
    print(f"{len(worst)} lowest-recall pages:")
    for row in worst:
        print(
            f"  R {row['recall']:.3f}  P {row['precision']:.3f}  "
            f"{row['words_found']:>6}/{row['words_expected']:<6} {row['page']}"
        )
    wrong = [r for r in rows if not r["title_agrees"]]
    print(f"{len(wrong)} titles differ (more than by a site part):")
    for row in wrong:
        print(f"  {row['page']}: {row['title']!r} (expected {row['title_expected']!r})")
    return {"bench": "extraction-readability", **summary, "per_page": rows}


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
