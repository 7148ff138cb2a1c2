"""A storm of misbehaving servers under load, through the real daemon.

Dozens of items at once: half fetch pages that reset, stall, drip, never end,
explode when unzipped or redirect in circles; the other half fetch a good
page but meet a model server that rate-limits, crashes, hangs, resets the
connection or answers nonsense. Every item must end in its documented state
with its documented error code, none may be left behind, and the daemon must
keep answering on its socket all along.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.fake_openai import FakeOpenAI, ai_config
from tests.invariants import check
from tests.pageserver import (
    ARTICLE,
    PageServer,
    add_hostile_pages,
    fast_fetch,
    serve,
)

COPIES = 3
DONE = ("READY", "FAILED_EXTRACTION", "FAILED_AI")
FETCH = fast_fetch(attempts=2, per_host_limit=64)


@dataclass(frozen=True)
class Case:
    path: str
    intent: str
    status: str
    error_code: str | None
    #: Whether the run must show in-step retries (the fault was met and got over).
    retried: bool = False


def _cases(srv: PageServer) -> list[Case]:
    srv.page("/article", ARTICLE)
    add_hostile_pages(srv)
    srv.page("/error", "<p>oops</p>", status=500)
    fetch_failed = "EXTRACTION_FETCH_FAILED"
    pages = [
        Case("/article", "read it", "READY", None),
        Case("/reset", "read it", "FAILED_EXTRACTION", fetch_failed, True),
        Case("/slow-head", "read it", "FAILED_EXTRACTION", fetch_failed, True),
        Case("/slow-body", "read it", "FAILED_EXTRACTION", fetch_failed, True),
        Case("/endless", "read it", "FAILED_EXTRACTION", "EXTRACTION_TOO_LARGE"),
        Case("/bomb", "read it", "FAILED_EXTRACTION", "EXTRACTION_TOO_LARGE"),
        Case("/loop-a", "read it", "FAILED_EXTRACTION", fetch_failed),
        Case("/error", "read it", "FAILED_EXTRACTION", fetch_failed, True),
    ]
    model = [
        Case("/article", "fake:429x2@summary", "READY", None, True),
        Case("/article", "fake:503x1@score", "READY", None, True),
        Case("/article", "fake:resetx1@todos", "READY", None, True),
        Case("/article", "fake:429@summary", "FAILED_AI", "AI_RATE_LIMITED", True),
        Case("/article", "fake:500@summary", "FAILED_AI", "AI_PROVIDER_ERROR", True),
        Case("/article", "fake:reset@score", "FAILED_AI", "AI_PROVIDER_ERROR", True),
        Case("/article", "fake:garbage@todos", "FAILED_AI", "AI_PROVIDER_ERROR", True),
        Case("/article", "fake:hang@score", "FAILED_AI", "AI_TIMEOUT", True),
        Case("/article", "fake:badjson@todos", "FAILED_AI", "AI_PARSE_ERROR"),
        Case("/article", "fake:invalid@score", "FAILED_AI", "AI_SCHEMA_INVALID"),
    ]
    return pages + model


class _Pinger(threading.Thread):
    """Pings the daemon over and over on its own connection; keeps the slowest answer."""

    def __init__(self, d: DaemonProc) -> None:
        super().__init__(daemon=True)
        self.d = d
        self.stop = threading.Event()
        self.count = 0
        self.slowest = 0.0
        self.errors: list[str] = []

    def run(self) -> None:
        with Client(self.d.sock, timeout_s=30) as c:
            while not self.stop.wait(0.05):
                started = time.monotonic()
                try:
                    c.call("ping")
                except Exception as exc:
                    self.errors.append(repr(exc))
                    return
                self.slowest = max(self.slowest, time.monotonic() - started)
                self.count += 1


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(hang_s=5.0) as server:
        yield server


def test_every_item_ends_right_in_a_storm_of_faults(
    tmp_path: Path,
    fake: FakeOpenAI,
    daemons: list[DaemonProc],
    record_property: Callable[[str, object], None],
) -> None:
    with serve() as srv:
        cases = _cases(srv)
        d = DaemonProc(
            tmp_path,
            ai=ai_config(fake.base_url, concurrency=32),
            fetch=FETCH,
            daemon={"skip_below": 0, "concurrency": 64, "batch_size": 20},
            **NO_AUTO_RETRY,
        )
        daemons.append(d)
        d.start(env={"FAKE_LLM_KEY": "fk-test"})
        pinger = _Pinger(d)
        pinger.start()
        want: dict[str, Case] = {}
        with d.client() as c:
            for n in range(COPIES):
                for k, case in enumerate(cases):
                    tag = f"#c{k}n{n}"
                    intent = f"{case.intent}{tag}" if "fake:" in case.intent else case.intent
                    got = c.call(
                        "capture", {"url": srv.url(f"{case.path}?n={n}"), "intent": f"{intent} {n}"}
                    )
                    assert got["created"], case
                    want[got["item"]["id"]] = case
        d.wait_log(
            lambda e: e["event"] == "item.transition" and e.get("to") in DONE,
            count=len(want),
            timeout=90,
        )
        pinger.stop.set()
        pinger.join(30)

        retried = Counter(e["item_id"] for e in d.logs if e["event"] == "step.retrying")
        wrong = []
        for item_id, case in want.items():
            item: dict[str, Any] = d.call("get", {"id": item_id})["item"]
            code = (item["failure"] or {}).get("error_code")
            if (item["status"], code) != (case.status, case.error_code):
                wrong.append(f"{case}: {item['status']} {code} {item['failure']}")
            elif case.retried and not retried[item_id]:
                wrong.append(f"{case}: never retried inside its step")
        assert wrong == []
        listed = d.call("list", {"status": ["QUEUED", "PROCESSING", "CAPTURED"]})["items"]
        assert listed == []

        assert pinger.errors == [] and pinger.count > 10
        assert pinger.slowest < 2.0, f"a ping took {pinger.slowest:.2f} s"
        faults = sum(fake.counts.values()) + sum(
            srv.hits(p) for p in ({c.path for c in cases} | {"/loop-b"}) - {"/article"}
        )
        record_property(
            "figures",
            f"storm: {len(want)} items, {faults} faults injected,"
            f" {pinger.count} pings, slowest {pinger.slowest * 1000:.0f} ms",
        )
        assert d.stop() == 0
    assert check(d.db_path, acknowledged=list(want)) == []
