"""Metrics: the real daemon's OpenMetrics text, read with prometheus_client's own parsers.

Over the socket (``metrics``), the CLI (``readdod metrics``) and the optional
HTTP endpoint on 127.0.0.1; values are compared before and after real work.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text

from readdod.errors import ConfigError
from readdod.metrics.meter import Histogram, Meter
from readdod.settings import config
from readdod.settings import listen as address
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config

TEXT = (
    "Group commit batches many small transactions into one fsync. "
    "It keeps throughput high while every acknowledged write stays durable.\n\n"
    "SQLite in WAL mode lets readers and a writer work at the same time."
)
STEPS = ("extract", "summarize", "score", "todos", "card")

#: (metric name, labels without ``daemon``) -> value; histogram samples keep their suffix.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str, *, openmetrics: bool = True) -> tuple[Samples, dict[str, str], set[str]]:
    """Every sample, the type of every family, and the ``daemon`` labels seen."""
    out: Samples = {}
    types: dict[str, str] = {}
    daemons: set[str] = set()
    parse = parse_openmetrics if openmetrics else parse_text
    for family in parse(text):
        types[family.name] = family.type
        for s in family.samples:
            labels = dict(s.labels)
            daemons.add(labels.pop("daemon", "<none>"))
            out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out, types, daemons


def value(got: Samples, name: str, **labels: str) -> float:
    return got[(name, tuple(sorted(labels.items())))]


def free_port() -> int:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def scrape(
    port: int, *, accept: str | None = None, method: str = "GET", path: str = "/metrics"
) -> Any:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    if accept:
        req.add_header("Accept", accept)
    return urllib.request.urlopen(req, timeout=10)


def capture_all(d: DaemonProc, n: int, intent: str = "learn how durable writes stay fast") -> None:
    for i in range(n):
        d.call("capture", {"text": f"{TEXT}\n\nNote {i}.", "intent": intent})
    d.wait_status("READY", n)


@pytest.fixture
def fixed_daemon(tmp_path: Path, daemons: list[DaemonProc]) -> Iterator[tuple[DaemonProc, int]]:
    port = free_port()
    d = DaemonProc(
        tmp_path,
        ai={"engine": "fixed", "fixed_delay_ms": 60},
        # A beat every 0.1 s: an item's five steps take 0.3 s, so its lease is renewed.
        daemon={"skip_below": 0, "lease_ttl_s": 0.3},
        metrics={"listen": f"127.0.0.1:{port}"},
    )
    daemons.append(d)
    yield d.start(), port


def test_socket_metrics_parse_and_move_with_the_work(fixed_daemon: tuple[DaemonProc, int]) -> None:
    d, _ = fixed_daemon
    owner = d.call("ping")["worker_id"]
    res = d.call("metrics")
    assert res["content_type"].startswith("application/openmetrics-text")
    assert res["text"].endswith("# EOF\n")
    before, types, daemons = samples(res["text"])
    assert daemons == {owner}, "every sample is labelled by the daemon that made it"
    assert types["readdod_items"] == "gauge"
    assert types["readdod_claims"] == "counter"
    assert types["readdod_step_duration_seconds"] == "histogram"
    assert types["readdod_daemon"] == "info"
    assert value(before, "readdod_items", status="READY") == 0
    assert value(before, "readdod_claims_total") == 0
    assert value(before, "readdod_circuit_state", state="closed") == 1

    capture_all(d, 4)
    after, _, _ = samples(d.call("metrics")["text"])
    assert value(after, "readdod_items", status="READY") == 4
    assert value(after, "readdod_items", status="QUEUED") == 0
    assert value(after, "readdod_claims_total") == 4
    assert value(after, "readdod_lease_renewals_total") > 0
    assert value(after, "readdod_lease_losses_total") == 0
    assert value(after, "readdod_in_flight") == 0
    for step in STEPS:
        count = value(after, "readdod_step_duration_seconds_count", step=step)
        assert count == 4, step
        inf = value(after, "readdod_step_duration_seconds_bucket", step=step, le="+Inf")
        assert inf == count
    # The fixed engine waits 60 ms in each AI step: no such step can land below 50 ms.
    assert value(after, "readdod_step_duration_seconds_bucket", step="summarize", le="0.05") == 0
    assert value(after, "readdod_step_duration_seconds_sum", step="summarize") >= 4 * 0.06
    assert value(after, "readdod_model_requests_total") == 0  # the fixed engine asks no server


def test_paused_and_oldest_queued_age_follow_the_daemon(
    fixed_daemon: tuple[DaemonProc, int],
) -> None:
    d, _ = fixed_daemon
    d.call("pause")
    d.call("capture", {"text": TEXT, "intent": "wait in the queue while paused"})
    got, _, _ = samples(d.call("metrics")["text"])
    assert value(got, "readdod_paused") == 1
    assert value(got, "readdod_items", status="QUEUED") == 1
    first = value(got, "readdod_oldest_queued_age_seconds")
    assert first >= 0
    # The age grows with the clock: read until it has (no sleep decides the outcome).
    for _ in range(10_000):
        later, _, _ = samples(d.call("metrics")["text"])
        if value(later, "readdod_oldest_queued_age_seconds") > first:
            break
    else:
        pytest.fail("the oldest queued age never grew")
    d.call("resume")
    d.wait_status("READY", 1)
    done, _, _ = samples(d.call("metrics")["text"])
    assert value(done, "readdod_paused") == 0
    assert value(done, "readdod_oldest_queued_age_seconds") == 0


def test_http_endpoint_negotiates_the_format_and_refuses_the_rest(
    fixed_daemon: tuple[DaemonProc, int],
) -> None:
    d, port = fixed_daemon
    capture_all(d, 1)
    with scrape(port, accept="application/openmetrics-text; version=1.0.0") as r:
        assert r.headers["Content-Type"].startswith("application/openmetrics-text")
        om, _, _ = samples(r.read().decode())
    with scrape(port) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text, _, _ = samples(r.read().decode(), openmetrics=False)
    assert value(om, "readdod_items", status="READY") == 1
    assert value(text, "readdod_items", status="READY") == 1
    with scrape(port, method="HEAD") as r:
        assert r.status == 200 and r.read() == b""
    for method, path, status in (("GET", "/nope", 404), ("POST", "/metrics", 405)):
        with pytest.raises(urllib.error.HTTPError) as err:
            scrape(port, method=method, path=path)
        assert err.value.code == status
        err.value.close()
    # A client that sends garbage, or nothing but a connection, leaves the daemon serving.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"\x00\x01 nonsense\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        pass
    assert d.proc is not None and d.call("ping")["pid"] == d.proc.pid


def test_cli_prints_the_text_a_scraper_reads(fixed_daemon: tuple[DaemonProc, int]) -> None:
    d, _ = fixed_daemon
    out = run_cli(d, "metrics")
    assert out.returncode == 0, out.stderr
    got, _, _ = samples(out.stdout)
    assert value(got, "readdod_paused") == 0
    old = run_cli(d, "metrics", "--format", "prometheus")
    assert old.returncode == 0, old.stderr
    assert "# EOF" not in old.stdout
    samples(old.stdout, openmetrics=False)


def test_model_requests_tokens_and_errors_are_counted(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with FakeOpenAI() as fake:
        d = DaemonProc(
            tmp_path, ai=ai_config(fake.base_url), daemon={"skip_below": 0}, **NO_AUTO_RETRY
        )
        daemons.append(d)
        d.start(env={"FAKE_LLM_KEY": "k"})
        capture_all(d, 1, intent="learn group commit fake:500x1@summary")
        got, _, _ = samples(d.call("metrics")["text"])
        stats: dict[str, Any] = d.call("stats")
        assert value(got, "readdod_model_requests_total") == len(fake.completions())
        assert value(got, "readdod_model_errors_total", error_code="AI_PROVIDER_ERROR") == 1
        tokens = stats["tokens"]
        assert tokens["total"] > 0
        assert value(got, "readdod_model_tokens_total", kind="prompt") == tokens["prompt"]
        assert value(got, "readdod_model_tokens_total", kind="completion") == tokens["completion"]


@pytest.mark.parametrize(
    ("listen", "allow_remote", "needle"),
    [
        ("0.0.0.0:9464", False, "not a loopback address"),
        ("[::]:9464", False, "not a loopback address"),
        ("example.org:9464", False, "not a loopback address"),
        ("127.0.0.1:0", False, "between 1 and 65535"),
        ("127.0.0.1", False, "not host:port"),
        (":9464", False, "names no host"),
        ("::1:9464", False, "[::1]:9464"),
        ("127.0.0.1:http", False, "not a number"),
    ],
)
def test_a_bad_listen_address_is_refused_naming_the_key(
    listen: str, allow_remote: bool, needle: str
) -> None:
    raw = f'[metrics]\nlisten = "{listen}"\nallow_remote = {str(allow_remote).lower()}\n'
    with pytest.raises(ConfigError) as err:
        config.parse(raw, "readdod.toml")
    assert "metrics" in str(err.value) and "listen" in str(err.value)
    assert needle in str(err.value)


def test_remote_and_loopback_addresses_that_are_allowed() -> None:
    remote = config.parse('[metrics]\nlisten = "0.0.0.0:9464"\nallow_remote = true\n')
    assert remote.metrics.listen == "0.0.0.0:9464"
    for ok in ("127.0.0.1:9464", "[::1]:9464", "localhost:9464", "127.8.9.10:1"):
        assert address.check(ok, allow_remote=False).port in (9464, 1)


def test_a_remote_listen_address_stops_the_daemon_before_it_starts(tmp_path: Path) -> None:
    d = DaemonProc(tmp_path, metrics={"listen": "0.0.0.0:9464"})
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "serve", "--config", str(d.config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "metrics.allow_remote" in out.stderr
    assert not d.sock.exists()


def test_a_port_in_use_stops_the_daemon_with_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        d = DaemonProc(tmp_path, metrics={"listen": f"127.0.0.1:{port}"})
        out = subprocess.run(
            [sys.executable, "-m", "readdod", "serve", "--config", str(d.config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode != 0
    assert "metrics.listen" in out.stderr and "free port" in out.stderr


def test_histogram_buckets_are_cumulative_and_end_at_infinity() -> None:
    h = Histogram((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 2.0, 3.0):
        h.observe(v)
    assert h.cumulative() == [(0.1, 2), (1.0, 3), (float("inf"), 5)]
    assert h.count == 5 and h.total == pytest.approx(5.65)


def test_meter_counts_what_committed_notes_say() -> None:
    m = Meter()
    m.observe("item.transition", {"from": "QUEUED", "to": "PROCESSING"})
    m.observe("item.transition", {"from": "PROCESSING", "to": "READY"})
    m.observe("step.finished", {"step": "summary", "duration_ms": 1500.0})
    m.observe("step.finished", {"step": "summary"})  # no duration: not a sample
    m.observe("lease.lost", {"item_id": "x"})
    assert (m.claims, m.fenced_writes) == (1, 1)
    assert m.steps["summary"].count == 1 and m.steps["summary"].total == 1.5
