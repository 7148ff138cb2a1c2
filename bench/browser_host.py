"""What the browser host adds to a capture: the host's round trip against the socket's.

    python -m bench.browser_host [--captures 200] [--kb 100] [--starts 30]

A real daemon, paused (a capture is written and answered, nothing is
processed). The same captures, each a page's HTML of ``--kb`` kilobytes with
a URL of its own, go, interleaved, once straight to the socket (:mod:`readdod.control.client`,
the baseline) and once through ``readdod browser-host`` as a browser drives it
(framed on its stdin, one port kept open, as the popup does). A one-shot
message (``sendNativeMessage``, the link menu) starts a host per message:
``host_start_to_answer_ms`` is spawn → first answer of a ``list``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from bench._common import Daemon, article, percentiles, report
from readdod.capture import native_messaging as nm


def _page(i: int, kb: int) -> str:
    body = ""
    n = 0
    while len(body) < kb * 1024:
        body += f"<p>{article(i * 1000 + n, paragraphs=1)}</p>"
        n += 1
    head = f"<head><title>Page {i}</title></head>"
    return f"<html>{head}<body><article>{body}</article></body></html>"


def _params(i: int, html: str, tag: str) -> dict[str, Any]:
    url = f"https://example.org/{tag}/{i}"
    return {"intent": f"bench {i}", "url": url, "title": f"Page {i}", "html": html}


def _host(d: Daemon) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "readdod", "browser-host", "--socket", str(d.sock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _ask(proc: subprocess.Popen[bytes], reader: nm.FrameReader, msg: dict[str, Any]) -> Any:
    assert proc.stdin is not None
    proc.stdin.write(nm.encode(msg))
    proc.stdin.flush()
    body = reader.next_frame()
    assert body is not None
    answer = msgspec.json.decode(body)
    assert "result" in answer, answer
    return answer["result"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--captures", type=int, default=200)
    ap.add_argument("--kb", type=int, default=100, help="size of each page's HTML")
    ap.add_argument("--starts", type=int, default=30, help="hosts started for one message each")
    ap.add_argument(
        "--small", action="store_true", help="20 captures, 3 host starts: that it runs (CI)"
    )
    args = ap.parse_args()
    if args.small:
        args.captures, args.starts = 20, 3
    pages = [_page(i, args.kb) for i in range(args.captures)]

    with tempfile.TemporaryDirectory() as tmp:
        d = Daemon(Path(tmp), ai={"engine": "fixed"})
        d.start()
        try:
            d.call("pause")
            direct: list[float] = []
            via_host: list[float] = []
            proc = _host(d)
            assert proc.stdout is not None and proc.stdin is not None
            reader = nm.FrameReader(proc.stdout, nm.TO_BROWSER_MAX)
            with d.client() as c:
                # Interleaved, each going first in turn: both paths see the same daemon state.
                for i, html in enumerate(pages):
                    for path in ("direct", "host") if i % 2 else ("host", "direct"):
                        t0 = time.perf_counter()
                        if path == "direct":
                            c.call("capture", _params(i, html, "direct"))
                            direct.append((time.perf_counter() - t0) * 1000)
                        else:
                            msg = {"method": "capture", "id": i, "params": _params(i, html, "host")}
                            _ask(proc, reader, msg)
                            via_host.append((time.perf_counter() - t0) * 1000)
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
            proc.stdout.close()
            starts: list[float] = []
            for _ in range(args.starts):
                t0 = time.perf_counter()
                one = _host(d)
                assert one.stdout is not None and one.stdin is not None
                _ask(one, nm.FrameReader(one.stdout, nm.TO_BROWSER_MAX), {"method": "list"})
                starts.append((time.perf_counter() - t0) * 1000)
                one.stdin.close()
                one.wait(timeout=60)
                one.stdout.close()
            assert d.stop() == 0
        finally:
            d.close()

    base, host = percentiles(direct), percentiles(via_host)
    report(
        "browser_host_small" if args.small else "browser_host",
        {
            "captures": args.captures,
            "page_kb": args.kb,
            "capture_rtt_socket_ms": base,
            "capture_rtt_browser_host_ms": host,
            "ratio_host_vs_socket_p50": round(host["p50"] / base["p50"], 2),
            "host_start_to_answer_ms": percentiles(starts),
        },
        sane={
            "every capture timed both ways": len(direct) == len(via_host) == args.captures,
            "every host start answered": len(starts) == args.starts,
            "round trips above zero": base["p50"] > 0 and host["p50"] > 0,
        },
    )


if __name__ == "__main__":
    main()
