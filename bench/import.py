"""``readdod import`` of a 10,000-bookmark file against the real daemon: captures/s.

    python -m bench.import [--bookmarks 10000]

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
  on a fresh daemon.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from html import escape
from pathlib import Path

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


def timed_import(d: Daemon, path: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "import", str(path), "--json", "--config", str(d.config)],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"import failed ({out.returncode}): {out.stderr[-2000:]}")
    return elapsed, out.stdout


def one_by_one(d: Daemon, path: Path) -> float:
    planned = [
        p
        for p in plan(READERS["netscape"](path.read_text()), Options(fmt="netscape"))
        if isinstance(p, Planned)
    ]
    with d.client() as c:
        t0 = time.perf_counter()
        for p in planned:
            c.call("capture", p.params)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bookmarks", type=int, default=10_000)
    args = ap.parse_args()
    n = args.bookmarks
    with tempfile.TemporaryDirectory(prefix="readdod-bench-import-") as tmp:
        root = Path(tmp)
        path = root / "bookmarks.html"
        bookmark_file(path, n)
        (root / "a").mkdir()
        (root / "b").mkdir()
        d = Daemon(root / "a", daemon={"auto_process": False})
        d.start()
        try:
            first_s, _ = timed_import(d, path)
            again_s, _ = timed_import(d, path)
            assert d.count("CAPTURED") == n, d.count("CAPTURED")
        finally:
            d.stop()
        base = Daemon(root / "b", daemon={"auto_process": False})
        base.start()
        try:
            base_s = one_by_one(base, path)
        finally:
            base.stop()
    report(
        "import",
        {
            "bookmarks": n,
            "import_s": round(first_s, 2),
            "captures_per_s": round(n / first_s, 1),
            "import_again_s": round(again_s, 2),
            "import_again_entries_per_s": round(n / again_s, 1),
            "baseline_one_by_one_per_s": round(n / base_s, 1),
            "ratio_vs_one_by_one": round(base_s / first_s, 2),
        },
    )


if __name__ == "__main__":
    main()
