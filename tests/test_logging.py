"""Logging is configured by the program's entry, and lines read the same on every path."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

from structlog.testing import capture_logs

from readdod.runtime import logging as rlog


def test_importing_readdod_configures_no_logging() -> None:
    code = (
        "import structlog, readdod.service.daemon, readdod.cli, readdod.runtime.logging\n"
        "print(structlog.is_configured())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_capture_logs_sees_lines_and_the_sink_does_not() -> None:
    out = StringIO()
    with rlog.redirected("info", out):
        log = rlog.get_logger("readdod.test").bind(item_id="01ABC")
        with capture_logs() as logs:
            log.info("item.captured", source_type="text")
            log.debug("item.captured")
        log.info("item.captured", source_type="url")
    assert logs == [
        {
            "logger_name": "readdod.test",
            "item_id": "01ABC",
            "source_type": "text",
            "event": "item.captured",
            "log_level": "info",
        },
        {
            "logger_name": "readdod.test",
            "item_id": "01ABC",
            "event": "item.captured",
            "log_level": "debug",
        },
    ]
    assert [json.loads(line)["source_type"] for line in out.getvalue().splitlines()] == ["url"]


def test_lines_through_structlog_match_lines_written_directly() -> None:
    """%-arguments and exceptions go through structlog's chain; the line keeps its shape."""
    out = StringIO()
    with rlog.redirected("info", out):
        log = rlog.get_logger("readdod.test").bind(item_id="01ABC")
        log.info("item.captured", attempt=1)
        log.info("item.%s", "captured", attempt=1)
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("step.crashed", step="summary")
    first, second, crashed = (json.loads(line) for line in out.getvalue().splitlines())
    assert first.pop("ts") and second.pop("ts")
    assert list(first.items()) == list(second.items())
    assert list(crashed)[:5] == ["ts", "level", "event", "logger_name", "item_id"]
    assert crashed["level"] == "error" and "ValueError: boom" in crashed["exception"]


def test_json_lines_come_back_after_a_console_spell() -> None:
    out = StringIO()
    with rlog.redirected("info", out):
        with rlog.redirected("info", StringIO(), fmt="console"):
            rlog.get_logger("readdod.test").info("item.captured")
        rlog.get_logger("readdod.test").info("item.captured")
    assert json.loads(out.getvalue())["event"] == "item.captured"


def test_a_library_logging_every_second_is_written_a_few_times_a_window_as_json() -> None:
    """psycopg's pool says "error connecting" at every try while its server is away: the
    lines come out as readdod's JSON (secrets scrubbed), a burst per window, and the
    next window's first line says how many were held back."""
    import logging

    now = [0.0]
    handler = rlog.LibraryHandler(clock=lambda: now[0])
    pool = logging.getLogger("psycopg.pool.test")
    pool.propagate = False
    pool.addHandler(handler)
    out = StringIO()
    try:
        with rlog.redirected("info", out):
            for second in range(120):
                now[0] = float(second)
                pool.warning("error connecting in %r: %s", "readdod", "password=hunter2 no")
    finally:
        pool.removeHandler(handler)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    burst, window = rlog.LIBRARY_BURST, rlog.LIBRARY_WINDOW_S
    assert len(lines) == 2 * burst == 120 // window * burst
    assert {(e["event"], e["level"], e["logger_name"]) for e in lines} == {
        ("library.log", "warning", "psycopg.pool.test")
    }
    assert lines[0]["message"] == "error connecting in 'readdod': password=[redacted] no"
    assert [e.get("suppressed") for e in lines] == [None] * burst + [60 - burst] + [None] * (
        burst - 1
    )
