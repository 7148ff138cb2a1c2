"""pypdf against pdfminer.six on PDFs made here: words recovered, reading order, speed.

    python -m bench.pdf [--runs 3]
    python -m bench.pdf --small   # one run; pypdf and readdod's reader, pdfminer if installed

Each document is generated with reportlab (``tests/pdfs.py``), so its words
and their reading order are known: headings with paragraphs, text in two
columns, a table, and a long document for speed. For each library:

- ``recall``: the share of the document's words found in the output
  (counted as multisets: a word found twice counts once for each occurrence
  in the document);
- ``order``: the longest run of the document's words the output holds in
  the same order (difflib's matching blocks over word lists), as a share of
  the document's words: 1.0 is the reading order kept whole;
- ``pages_per_s``: the long document's pages over the best wall time of
  ``--runs`` extractions (text only, one process).

The figures are written to ``bench/results/pdf.json``; the baseline is the
other library, measured in the same run.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import importlib.util
import io
import time
from collections.abc import Callable

from bench._common import report
from tests import pdfs


def with_pypdf(data: bytes) -> str:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    return "\n".join(page.extract_text() or "" for page in reader.pages)


def with_pdfminer(data: bytes) -> str:
    from pdfminer.high_level import extract_text

    return str(extract_text(io.BytesIO(data)))


def with_readdod(data: bytes) -> str:
    from readdod.extraction.pdf import extract_pdf

    return extract_pdf(data).text


def words(text: str) -> list[str]:
    return [w.strip(".,:;").lower() for w in text.split() if w.strip(".,:;")]


def recall(expected: list[str], got: list[str]) -> float:
    want = collections.Counter(expected)
    have = collections.Counter(got)
    return sum(min(n, have[w]) for w, n in want.items()) / max(1, len(expected))


def order(expected: list[str], got: list[str]) -> float:
    matcher = difflib.SequenceMatcher(None, expected, got, autojunk=False)
    return sum(b.size for b in matcher.get_matching_blocks()) / max(1, len(expected))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--small",
        action="store_true",
        help="one run, readdod's reader beside pypdf; pdfminer only if installed (CI)",
    )
    args = ap.parse_args()
    if args.small:
        args.runs = 1
    docs = {"headings": pdfs.headings(), "two_columns": pdfs.two_columns(), "table": pdfs.table()}
    long = pdfs.long_document()
    libraries: dict[str, Callable[[bytes], str]] = {
        "pypdf": with_pypdf,
        "pdfminer": with_pdfminer,
    }
    if args.small:
        # CI installs the test extra, not the bench extra that brings pdfminer.six.
        libraries = {"pypdf": with_pypdf, "readdod": with_readdod}
        if importlib.util.find_spec("pdfminer") is not None:
            libraries["pdfminer"] = with_pdfminer
        else:
            print("pdfminer.six is not installed (pip install -e '.[bench]'): left out")
    figures: dict[str, object] = {"long_document_pages": long.pages}
    for name, run in libraries.items():
        quality = {}
        for doc, made in docs.items():
            got = words(run(made.data))
            quality[doc] = {
                "recall": round(recall(made.words, got), 3),
                "order": round(order(made.words, got), 3),
            }
        best = float("inf")
        for _ in range(args.runs):
            t0 = time.perf_counter()
            run(long.data)
            best = min(best, time.perf_counter() - t0)
        figures[name] = quality | {"pages_per_s": round(long.pages / best, 1)}
    p, m = figures["pypdf"], figures.get("pdfminer")
    assert isinstance(p, dict)
    if isinstance(m, dict):
        figures["speed_ratio_pypdf_to_pdfminer"] = round(p["pages_per_s"] / m["pages_per_s"], 2)
    measured = [f for f in figures.values() if isinstance(f, dict)]
    report(
        "pdf_small" if args.small else "pdf",
        figures,
        sane={
            "words found in every document": all(
                f[doc]["recall"] > 0 for f in measured for doc in docs
            ),
            "pages/s above zero": all(f["pages_per_s"] > 0 for f in measured),
        },
    )


if __name__ == "__main__":
    main()
