"""A daemon whose PostgreSQL server is away: SIGTERM still ends it within its
shutdown grace, whatever it was doing; the libraries' own log lines (psycopg's
pool) come out as readdod's JSON lines, rate-limited, never as plain text; a
refused login at start ends the daemon at once, saying why; a server down at
start is waited for, with each try logged and the waits between them bounded.

The real daemon, on a cluster of the test's own that the test stops."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg
from tests.daemon_proc import DaemonProc

#: The daemon's shutdown grace in these tests; SIGTERM must end it within this
#: plus the time a Python process takes to start and end (imports, atexit).
GRACE_S = 3.0
EXIT_SLACK_S = 7.0


@pytest.fixture
def own_cluster() -> Iterator[pg.Cluster]:
    cluster = pg.Cluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _daemon(root: Path, dsn: str, **sections: dict[str, Any]) -> DaemonProc:
    return DaemonProc(
        root,
        daemon={"shutdown_grace_s": GRACE_S, "concurrency": 8},
        ai={"engine": "fixed", "fixed_delay_ms": 400},
        store={"backend": "postgresql", "dsn": dsn},
        **sections,
    )


def _stopped_within(d: DaemonProc, seconds: float) -> tuple[int, float]:
    """SIGTERM, and the exit code and seconds it took (AssertionError past ``seconds``)."""
    assert d.proc is not None
    t0 = time.monotonic()
    d.proc.terminate()
    try:
        code = d.proc.wait(timeout=seconds)
    except Exception as exc:
        raise AssertionError(f"the daemon ignored SIGTERM for over {seconds} s") from exc
    took = time.monotonic() - t0
    for t in d._threads:
        t.join(timeout=10)
    return code, took


def _plain_lines(d: DaemonProc) -> list[str]:
    """Lines of the daemon's output that are not readdod's JSON log lines."""
    plain = [str(e["raw"]) for e in d.logs if e["event"] == "<unparsed>"]
    plain += [line for line in d.stderr.decode(errors="replace").splitlines() if line.strip()]
    return plain


def test_sigterm_ends_a_busy_daemon_whose_server_went_away_and_the_pool_logs_json(
    own_cluster: pg.Cluster,
    tmp_path: Path,
    daemons: list[DaemonProc],
    record_property: Callable[[str, object], None],
) -> None:
    d = _daemon(tmp_path, own_cluster.new_database())
    daemons.append(d)
    d.start()
    for i in range(12):
        d.call("capture", {"text": f"Article {i}.\n\nBody of article {i}.", "intent": "x"})
    d.wait_log(lambda e: e["event"] == "item.transition" and e.get("to") == "PROCESSING")
    own_cluster.stop_server()
    d.wait_log(lambda e: e["event"] == "store.unavailable", timeout=60)
    # The pool notices too, and says so through readdod's logger.
    d.wait_log(lambda e: str(e.get("logger_name", "")).startswith("psycopg"), timeout=60)
    code, took = _stopped_within(d, GRACE_S + EXIT_SLACK_S)
    assert _plain_lines(d) == []
    library = [e for e in d.logs if str(e.get("logger_name", "")).startswith("psycopg")]
    assert all(set(e) >= {"ts", "level", "event"} for e in library)
    assert len(library) <= 10, [e["event"] for e in library]
    assert code == 0 and any(e["event"] == "daemon.stopped" for e in d.logs), (code, took)
    record_property(
        "figures", f"SIGTERM to exit {took:.1f} s (grace {GRACE_S} s); {len(library)} pool lines"
    )


def test_sigterm_ends_an_idle_daemon_whose_server_went_away(
    own_cluster: pg.Cluster,
    tmp_path: Path,
    daemons: list[DaemonProc],
    record_property: Callable[[str, object], None],
) -> None:
    d = _daemon(tmp_path, own_cluster.new_database())
    daemons.append(d)
    d.start()
    own_cluster.stop_server()
    # Nothing to do but its loops' reads (claims, the fleet's beat), which find it gone.
    d.wait_log(lambda e: e["event"] == "store.unavailable", timeout=60)
    code, took = _stopped_within(d, GRACE_S + EXIT_SLACK_S)
    assert code == 0 and _plain_lines(d) == []
    record_property("figures", f"SIGTERM to exit {took:.1f} s (grace {GRACE_S} s)")


def test_a_server_down_at_start_is_waited_for_with_logged_bounded_backoff_and_sigterm_ends_it(
    own_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    dsn = own_cluster.new_database()
    own_cluster.stop_server()
    d = _daemon(tmp_path, dsn)
    daemons.append(d)
    d.start(wait=False)
    waits = d.wait_log(lambda e: e["event"] == "store.waiting", count=3, timeout=60)
    assert all(0 < w["retry_in_s"] <= 30 for w in waits) and waits[0]["attempt"] == 1
    assert "No such file or directory" in waits[0]["error"]
    code, _ = _stopped_within(d, GRACE_S + EXIT_SLACK_S)
    assert code == 0 and _plain_lines(d) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (" password=wrong-password", "password authentication failed"),
        ("", "no password supplied"),
    ],
)
def test_a_refused_login_at_start_exits_at_once_with_a_clear_message(
    pg_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc], given: str, said: str
) -> None:
    database = pg_cluster.new_database().rsplit("dbname=", 1)[1]
    dsn = pg_cluster.password_role(f"app_{database}", "right-password", database)
    d = _daemon(tmp_path, dsn + given)
    daemons.append(d)
    d.start(wait=False)
    assert d.proc is not None
    assert d.proc.wait(timeout=30) == 2
    d.close()
    stderr = d.stderr.decode()
    assert "STORE_AUTH_FAILED" in stderr and said in stderr
    assert "wrong-password" not in stderr and "wrong-password" not in json.dumps(d.logs)
    failed = [e for e in d.logs if e["event"] == "daemon.failed"]
    assert failed and failed[0]["error_code"] == "STORE_AUTH_FAILED"
