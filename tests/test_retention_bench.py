"""A short run of ``python -m bench.retention``: with the daily prune, a steady load's
history stops piling up once the retention windows have passed; without it, it grows."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import retention

pytestmark = pytest.mark.anyio

HISTORY = ("runs", "attempts", "events", "artifacts")


async def test_a_steady_load_pruned_daily_holds_the_same_history_month_after_month(
    tmp_path: Path,
) -> None:
    pruned = await retention.run(10, 90, True, tmp_path / "pruned")
    first, *_, last = pruned["months"][1:]
    assert {k: last[k] for k in HISTORY} == {k: first[k] for k in HISTORY}
    assert pruned["last_to_month_2"] < 1.1

    kept = await retention.run(10, 90, False, tmp_path / "kept")
    grown = kept["months"][-1]
    assert all(grown[k] > last[k] for k in HISTORY), (grown, last)
