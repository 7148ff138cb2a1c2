"""Every class of fetch failure, through the real daemon, ends in its documented state.

One daemon (loopback allowed, tiny waits and timeouts) fetches a loopback
server whose paths misbehave in every way the fetcher knows; each item must
end READY or FAILED_EXTRACTION with the documented error code, and the runs
that were retried inside the step must say how often. Two more daemons show
the address guard: by default the loopback server itself is refused, and with
one network allowed a redirect out of it to a private address is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.daemon_proc import DaemonProc
from tests.pageserver import (
    ARTICLE,
    ARTICLE_TEXT,
    ENCODED,
    PageServer,
    add_hostile_pages,
    encoded_page,
    fast_fetch,
    serve,
)

ATTEMPTS = 3
FETCH = fast_fetch(attempts=ATTEMPTS)
DONE = ("READY", "FAILED_EXTRACTION", "FAILED_AI")


@dataclass(frozen=True)
class Case:
    path: str
    status: str
    error_code: str | None = None
    retries: int = 0
    #: Words the failure message (or, for READY, the extracted text) must contain.
    says: str = ""


def _site(srv: PageServer) -> list[Case]:
    srv.page("/article", ARTICLE)
    # A chain of exactly fetch.max_redirects hops is followed; one hop more is not.
    srv.redirect("/moved", "/moved-2", 301)
    srv.redirect("/moved-2", srv.url("/moved-3"), 302)
    srv.redirect("/moved-3", "/article", 307)
    srv.redirect("/far", "/moved")
    srv.page("/missing", "<p>no</p>", status=404)
    srv.page("/gone", "<p>gone</p>", status=410)
    srv.page("/error", "<p>oops</p>", status=500)
    srv.page("/limited", "<p>slow down</p>", status=429, headers={"Retry-After": "0"})
    add_hostile_pages(srv)
    srv.page("/untyped", ARTICLE, content_type=None)
    srv.page("/photo", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, content_type="image/png")
    srv.page("/liar", b"%PDF-1.7\x00\x00", content_type="text/html")
    srv.page(
        "/wall",
        "<title>Just a moment...</title><script src='/cdn-cgi/challenge-platform/x.js'></script>",
        status=503,
        headers={"Server": "cloudflare", "cf-mitigated": "challenge"},
    )
    cases = [
        Case("/article", "READY", says=ARTICLE_TEXT[2]),
        Case("/moved", "READY", says=ARTICLE_TEXT[0]),
        Case("/missing", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", 0, "HTTP 404"),
        Case("/gone", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", 0, "HTTP 410"),
        Case("/error", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", ATTEMPTS - 1, "HTTP 500"),
        Case("/limited", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", ATTEMPTS - 1, "HTTP 429"),
        Case("/slow-head", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", ATTEMPTS - 1, "0.3"),
        Case("/slow-body", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", ATTEMPTS - 1, "took"),
        Case("/reset", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", ATTEMPTS - 1, "broke off"),
        Case("/untyped", "READY", says=ARTICLE_TEXT[1]),
        Case("/endless", "FAILED_EXTRACTION", "EXTRACTION_TOO_LARGE", 0, "fetch.max_bytes"),
        Case("/bomb", "FAILED_EXTRACTION", "EXTRACTION_TOO_LARGE", 0, "fetch.max_bytes"),
        Case("/loop-a", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", 0, "redirected"),
        Case("/far", "FAILED_EXTRACTION", "EXTRACTION_FETCH_FAILED", 0, "more than 3"),
        Case("/photo", "FAILED_EXTRACTION", "EXTRACTION_UNSUPPORTED_TYPE", 0, "image/png"),
        Case("/liar", "FAILED_EXTRACTION", "EXTRACTION_UNSUPPORTED_TYPE", 0, "binary"),
        Case("/wall", "FAILED_EXTRACTION", "EXTRACTION_BLOCKED_BY_SITE", 0, "--html FILE"),
    ]
    for key in ENCODED:
        body, _ = encoded_page(key, declare="none")
        srv.page(f"/enc-{key}", body, content_type="text/html")
        cases.append(Case(f"/enc-{key}", "READY", says=ENCODED[key][1][:40]))
    return cases


def _finish(d: DaemonProc, srv: PageServer, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Capture every path, wait until each item is done, and return ``get`` per path."""
    with d.client() as c:
        ids = {
            p: c.call("capture", {"url": srv.url(p), "intent": "read it"})["item"]["id"]
            for p in paths
        }
    d.wait_log(lambda e: e["event"] == "item.transition" and e.get("to") in DONE, count=len(ids))
    with d.client() as c:
        return {p: c.call("get", {"id": i}) for p, i in ids.items()}


def test_each_fetch_outcome_ends_in_its_documented_state(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with serve() as srv:
        cases = _site(srv)
        d = DaemonProc(tmp_path, ai={"engine": "fixed"}, fetch=FETCH)
        daemons.append(d)
        d.start()
        got = _finish(d, srv, [case.path for case in cases])
        assert d.stop() == 0
    problems = []
    for case in cases:
        item, runs = got[case.path]["item"], got[case.path]["runs"]
        failure = item["failure"] or {}
        seen = (item["status"], failure.get("error_code"), runs[0]["retries"])
        if seen != (case.status, case.error_code, case.retries):
            problems.append(f"{case.path}: {seen} {failure.get('message')}")
        elif case.status == "READY":
            text = got[case.path]["artifacts"]["extraction"]["payload"]["text"]
            if case.says not in text:
                problems.append(f"{case.path}: {case.says!r} not in {text[:200]!r}")
        elif case.says not in failure["message"]:
            problems.append(f"{case.path}: {case.says!r} not in {failure['message']!r}")
    assert not problems, "\n".join(problems)
    with d.db() as db:
        retried = db.execute(
            "SELECT count(*) FROM runs WHERE retries = ? AND last_error_code = ?",
            (ATTEMPTS - 1, "EXTRACTION_FETCH_FAILED"),
        ).fetchone()[0]
        events = [
            json.loads(row[0])
            for row in db.execute("SELECT detail FROM events WHERE detail LIKE '%retrying%'")
        ]
    assert retried == sum(1 for case in cases if case.retries)
    assert len(events) == retried * (ATTEMPTS - 1)
    assert {e["state"] for e in events} == {"retrying"}


def test_the_guard_refuses_loopback_by_default_and_private_redirect_targets(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with serve() as srv:
        srv.page("/article", ARTICLE)
        srv.redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
        srv.redirect("/to-other-loopback", f"http://127.0.0.2:{srv.port}/article")
        for sub in ("default", "narrow"):
            (tmp_path / sub).mkdir()
        plain = DaemonProc(tmp_path / "default", ai={"engine": "fixed"})
        narrow = DaemonProc(
            tmp_path / "narrow",
            ai={"engine": "fixed"},
            fetch={"allow_networks": ["127.0.0.1/32"], "attempts": 1},
        )
        daemons.extend([plain, narrow])
        plain.start()
        narrow.start()
        by_default = _finish(plain, srv, ["/article"])
        assert srv.hits("/article") == 0  # refused before any connection
        narrowed = _finish(narrow, srv, ["/to-metadata", "/to-other-loopback", "/article"])
        assert plain.stop() == 0 and narrow.stop() == 0
    item = by_default["/article"]["item"]
    assert item["status"] == "FAILED_EXTRACTION"
    assert item["failure"]["error_code"] == "EXTRACTION_BLOCKED_ADDRESS"
    assert item["failure"]["retryable"] is False
    assert "fetch.allow_private" in item["failure"]["message"]
    for path in ("/to-metadata", "/to-other-loopback"):
        failure = narrowed[path]["item"]["failure"]
        assert failure["error_code"] == "EXTRACTION_BLOCKED_ADDRESS", failure
    assert narrowed["/article"]["item"]["status"] == "READY"
    assert srv.hits("/article") == 1  # only the allowed network's direct capture
