"""One poll of a 100,000-entry feed: CPU seconds, peak memory, and how long the daemon's
event loop was held, with the feed bounds and without them.

    python -m bench.feed_poll [--entries 100000] [--small]

``--small`` (10,000 entries) is what CI runs.

Each figure comes from a fresh process that does what the daemon does for one
poll: a real SQLite store, the feed loop (:class:`readdod.loops.feeds.FeedPoller`)
fetching the feed from a loopback server through the guarded client, reading it
in the bounded child process, and capturing its new entries through the core
(``feeds.max_entries_per_poll``, 100). A ticker on the event loop records the
longest the loop was kept from running (what every other request waits).

- ``bounded``: the defaults (``feeds.max_entries_read`` 500, ``feeds.max_bytes``
  10 MiB, ``feeds.parse_cpu_s`` 10).
- ``unbounded``: every entry read (``max_entries_read`` = the feed's size, no
  CPU budget to speak of): what a poll cost before the bounds.

CPU is the process's and its children's (the reading process), user + system;
peak RSS is the larger of the two (``getrusage``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench._common import report


def feed_document(n: int) -> bytes:
    """An RSS feed of ``n`` entries, newest first, each with a title, guid and link: lean,
    so that 100,000 of them stay under the 10 MiB ``feeds.max_bytes``."""
    items = "".join(
        f"<item><title>Post {i}</title><guid>p{i}</guid>"
        f"<link>https://blog.example/p/{i}</link></item>"
        for i in reversed(range(n))
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title>'
        f"<link>https://blog.example/</link>{items}</channel></rss>"
    ).encode()


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def _one(n: int, bounded: bool) -> dict[str, Any]:
    from readdod.core import Core
    from readdod.extraction.fetch import make_client
    from readdod.loops.feeds import FeedPoller
    from readdod.runtime.clock import SystemClock
    from readdod.settings.config import FeedsConfig, FetchConfig
    from readdod.store import SqliteStore
    from tests.pageserver import serve

    data = feed_document(n)
    cfg = (
        FeedsConfig()
        if bounded
        else FeedsConfig(max_entries_read=n, parse_cpu_s=3600, parse_memory_mb=16_384)
    )
    with tempfile.TemporaryDirectory() as tmp, serve() as srv:
        srv.page("/feed.xml", data, content_type="application/rss+xml")
        clock = SystemClock()
        async with SqliteStore.open(Path(tmp) / "readdod.db") as store:
            core = Core(store, clock, auto_process=False)
            await core.feeds.add(srv.url("/feed.xml"), "bench")
            fetch = FetchConfig(allow_private=True, max_bytes=64 * 1024 * 1024, timeout_s=600)
            async with make_client(fetch) as http:
                poller = FeedPoller(core.feeds, core.commands, http, cfg, clock)
                held = 0.0
                done = anyio.Event()

                async def ticker() -> None:
                    nonlocal held
                    last = time.monotonic()
                    while not done.is_set():
                        await anyio.sleep(0.01)
                        now = time.monotonic()
                        held = max(held, now - last - 0.01)
                        last = now

                rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                cpu, wall = _cpu(), time.monotonic()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(ticker)
                    await poller.poll_due(10)
                    done.set()
                cpu, wall = _cpu() - cpu, time.monotonic() - wall
                (feed,) = await core.feeds.all()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "feed_bytes": len(data),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "event_loop_held_max_s": round(held, 3),
        "peak_rss_mib": round(max(own, kids) / 1024, 1),
        "poll_rss_growth_mib": round(max(own - rss_before, 0) / 1024, 1),
        "reading_process_peak_rss_mib": round(kids / 1024, 1),
        "entries_captured": feed.entries_captured,
        "failures": feed.failures,
        "error": feed.last_error_code,
    }


def measure(n: int, bounded: bool) -> dict[str, Any]:
    """One configuration, in a fresh process (its own peak RSS)."""
    mode = "bounded" if bounded else "unbounded"
    out = subprocess.run(
        [sys.executable, "-m", "bench.feed_poll", "--one", mode, "--entries", str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--small", action="store_true", help="10,000 entries (CI)")
    ap.add_argument("--one", choices=["bounded", "unbounded"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = 10_000 if args.small else args.entries
    if args.one:
        print(json.dumps(anyio.run(_one, n, args.one == "bounded")))
        return
    bounded = measure(n, True)
    unbounded = measure(n, False)
    assert bounded["failures"] == 0 and bounded["entries_captured"] == 100, bounded
    report(
        "feed_poll_small" if args.small else "feed_poll",
        {"entries": n, "bounded": bounded, "unbounded": unbounded},
        sane={"the unbounded poll captured entries": unbounded.get("entries_captured", 0) > 0},
    )


if __name__ == "__main__":
    main()
