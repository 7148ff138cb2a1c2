"""Finding things with many items: `list` filters, full-text queries and paging.

    python -m bench.search [--items 5000]

Captures N articles into a real daemon (fixed engine, so every extracted
text is indexed), then times `list` calls over its socket: newest first, a
tag filter, one- and two-word full-text queries, and paging through all
items. Also times :func:`readdod.items.urls.canonical`, which every URL capture
pays.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import WORDS, article, report
from readdod.control.client import Client
from readdod.items.urls import canonical
from tests.daemon_proc import DaemonProc

REPEAT = 30


def _ms(c: Client, params: dict[str, Any]) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        c.call("list", params)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--small", action="store_true", help="300 items: that it runs (CI)")
    args = ap.parse_args()
    n = 300 if args.small else args.items

    url = "HTTPS://Example.ORG:443/a/./b/../post?utm_source=x&b=2&a=1&fbclid=y#frag"
    t0 = time.perf_counter()
    for _ in range(20_000):
        canonical(url)
    canonical_us = round((time.perf_counter() - t0) / 20_000 * 1e6, 2)

    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProc(
            Path(tmp),
            daemon={"concurrency": 64, "skip_below": 0},
            ai={"engine": "fixed"},
        )
        d.start()
        try:
            with d.client() as c:
                for i in range(n):
                    c.call(
                        "capture",
                        {
                            "text": article(i, paragraphs=3),
                            "intent": f"learn about {WORDS[i % len(WORDS)]}",
                            "tags": [WORDS[i % 7]],
                        },
                    )
                d.wait_status("READY", count=n, timeout=900)
                figures: dict[str, Any] = {
                    "items": n,
                    "canonical_us_per_url": canonical_us,
                    "list_newest_50_ms": _ms(c, {"limit": 50}),
                    "list_tag_50_ms": _ms(c, {"tags": [WORDS[3]], "limit": 50}),
                    "list_status_ready_50_ms": _ms(c, {"status": ["READY"], "limit": 50}),
                    "query_one_word_50_ms": _ms(c, {"query": "checkpoint", "limit": 50}),
                    "query_two_words_50_ms": _ms(c, {"query": "heartbeat jitter", "limit": 50}),
                    "query_prefix_50_ms": _ms(c, {"query": "orch", "limit": 50}),
                }
                t0 = time.perf_counter()
                cursor, pages = None, 0
                while True:
                    params: dict[str, Any] = {"limit": 100}
                    if cursor:
                        params["cursor"] = cursor
                    cursor = c.call("list", params)["next_cursor"]
                    pages += 1
                    if cursor is None:
                        break
                figures["page_all_by_100_s"] = round(time.perf_counter() - t0, 3)
                figures["pages"] = pages
        finally:
            d.stop()
    report(
        "search_small" if args.small else "search",
        figures,
        sane={
            "every page read": figures["pages"] == -(-n // 100),
            "times above zero": all(
                v > 0 for k, v in figures.items() if k.endswith(("_ms", "_us_per_url"))
            ),
        },
    )


if __name__ == "__main__":
    main()
