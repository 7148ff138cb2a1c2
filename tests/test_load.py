"""Captures under load through the real daemon: several clients at once, processing
running meanwhile, and every acknowledged capture still there after ``kill -9``.

A small version of ``python -m bench.load`` (which does 100,000 items and
reports the figures); this one checks the same properties on a few thousand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.load import run_load, stored_captures
from tests.daemon_proc import DaemonProc

ITEMS = 3000
CLIENTS = 4


def test_every_acknowledged_capture_survives_concurrent_load_and_kill9(
    tmp_path: Path, daemons: list[DaemonProc], record_property: Callable[[str, object], None]
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 0})
    daemons.append(d)
    d.start()
    result = run_load(d, ITEMS, CLIENTS)
    assert result.errors == []
    assert len(result.acked) == ITEMS
    assert len(set(result.acked.values())) == ITEMS  # one item per capture_id
    # The pipeline ran while the captures came in, not only after.
    assert result.processed_during_capture > 0
    d.kill9()
    stored = stored_captures(d)
    missing = {k: v for k, v in result.acked.items() if stored.get(k) != v}
    assert missing == {}
    assert len(stored) == ITEMS  # and nothing that was not asked for
    figures = result.figures()
    assert figures["latency_p99_ms"] > 0 and figures["captures_per_s"] > 0
    record_property("figures", f"load: {figures}")  # p50/p99 capture latency, after the run
