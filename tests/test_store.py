"""The store's writer on a real SQLite file: batching, counters, closing with work queued."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from readdod.store import Store, StoreClosed
from readdod.store.queries import Tx

pytestmark = pytest.mark.anyio


def _set(key: str) -> object:
    def unit(tx: Tx) -> None:
        tx.execute("INSERT INTO settings (key, value) VALUES (?, '1')", (key,))

    return unit


async def test_closing_with_writes_queued_finishes_them_and_refuses_later_ones(
    tmp_path: Path,
) -> None:
    done: list[str] = []
    refused: list[str] = []

    async def write(store: Store, key: str) -> None:
        try:
            await store.write(_set(key))  # type: ignore[arg-type]
        except StoreClosed:
            refused.append(key)
        else:
            done.append(key)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as outer, Store.open(tmp_path / "s.db") as store:
            for i in range(2000):
                outer.start_soon(write, store, f"k{i}")
            # Let the writes queue up, then close while the writer is still busy.
            for _ in range(50):
                await anyio.lowlevel.checkpoint()
    assert len(done) + len(refused) == 2000
    async with Store.open(tmp_path / "s.db") as store:
        stored = await store.read(
            lambda tx: {r[0] for r in tx.execute("SELECT key FROM settings").fetchall()}
        )
    assert stored == set(done)


async def test_counters_count_commits_units_and_statements(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "c.db") as store:
        async with anyio.create_task_group() as tg:
            for i in range(300):
                tg.start_soon(store.write, _set(f"k{i}"))  # type: ignore[arg-type]
        counters = store.counters()
    assert counters.units == 300
    assert 1 <= counters.transactions < 300
    # One INSERT per unit, plus BEGIN and COMMIT per transaction.
    assert counters.statements == 300 + 2 * counters.transactions
