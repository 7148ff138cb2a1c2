"""Health and stats: the core on a real SQLite file with a clock moved by
hand, and `readdod health` / `stats` against the real daemon."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod.core import Core
from readdod.errors import StepError
from readdod.items.models import ArtifactMeta, CaptureRequest
from readdod.runtime import collector
from readdod.runtime.clock import ManualClock
from readdod.settings.config import DaemonConfig
from readdod.status.health import Thresholds, percentile, thresholds_from
from readdod.store import SqliteStore
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.payloads import CARD, META, SCORE, SUMMARY, TODOS

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode
HOUR = 3600 * 1000


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock())


def _clock(o: Core) -> ManualClock:
    assert isinstance(o.clock, ManualClock)
    return o.clock


async def _succeed(o: Core, took_ms: int) -> None:
    await o.commands.capture(CaptureRequest(intent="x", text="body"))
    [c] = await o.leases.claim("w", 1, 30_000)
    _clock(o).advance(took_ms)
    for step, payload in [("summary", SUMMARY), ("score", SCORE), ("todos", TODOS), ("card", CARD)]:
        await o.book.put_artifact(c.lease, step, enc(payload), META)
    item = await o.book.complete(c.lease)
    assert item is not None and item.status == "READY"


async def _fail(o: Core) -> None:
    await o.commands.capture(CaptureRequest(intent="x", text="body"))
    [c] = await o.leases.claim("w", 1, 30_000)
    item = await o.book.fail(c.lease, "summary", StepError("the model said no", retryable=False))
    assert item is not None and item.status == "FAILED_AI"


async def test_health_moves_from_ok_to_degraded_to_unhealthy_with_reasons(
    orch: Core,
) -> None:
    t = Thresholds()

    async def check() -> Any:
        return await orch.reads.health(t, circuit="closed", paused=False)

    report = await check()
    assert (report.status, report.reasons) == ("ok", [])
    for _ in range(5):
        await _succeed(orch, took_ms=60_000)
    report = await check()
    assert report.status == "ok"
    assert report.metrics.success_rate_24h == 1.0 and report.metrics.avg_run_s_24h == 60.0

    await _fail(orch)  # 5 of 6 succeeded: 83 %
    report = await check()
    assert report.status == "degraded"
    assert report.checks["success_rate_24h"].status == "degraded"
    assert report.reasons == ["5 of 6 runs in 24 h succeeded (83%, at most 95%)"]

    await _fail(orch)
    await _fail(orch)  # 5 of 8: 62 %, and 3 failed items
    report = await check()
    assert report.status == "unhealthy"
    assert report.checks["success_rate_24h"].status == "unhealthy"
    assert report.checks["failed_items"].status == "degraded"
    assert any("failed items is 3" in r for r in report.reasons)

    # A day later the window is empty; the failed items are still there.
    _clock(orch).advance(25 * HOUR)
    report = await check()
    assert report.metrics.runs_finished_24h == 0 and report.metrics.failures_24h == 0
    assert report.status == "degraded"
    assert [name for name, c in report.checks.items() if c.status != "ok"] == ["failed_items"]


async def test_slow_runs_backlog_and_old_queue(orch: Core) -> None:
    t = Thresholds(min_runs=1, backlog_degraded=2, backlog_unhealthy=3)
    await _succeed(orch, took_ms=400_000)
    report = await orch.reads.health(t, circuit="closed", paused=False)
    assert report.status == "degraded" and report.checks["avg_run_s_24h"].value == 400.0
    assert report.reasons == ["the average run is 400 s, at or above 300 s"]

    await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    await orch.commands.capture(CaptureRequest(intent="y", text="body"))
    _clock(orch).advance(2 * HOUR)
    report = await orch.reads.health(t, circuit="closed", paused=False)
    assert report.metrics.backlog == 2 and report.metrics.oldest_queued_s == 7200.0
    assert report.checks["backlog"].status == "degraded"
    assert report.checks["oldest_queued_s"].status == "degraded"
    for _ in range(2):
        await orch.commands.capture(CaptureRequest(intent="z", text="body"))
    report = await orch.reads.health(t, circuit="closed", paused=False)
    assert report.checks["backlog"].status == "unhealthy" and report.status == "unhealthy"


async def test_circuit_and_pause(orch: Core) -> None:
    t = Thresholds()
    assert (await orch.reads.health(t, circuit="open", paused=False)).status == "unhealthy"
    half = await orch.reads.health(t, circuit="half_open", paused=False)
    assert half.status == "degraded" and "half open" in half.reasons[0]
    paused = await orch.reads.health(t, circuit="closed", paused=True)
    assert paused.status == "degraded" and "readdod resume" in paused.reasons[0]


def test_thresholds_come_from_the_daemon_section() -> None:
    t = thresholds_from(DaemonConfig(health_backlog_degraded=1, health_success_rate_unhealthy=0.5))
    assert (t.backlog_degraded, t.success_rate_unhealthy) == (1, 0.5)
    assert t.failed_items_unhealthy == DaemonConfig().health_failed_items_unhealthy


async def test_stats_count_statuses_runs_step_times_and_tokens(orch: Core) -> None:
    durations = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0]
    for ms in durations:
        await orch.commands.capture(CaptureRequest(intent="x", text="body"))
        [c] = await orch.leases.claim("w", 1, 30_000)
        meta = ArtifactMeta(run_id=None, engine="test", prompt_tokens=100, completion_tokens=7)
        await orch.book.put_artifact(c.lease, "summary", enc(SUMMARY), meta, duration_ms=ms)
        await orch.book.fail(c.lease, "score", StepError("no", retryable=False))
    await orch.commands.capture(CaptureRequest(intent="x", text="body"))
    stats = await orch.reads.stats()
    assert stats.items_by_status == {"FAILED_AI": 10, "QUEUED": 1} and stats.items_total == 11
    assert stats.runs_by_outcome == {"failed": 10, "queued": 1}
    summary = stats.step_durations_ms["summary"]
    assert (summary.count, summary.p50_ms, summary.p95_ms) == (10, 50.0, 100.0)
    assert (stats.tokens.prompt, stats.tokens.completion, stats.tokens.total) == (1000, 70, 1070)


async def test_stats_report_store_counters_that_grow_with_work(orch: Core) -> None:
    first = await orch.reads.stats()
    assert first.store is not None
    await _succeed(orch, took_ms=1_000)
    second = await orch.reads.stats()
    assert second.store is not None
    a, b = first.store, second.store
    units, transactions = b.units - a.units, b.transactions - a.transactions
    # capture, claim, four artifacts (the last with the gate): at least six units of work.
    assert units >= 6 and 1 <= transactions <= units
    assert b.statements - a.statements > 2 * transactions  # more than BEGIN and COMMIT
    assert b.reads > a.reads and b.read_statements > a.read_statements


def test_percentile_is_nearest_rank() -> None:
    assert percentile([3.0], 0.5) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0


# --- through the daemon ------------------------------------------------------


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>gone</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def page_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _cli(d: DaemonProc, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "readdod", *args, "--config", str(d.config)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_health_exit_codes_and_stats_from_the_cli(tmp_path: Path, page_server: str) -> None:
    d = DaemonProc(
        tmp_path,
        ai={"engine": "fixed"},
        fetch={"allow_private": True},
        daemon={"health_failed_items_unhealthy": 0, "skip_below": 0},
    )
    try:
        d.start()
        d.call("capture", {"text": "a text worth reading", "intent": "x"})
        d.wait_status("READY", count=1)
        ok = _cli(d, "health")
        assert ok.returncode == 0 and ok.stdout.startswith("health: ok"), ok
        assert d.call("pause") == {"paused": True}
        degraded = _cli(d, "health", "--json")
        assert degraded.returncode == 1, degraded
        report = json.loads(degraded.stdout)
        assert report["status"] == "degraded" and report["checks"]["paused"]["status"] == "degraded"
        d.call("resume")

        d.call("capture", {"url": f"{page_server}/missing", "intent": "x"})
        d.wait_log(
            lambda e: e["event"] == "item.transition" and str(e.get("to", "")).startswith("FAILED_")
        )
        bad = _cli(d, "health", "--json")
        assert bad.returncode == 2, bad
        report = json.loads(bad.stdout)
        assert report["status"] == "unhealthy" and report["checks"]["failed_items"]["value"] == 1
        assert any("failed items" in r for r in report["reasons"])

        stats = _cli(d, "stats", "--json")
        assert stats.returncode == 0, stats
        got = json.loads(stats.stdout)
        assert got["items_total"] == 2 and got["runs_by_outcome"]["succeeded"] == 1
        steps = got["step_durations_ms"]
        assert set(steps) == {"extraction", "summary", "score", "todos", "card"}
        assert all(s["count"] == 1 and s["p50_ms"] <= s["p95_ms"] for s in steps.values())
        store = got["store"]
        assert set(store) == {"transactions", "units", "statements", "reads", "read_statements"}
        assert 0 < store["transactions"] <= store["units"] < store["statements"]
        again = json.loads(_cli(d, "stats", "--json").stdout)["store"]
        assert again["reads"] > store["reads"]  # the first `stats` read the store
        # The daemon's own collector settings (readdod/runtime/collector.py), not CPython's
        # defaults.
        gc = got["collector"]
        assert gc["thresholds"] == list(collector.THRESHOLDS) != [700, 10, 10]
        assert len(gc["collections"]) == 3 and gc["frozen"] > 1000
        human = _cli(d, "stats")
        assert human.returncode == 0 and "items: 2" in human.stdout
        assert "store:" in human.stdout and "garbage collections:" in human.stdout
        assert d.stop() == 0
    finally:
        d.close()


#: Too short for the offline engine to summarise: its run fails at once (AI_INPUT_TOO_SHORT).
TOO_SHORT = "A note.\n\nToo short."
WORTH_READING = " ".join(
    f"Step {k} of tuning SQLite write-ahead logging keeps readers and writers apart."
    for k in range(12)
)


def test_a_quiet_daemons_few_runs_still_count(tmp_path: Path) -> None:
    """Two runs, both failed, are unhealthy; one failure among few is degraded; the
    reason names the counts. (The rate's 80 %/95 % limits need ``min_runs`` runs.)"""
    d = DaemonProc(tmp_path, daemon={"skip_below": 0}, **NO_AUTO_RETRY)
    try:
        d.start()
        for n in range(2):
            d.call("capture", {"text": f"{TOO_SHORT} {n}", "intent": "tune WAL mode"})
        d.wait_status("FAILED_AI", count=2)
        out = _cli(d, "health", "--json")
        assert out.returncode == 2, out
        report = json.loads(out.stdout)
        check = report["checks"]["success_rate_24h"]
        assert (report["status"], check["status"], check["value"]) == ("unhealthy", "unhealthy", 0)
        assert "all 2 runs in 24 h failed (0 of 2 succeeded" in check["reason"]
        assert check["reason"] in report["reasons"]
        # Nothing else is wrong: 2 failed items are below every other limit.
        assert [k for k, c in report["checks"].items() if c["status"] != "ok"] == [
            "success_rate_24h"
        ]
        human = _cli(d, "health")
        assert human.returncode == 2 and "all 2 runs in 24 h failed" in human.stdout, human

        for n in range(2):
            d.call("capture", {"text": f"{WORTH_READING} {n}", "intent": "tune WAL mode"})
        d.wait_status("READY", count=2)
        out = _cli(d, "health", "--json")
        assert out.returncode == 1, out
        check = json.loads(out.stdout)["checks"]["success_rate_24h"]
        assert (check["status"], check["value"]) == ("degraded", 0.5)
        assert check["reason"].startswith("2 of 4 runs in 24 h failed (2 of 4 succeeded")
        assert d.stop() == 0
    finally:
        d.close()


def test_an_open_ai_circuit_makes_the_daemon_unhealthy(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on: every request is refused
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    d = DaemonProc(
        tmp_path,
        ai={
            "engine": "openai",
            "base_url": dead,
            "attempts": 2,
            "circuit_failures": 2,
            "retry_initial_s": 0.01,
            "retry_max_s": 0.01,
            "circuit_probe_s": 600.0,
        },
    )
    try:
        d.start()
        assert d.call("health")["checks"]["ai_circuit"]["value"] == "closed"
        d.call(
            "capture",
            {"text": "a text worth reading, long enough to summarise " * 5, "intent": "x"},
        )
        d.wait_log(lambda e: e["event"] == "circuit.opened")
        out = _cli(d, "health", "--json")
        assert out.returncode == 2, out
        report = json.loads(out.stdout)
        assert report["checks"]["ai_circuit"] == {
            "status": "unhealthy",
            "value": "open",
            "reason": "the AI provider's circuit is open: it keeps failing, so AI steps wait",
        }
        # The work is parked, not failed.
        assert report["metrics"]["failed_items"] == 0
        assert d.stop() == 0
    finally:
        d.close()
