"""`get` latency while the daemon reads a hostile PDF, against the same figure idle.

    python -m bench.pdf_isolation [--gets 2000] [--pages 50] [--stream-kb 700] [--cpu-s 30]
    python -m bench.pdf_isolation --small      # ~20 s: CI's size

A real daemon (``fixed`` engine) and a loopback server holding the hostile
PDF of the report: ``--pages`` pages that all draw one compressed content
stream of ``--stream-kb`` KB (a 10 KB file with tens of MB of text, minutes
of CPU). One text item is captured and made READY; then ``--gets`` `get`
calls on it, one after another on one connection, are timed:

- idle: nothing else to do;
- during: the hostile PDF's URL is captured, and once its extraction step has
  started the same calls are timed while it is still being read (calls made
  after it ended are not counted; ``during_samples`` says how many were).

``fetch.max_bytes`` is raised so the text limit does not end the reading
early: what is measured is the daemon while a PDF takes all the CPU it is
given (``fetch.pdf_cpu_s``, ``--cpu-s``). With ``--cpu-s 0`` the option is
not written to the config, for a daemon that does not know it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Daemon, percentiles, report
from tests import pdfs
from tests.pageserver import fast_fetch, serve


def _gets(d: Daemon, item_id: str, count: int, until: Any = None) -> list[float]:
    """Milliseconds of each `get`, stopping early once ``until()`` is true."""
    times: list[float] = []
    with d.client() as c:
        for _ in range(count):
            t0 = time.perf_counter()
            c.call("get", {"id": item_id})
            times.append((time.perf_counter() - t0) * 1000)
            if until is not None and len(times) % 20 == 0 and until():
                break
    return times


def run(*, gets: int, pages: int, stream_kb: int, cpu_s: float) -> dict[str, Any]:
    hostile = pdfs.shared_stream(pages=pages, stream_bytes=stream_kb * 1000)
    fetch = fast_fetch(max_bytes=200_000_000, timeout_s=10.0, read_timeout_s=5.0)
    if cpu_s > 0:
        fetch["pdf_cpu_s"] = cpu_s
    with serve() as srv, tempfile.TemporaryDirectory() as tmp:
        url = srv.page("/hostile.pdf", hostile, content_type="application/pdf")
        d = Daemon(Path(tmp), ai={"engine": "fixed"}, fetch=fetch)
        d.start()
        try:
            tail = d.tail()
            text = "A short article about harbours and lanterns. " * 40
            item = d.call("capture", {"text": text, "intent": "a probe"})["item"]
            tail.wait('"item.transition"', item["id"], '"to":"READY"', timeout=120)
            _gets(d, item["id"], 50)  # warm up the connection and the reader
            idle = _gets(d, item["id"], gets)

            pdf = d.call("capture", {"url": url, "intent": "read the hostile file"})["item"]
            tail.wait('"step.started"', pdf["id"], timeout=120)
            started = time.monotonic()

            def ended() -> bool:
                status = d.call("get", {"id": pdf["id"]})["item"]["status"]
                return bool(status != "PROCESSING")

            during = _gets(d, item["id"], gets, until=ended)
            still = not ended()
            finished = tail.wait('"item.transition"', pdf["id"], timeout=cpu_s * 10 + 600)
            read_s = time.monotonic() - started
            outcome = d.call("get", {"id": pdf["id"]})["item"]
            rss_kb = d.rss_kb()
            tail.close()
            assert d.stop() == 0
        finally:
            d.close()
    failure = outcome.get("failure") or {}
    return {
        "pdf_bytes": len(hostile),
        "pages": pages,
        "stream_kb": stream_kb,
        "pdf_cpu_s": cpu_s or "default of the daemon",
        "gets": gets,
        "idle_get_ms": {**percentiles(idle), "max": round(max(idle), 2)},
        "during_get_ms": {**percentiles(during), "max": round(max(during), 2)},
        "during_samples": len(during),
        "pdf_still_reading_after_the_gets": still,
        "pdf_outcome": failure.get("error_code") or outcome["status"],
        "pdf_first_transition": finished.get("to"),
        "pdf_seconds_from_step_start": round(read_s, 1),
        "daemon_rss_mib_after": round(rss_kb / 1024, 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--stream-kb", type=int, default=700)
    ap.add_argument("--cpu-s", type=float, default=30.0)
    ap.add_argument("--small", action="store_true", help="a quick run: 300 gets, 5 s budget")
    args = ap.parse_args(argv)
    if args.small:
        args.gets, args.pages, args.stream_kb, args.cpu_s = 300, 20, 300, 5.0
    figures = run(gets=args.gets, pages=args.pages, stream_kb=args.stream_kb, cpu_s=args.cpu_s)
    report(
        "pdf_isolation" + ("_small" if args.small else ""),
        figures,
        sane={
            "every idle get timed": figures["idle_get_ms"].get("p50", 0) > 0,
            "gets timed while the PDF was read": figures["during_samples"] > 0,
            "the PDF's item left PROCESSING": figures["pdf_first_transition"] is not None,
        },
    )


if __name__ == "__main__":
    main()
