"""The store's writer on a real SQLite file: batching, counters, closing with work queued."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from readdod.store import SqliteStore, SqliteUnitOfWork, StoreClosed
from readdod.store.sqlite import CHECKPOINT_EVERY, WAL_PAGES_MAX
from readdod.store.sqlite.executor import HELD_ROWS_PER_STATEMENT

pytestmark = pytest.mark.anyio


def _set(key: str) -> object:
    def unit(tx: SqliteUnitOfWork) -> None:
        tx.execute("INSERT INTO settings (key, value) VALUES (?, '1')", (key,))

    return unit


async def test_closing_with_writes_queued_finishes_them_and_refuses_later_ones(
    tmp_path: Path,
) -> None:
    done: list[str] = []
    refused: list[str] = []

    async def write(store: SqliteStore, key: str) -> None:
        try:
            await store.write(_set(key))  # type: ignore[arg-type]
        except StoreClosed:
            refused.append(key)
        else:
            done.append(key)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as outer, SqliteStore.open(tmp_path / "s.db") as store:
            for i in range(2000):
                outer.start_soon(write, store, f"k{i}")
            # Let the writes queue up, then close while the writer is still busy.
            for _ in range(50):
                await anyio.lowlevel.checkpoint()
    assert len(done) + len(refused) == 2000
    async with SqliteStore.open(tmp_path / "s.db") as store:
        stored = await store.read(
            lambda tx: {r[0] for r in tx.execute("SELECT key FROM settings").fetchall()}
        )
    assert stored == set(done)


async def test_counters_count_commits_units_and_statements(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "c.db") as store:
        async with anyio.create_task_group() as tg:
            for i in range(300):
                tg.start_soon(store.write, _set(f"k{i}"))  # type: ignore[arg-type]
        counters = store.counters()
    assert counters.units == 300
    assert 1 <= counters.transactions < 300
    # One INSERT per unit, plus BEGIN and COMMIT per transaction.
    assert counters.statements == 300 + 2 * counters.transactions


async def _rows(store: SqliteStore, sql: str) -> list[tuple[object, ...]]:
    return await store.read(lambda tx: tx.conn.execute(sql).fetchall())


def _item_sql(item_id: str) -> tuple[str, tuple[str]]:
    return (
        "INSERT INTO items (id, source_type, intent_text, status, created_at, updated_at)"
        " VALUES (?, 'text', 'learn', 'PROCESSING', 1, 1)",
        (item_id,),
    )


async def test_held_back_rows_are_seen_by_the_unit_and_written_byte_for_byte(
    tmp_path: Path,
) -> None:
    payload = '{"text":"quote \\" and \\\\ back, tab\\t, ünïcödé 日本語, emoji 🙂\\nline"}'
    seen: dict[str, object] = {}

    def unit(tx: SqliteUnitOfWork) -> None:
        tx.execute(*_item_sql("i1"))
        tx.execute(*_item_sql("i2"))
        tx.execute(
            "INSERT INTO runs (run_id, item_id, mode, status, created_at)"
            " VALUES ('r1', 'i1', 'PROCESS', 'running', 1)"
        )
        tx.add_artifact("i1", "extraction", 1, "r1", payload, "{}", 5)
        tx.add_artifact("i2", "summary", 3, "r2", "{}", "{}", 6)
        tx.set_current_step("r1", "summary")
        tx.insert_event(7, "i1", "r1", "step", None, None, "system", '{"step":"extraction"}')
        tx.insert_event(8, None, None, "lease", None, None, "system")
        # Reads scoped to one item see what is held back without writing it yet.
        seen["of_run"] = tx.artifacts_of_run("i1", "r1")
        seen["payloads"] = tx.run_payloads("i1", "r1", ("extraction", "summary"))
        seen["latest"] = tx.latest_artifact("i2", "summary")
        seen["held"] = tx.conn.execute("SELECT count(*) FROM artifacts").fetchone()[0]
        # Any other statement writes them first, in order.
        seen["run"] = tx.run("r1")
        tx.insert_event(9, "i2", None, "edit", None, None, "user")
        seen["events"] = [e.at for e in tx.events_for("i1")]

    async with SqliteStore.open(tmp_path / "h.db") as store:
        await store.write(unit)
        rows = await _rows(
            store,
            "SELECT item_id, version, typeof(version), run_id, payload, created_at"
            " FROM artifacts ORDER BY item_id",
        )
        events = await _rows(
            store,
            "SELECT at, item_id, run_id, kind, detail FROM events ORDER BY seq",
        )
        written = await store.read(lambda tx: tx.run_payloads("i1", "r1", ("extraction",)))
    of_run = seen["of_run"]
    assert isinstance(of_run, dict) and of_run["extraction"].payload == payload
    # The gate's read: held or written, only the run's own artifacts of the types asked.
    assert seen["payloads"] == written == {"extraction": ("r1", payload)}
    latest = seen["latest"]
    assert latest is not None and latest.version == 3  # type: ignore[attr-defined]
    assert seen["held"] == 0
    assert seen["run"] is not None and seen["run"].current_step == "summary"  # type: ignore[attr-defined]
    assert seen["events"] == [7]
    assert rows == [
        ("i1", 1, "integer", "r1", payload, 5),
        ("i2", 3, "integer", "r2", "{}", 6),
    ]
    assert events == [
        (7, "i1", "r1", "step", '{"step":"extraction"}'),
        (8, None, None, "lease", "{}"),
        (9, "i2", None, "edit", "{}"),
    ]


async def test_rows_held_to_the_end_of_the_batch_are_written_byte_for_byte(
    tmp_path: Path,
) -> None:
    """The rows no unit read back are written by the commit thread (a multi-row INSERT
    per table): text, escapes, integers and NULLs come out as they went in."""
    payload = '{"text":"quote \\" and \\\\ back, nul \\u0000, \u2028, ünïcödé 日本語 🙂\\nline"}'
    big = 2**62 + 7

    def unit(tx: SqliteUnitOfWork) -> None:
        tx.add_artifact("i1", "extraction", 1, "r1", payload, '{"m":1}', big)
        tx.set_current_step("r1", "card")
        tx.insert_event(big, "i1", None, "step", None, "READY", "system", payload)

    async with SqliteStore.open(tmp_path / "t.db") as store:
        await store.write(
            lambda tx: [
                tx.execute(*_item_sql("i1")),
                tx.execute(
                    "INSERT INTO runs (run_id, item_id, mode, status, created_at)"
                    " VALUES ('r1', 'i1', 'PROCESS', 'running', 1)"
                ),
            ]
        )
        await store.write(unit)
        art = await _rows(
            store,
            "SELECT payload, meta, typeof(version), version, created_at, created_by FROM artifacts",
        )
        ev = await _rows(
            store,
            "SELECT at, item_id, run_id, typeof(run_id), from_status, to_status, detail"
            " FROM events",
        )
        step = await store.read(lambda tx: tx.run("r1"))
    assert art == [(payload, '{"m":1}', "integer", 1, big, "system")]
    assert ev == [(big, "i1", None, "null", None, "READY", payload)]
    assert step is not None and step.current_step == "card"


async def test_more_held_rows_than_one_statement_takes_are_all_written_in_order(
    tmp_path: Path,
) -> None:
    """Past HELD_ROWS_PER_STATEMENT rows a table's held rows take several INSERTs, each
    padded to a power of two rows; every row arrives once, in the order it was held."""
    count = 2 * HELD_ROWS_PER_STATEMENT + 3

    def unit(tx: SqliteUnitOfWork) -> None:
        for n in range(count):
            tx.add_artifact("i1", "summary", n + 1, f"r{n}", f'{{"n":{n}}}', "{}", n)
            tx.insert_event(n, "i1", None, "step", None, None, "system", f'{{"n":{n}}}')

    async with SqliteStore.open(tmp_path / "many.db") as store:
        await store.write(lambda tx: tx.execute(*_item_sql("i1")))
        await store.write(unit)
        arts = await _rows(store, "SELECT version, payload FROM artifacts ORDER BY rowid")
        events = await _rows(store, "SELECT at, detail FROM events ORDER BY seq")
    assert arts == [(n + 1, f'{{"n":{n}}}') for n in range(count)]
    assert events == [(n, f'{{"n":{n}}}') for n in range(count)]


async def test_a_held_row_sqlite_cannot_take_fails_only_its_own_unit(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "u.db") as store:
        await store.write(lambda tx: [tx.execute(*_item_sql(i)) for i in ("a", "b")])
        outcome: dict[str, object] = {}

        async def add(item_id: str, payload: str) -> None:
            try:
                await store.write(
                    lambda tx: tx.add_artifact(item_id, "summary", 1, "r", payload, "{}", 1)
                )
            except Exception as exc:
                outcome[item_id] = exc
            else:
                outcome[item_id] = "ok"

        async with anyio.create_task_group() as tg:
            tg.start_soon(add, "a", '{"x":"\udc80"}')  # a lone surrogate: not UTF-8
            tg.start_soon(add, "b", "{}")
        arts = await store.read(
            lambda tx: [r[0] for r in tx.conn.execute("SELECT item_id FROM artifacts")]
        )
    assert outcome["b"] == "ok" and isinstance(outcome["a"], UnicodeEncodeError)
    assert arts == ["b"]


async def test_a_failing_unit_loses_only_its_own_held_back_rows(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "f.db") as store:
        await store.write(lambda tx: [tx.execute(*_item_sql(i)) for i in ("a", "b", "c")])
        before = store.counters()

        def unit(item_id: str, fail: bool) -> object:
            def fn(tx: SqliteUnitOfWork) -> None:
                tx.add_artifact(item_id, "summary", 1, "r", "{}", "{}", 1)
                tx.insert_event(1, item_id, "r", "step", None, None, "system")
                if fail:
                    raise ValueError("this unit fails")

            return fn

        failed: list[BaseException] = []

        async def write(item_id: str, fail: bool) -> None:
            try:
                await store.write(unit(item_id, fail))  # type: ignore[arg-type]
            except ValueError as exc:
                failed.append(exc)

        async with anyio.create_task_group() as tg:
            for item_id, fail in (("a", False), ("b", True), ("c", False)):
                tg.start_soon(write, item_id, fail)
        after = store.counters()
        arts = await store.read(
            lambda tx: [r[0] for r in tx.conn.execute("SELECT item_id FROM artifacts")]
        )
        evs = await store.read(
            lambda tx: [r[0] for r in tx.conn.execute("SELECT item_id FROM events ORDER BY seq")]
        )
    assert len(failed) == 1
    # The three units shared one transaction: the fast attempt was rolled back and
    # the batch ran again with a savepoint around each unit.
    assert after.transactions - before.transactions == 1
    assert sorted(arts) == ["a", "c"]
    assert evs == ["a", "c"]


async def test_a_lock_held_elsewhere_is_waited_for_off_the_event_loop(tmp_path: Path) -> None:
    import sqlite3

    async with SqliteStore.open(tmp_path / "l.db") as store:
        locker = sqlite3.connect(tmp_path / "l.db", isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        ticks = 0
        written = anyio.Event()

        async def write() -> None:
            await store.write(_set("after-lock"))  # type: ignore[arg-type]
            written.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            # The loop keeps running while the writer waits for the lock in a thread.
            while ticks < 20:
                await anyio.sleep(0.01)
                ticks += 1
            assert not written.is_set()
            locker.execute("COMMIT")
        locker.close()
        keys = await store.read(
            lambda tx: [r[0] for r in tx.execute("SELECT key FROM settings").fetchall()]
        )
    assert ticks == 20
    assert keys == ["after-lock"]


async def test_a_unit_run_alone_runs_off_the_event_loop_in_its_own_transaction(
    tmp_path: Path,
) -> None:
    import threading

    go = threading.Event()

    def long_unit(tx: SqliteUnitOfWork) -> str:
        # Waits for the event loop: had it run on the loop, this would never be set.
        assert go.wait(10), "the unit ran on the event loop"
        tx.execute(*_item_sql("a"))
        tx.insert_event(1, "a", None, "edit", None, None, "user")
        return "pruned"

    def failing_unit(tx: SqliteUnitOfWork) -> None:
        tx.execute(*_item_sql("b"))
        raise ValueError("this unit fails")

    async with SqliteStore.open(tmp_path / "a.db") as store:
        results: list[object] = []

        async def run() -> None:
            results.append(await store.write(long_unit, alone=True))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.sleep(0)
            go.set()
        with pytest.raises(ValueError, match="this unit fails"):
            await store.write(failing_unit, alone=True)
        items = await store.read(
            lambda tx: [r[0] for r in tx.execute("SELECT id FROM items").fetchall()]
        )
        events = await store.read(lambda tx: [e.item_id for e in tx.events_for("a")])
        counters = store.counters()
    assert results == ["pruned"]
    assert items == ["a"]
    assert events == ["a"]
    assert counters.units == 1


async def test_queries_by_status_use_an_index_and_busy_states_leave_the_status_index_alone(
    tmp_path: Path,
) -> None:
    """Recovery and the hot path change only QUEUED and PROCESSING rows, which the
    (status, id) index leaves out; every query by status must still find an index."""
    import sqlite3

    async with SqliteStore.open(tmp_path / "q.db"):
        pass

    seen: list[tuple[str, object]] = []

    class Recording(sqlite3.Connection):
        def execute(self, sql: str, params: object = (), /) -> sqlite3.Cursor:
            seen.append((sql, params))
            return super().execute(sql, params)  # type: ignore[arg-type]

    conn = sqlite3.connect(tmp_path / "q.db", factory=Recording)
    tx = SqliteUnitOfWork(conn)
    calls = {
        "count READY": lambda: tx.count_status("READY"),
        "count QUEUED": lambda: tx.count_status("QUEUED"),
        "count PROCESSING": lambda: tx.count_status("PROCESSING"),
        "list READY": lambda: tx.list_items(["READY"], None, 50, None),
        "list failed": lambda: tx.failed_items(["FAILED_EXTRACTION", "FAILED_AI"]),
        "ready from runs": tx.ready_from_runs,
    }
    plans: dict[str, str] = {}
    for name, call in calls.items():
        seen.clear()
        call()
        sql, params = seen[-1]
        rows = sqlite3.Connection.execute(conn, "EXPLAIN QUERY PLAN " + sql, params)  # type: ignore[arg-type]
        plans[name] = " | ".join(r[3] for r in rows)
    index_sql = sqlite3.Connection.execute(
        conn, "SELECT sql FROM sqlite_master WHERE name = 'items_status_id'"
    ).fetchone()[0]
    conn.close()
    assert "NOT IN ('QUEUED', 'PROCESSING')" in index_sql
    for name in ("count READY", "list READY", "list failed", "ready from runs"):
        assert "INDEX items_status_id" in plans[name], (name, plans[name])
    assert "INDEX items_queued" in plans["count QUEUED"], plans["count QUEUED"]
    assert "INDEX items_processing" in plans["count PROCESSING"], plans["count PROCESSING"]


async def test_a_held_back_row_that_fails_when_written_fails_only_its_own_unit(
    tmp_path: Path,
) -> None:
    """The rows are written after all units ran: a constraint that fails there must
    still be traced back to the one unit that added the row."""
    from readdod.errors import InternalError

    async with SqliteStore.open(tmp_path / "w.db") as store:
        await store.write(lambda tx: [tx.execute(*_item_sql(i)) for i in ("a", "b", "c")])
        await store.write(lambda tx: tx.add_artifact("a", "summary", 1, "r0", "{}", "{}", 1))
        before = store.counters()
        errors: dict[str, BaseException] = {}

        async def add(item_id: str) -> None:
            def fn(tx: SqliteUnitOfWork) -> None:
                tx.add_artifact(item_id, "summary", 1, "r1", "{}", "{}", 2)
                tx.insert_event(2, item_id, "r1", "step", None, None, "system")

            try:
                await store.write(fn)
            except InternalError as exc:
                errors[item_id] = exc

        async with anyio.create_task_group() as tg:
            for item_id in ("b", "a", "c"):  # "a" already has version 1
                tg.start_soon(add, item_id)
        after = store.counters()
        arts = await store.read(
            lambda tx: sorted(
                (r[0], r[1]) for r in tx.conn.execute("SELECT item_id, run_id FROM artifacts")
            )
        )
        evs = await store.read(
            lambda tx: [r[0] for r in tx.conn.execute("SELECT item_id FROM events ORDER BY seq")]
        )
    assert list(errors) == ["a"] and "UNIQUE" in str(errors["a"])
    assert after.transactions - before.transactions == 1
    assert arts == [("a", "r0"), ("b", "r1"), ("c", "r1")]
    assert evs == ["b", "c"]


async def test_the_log_is_checkpointed_beside_the_writer(
    tmp_path: Path,
) -> None:
    db = tmp_path / "k.db"
    async with SqliteStore.open(db) as store:
        for i in range(CHECKPOINT_EVERY):
            await store.write(_set(f"k{i}"))  # type: ignore[arg-type]
        with anyio.fail_after(10):
            await store.wait_checkpoints(1)
        autocheckpoint = store._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        # The database file alone (immutable: SQLite reads no log) already holds the rows.
        main = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
        try:
            keys = {r[0] for r in main.execute("SELECT key FROM settings")}
        finally:
            main.close()
    assert keys >= {f"k{i}" for i in range(CHECKPOINT_EVERY)}
    assert autocheckpoint == WAL_PAGES_MAX
