"""``readdod import`` of a 100,000-entry file against the real daemon: entries/s and the
client's peak memory.

    python -m bench.import [--entries 100000] [--small]

``--small`` (2,000 entries, no baseline) is what CI runs (``tests/test_import_bench.py``).

A Netscape bookmark file (what browsers export) with a description on every
link, imported by the ``readdod import`` command as a person runs it (a
subprocess, parsing included). The daemon runs with ``auto_process = false``,
so what is measured is reading the file and writing the captures (durable,
``synchronous = FULL``), not fetching 10,000 pages.

- ``import``: the first run, every entry new.
- ``import_again``: the same file again, every entry already there (what
  resuming a cut-off import costs).
- baseline: the same captures sent one request per round trip on one
  connection, as a script calling ``capture`` in a loop does, in the same run
  on a fresh daemon (on the first 10,000 entries: it is a rate).
- peak RSS: the import client's (a child of a small probe process, read from
  ``getrusage``), which must stay under 200 MiB whatever the file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from html import escape
from pathlib import Path
from typing import Any

from bench._common import Daemon, report
from readdod.capture.formats import READERS
from readdod.capture.plan import Options, Planned, plan


def bookmark_file(path: Path, n: int) -> None:
    rows = [
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>",
        '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">',
        "<TITLE>Bookmarks</TITLE><H1>Bookmarks</H1><DL><p>",
    ]
    for i in range(n):
        if i % 500 == 0:
            rows.append(f"<DT><H3>Folder {i // 500}</H3><DL><p>")
        rows.append(
            f'<DT><A HREF="https://site{i % 97}.example.org/post/{i}?utm_source=rss"'
            f' ADD_DATE="{1_500_000_000 + i * 60}" TAGS="t{i % 13},bench">'
            f"{escape(f'Post {i} on things & stuff')}</A>"
        )
        rows.append(f"<DD>read post {i} for the bench")
        if i % 500 == 499:
            rows.append("</DL><p>")
    rows.append("</DL>")
    path.write_text("\n".join(rows) + "\n")


#: Runs a command and prints its exit code, its peak RSS (KiB) and its output.
_PROBE = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(p.stderr[-2000:])\n"
    "print(p.returncode)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "print(p.stdout)\n"
)


def timed_import(d: Daemon, path: Path) -> tuple[float, dict[str, Any], float]:
    """(wall seconds, the --json summary, the client's peak RSS in MiB)."""
    cmd = [sys.executable, "-m", "readdod", "import", str(path), "--json", "-i", "bench"]
    cmd += ["--config", str(d.config)]
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *cmd], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - t0
    code, rss_kib, summary = out.stdout.split("\n", 2)
    if code != "0":
        raise SystemExit(f"import failed ({code}): {out.stderr[-2000:]}")
    return elapsed, json.loads(summary), int(rss_kib) / 1024


def one_by_one(d: Daemon, path: Path, limit: int) -> float:
    planned = [
        p
        for p in plan(
            READERS["netscape"](path.read_text()), Options(fmt="netscape", intent="bench")
        )
        if isinstance(p, Planned)
    ][:limit]
    with d.client() as c:
        t0 = time.perf_counter()
        for p in planned:
            c.call("capture", p.params)
        return time.perf_counter() - t0


def run(n: int, *, baseline: bool) -> dict[str, Any]:
    """The figures for an import of ``n`` entries."""
    with tempfile.TemporaryDirectory(prefix="readdod-bench-import-") as tmp:
        root = Path(tmp)
        path = root / "bookmarks.html"
        bookmark_file(path, n)
        (root / "a").mkdir()
        (root / "b").mkdir()
        d = Daemon(root / "a", daemon={"auto_process": False})
        d.start()
        try:
            first_s, first, first_rss = timed_import(d, path)
            again_s, again, again_rss = timed_import(d, path)
            assert d.count("CAPTURED") == n, d.count("CAPTURED")
        finally:
            d.stop()
        assert (first["new"], again["already"], first["total"]) == (n, n, n), (first, again)
        figures: dict[str, Any] = {
            "entries": n,
            "file_mib": round(path.stat().st_size / 2**20, 1),
            "import_s": round(first_s, 2),
            "entries_per_s": round(n / first_s, 1),
            "peak_rss_mib": round(max(first_rss, again_rss), 1),
            "import_again_s": round(again_s, 2),
            "import_again_entries_per_s": round(n / again_s, 1),
        }
        if baseline:
            base = Daemon(root / "b", daemon={"auto_process": False})
            base.start()
            try:
                limit = min(n, 10_000)
                base_s = one_by_one(base, path, limit)
            finally:
                base.stop()
            figures["baseline_one_by_one_per_s"] = round(limit / base_s, 1)
            figures["ratio_vs_one_by_one"] = round(figures["entries_per_s"] * base_s / limit, 2)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", "--bookmarks", type=int, default=100_000)
    ap.add_argument("--small", action="store_true", help="2,000 entries, no baseline (CI)")
    args = ap.parse_args()
    n = 2_000 if args.small else args.entries
    figures = run(n, baseline=not args.small)
    report(
        "import_small" if args.small else "import",
        figures,
        sane={"entries/s above zero": figures["entries_per_s"] > 0},
    )


if __name__ == "__main__":
    main()
