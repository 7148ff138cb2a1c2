"""What only the PostgreSQL store has to show, beyond the store contract it passes:
several stores on one database, migrations run once, a role that may only read and
write, backups through pg_dump, and a server that goes away and comes back."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from structlog.testing import capture_logs

from readdod.errors import BackupUnsupported, ConfigError, ValidationFailed
from readdod.store.api import StepSlot, UnitOfWork
from readdod.store.postgresql import PostgresStore
from readdod.store.postgresql.backup import dump_database, find_pg_dump
from readdod.store.postgresql.schema import migrations
from tests import pg
from tests.daemon_proc import DaemonProc
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_stores_opened_at_once_on_a_new_database_migrate_it_once(
    pg_cluster: pg.Cluster,
) -> None:
    dsn = pg_cluster.new_database()
    opened: list[int] = []

    async def open_one() -> None:
        async with PostgresStore.open(dsn) as store:
            opened.append(await store.read(lambda tx: tx.count_status("QUEUED")))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(open_one)
    with psycopg.connect(dsn) as conn:
        versions = conn.execute("SELECT version FROM readdod_migrations").fetchall()
    assert opened == [0, 0, 0, 0]
    assert sorted(v for (v,) in versions) == [n for n, _ in migrations()]


async def test_a_daemon_started_before_its_database_exists_says_why_it_waits(
    pg_cluster: pg.Cluster,
) -> None:
    name = f"late_{pg_cluster.new_database().rsplit('dbname=', 1)[1]}"
    opened: list[int] = []

    async def open_and_count() -> None:
        async with PostgresStore.open(pg_cluster.dsn(name), connect_timeout_s=0.2) as store:
            opened.append(await store.read(lambda tx: tx.count_status("QUEUED")))

    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            tg.start_soon(open_and_count)
            with anyio.fail_after(30):
                while not any(e["event"] == "store.unavailable" for e in logs):
                    await anyio.sleep(0.01)
            assert opened == []
            await anyio.to_thread.run_sync(pg_cluster.execute, f'CREATE DATABASE "{name}"')
    down = next(e for e in logs if e["event"] == "store.unavailable")
    assert f'database "{name}" does not exist' in down["error"]
    assert opened == [0] and any(e["event"] == "store.available" for e in logs)


async def test_a_database_migrated_by_a_newer_readdod_is_refused_not_touched(
    pg_cluster: pg.Cluster,
) -> None:
    dsn = pg_cluster.new_database()
    async with PostgresStore.open(dsn):
        pass
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO readdod_migrations (version) VALUES (999)")
    with pytest.raises(ConfigError, match=r"migrations \[999\].*upgrade readdod"):
        async with PostgresStore.open(dsn):
            pass


async def test_two_daemons_claiming_at_once_never_take_the_same_item(
    pg_cluster: pg.Cluster,
) -> None:
    dsn = pg_cluster.new_database()
    async with PostgresStore.open(dsn) as a, PostgresStore.open(dsn) as b:
        await rows.insert(a, *(rows.item(f"i{n:03}", created_at=n) for n in range(300)))
        taken: dict[str, list[str]] = {"a": [], "b": []}

        async def claim(name: str, store: PostgresStore) -> None:
            while True:
                got = await store.write(lambda tx: tx.claim(name, 7, 10_000, 1))
                if not got:
                    return
                taken[name].extend(r.id for r in got)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(claim, "a", a)
                tg.start_soon(claim, "b", b)
        held = await a.read(lambda tx: (len(tx.held_by("a")), len(tx.held_by("b"))))
    everything = taken["a"] + taken["b"]
    assert sorted(everything) == [f"i{n:03}" for n in range(300)]  # each one exactly once
    assert held == (len(taken["a"]), len(taken["b"]))
    assert taken["a"] and taken["b"]


async def test_a_renewal_skips_a_lease_row_another_transaction_holds_and_counts_it_held(
    pg_cluster: pg.Cluster,
) -> None:
    dsn = pg_cluster.new_database()
    async with PostgresStore.open(dsn) as store:
        await rows.insert(store, *(rows.item(f"i{n}", created_at=n) for n in range(3)))
        await rows.insert(store, rows.item("other", created_at=9))
        assert len(await store.write(lambda tx: tx.claim("a", 3, 10_000, 1))) == 3
        await store.write(lambda tx: tx.claim("b", 1, 10_000, 1))
        ids = ["i0", "i1", "i2", "other"]
        # A step commit of the same daemon, say, holding i1's row locked meanwhile.
        with psycopg.connect(dsn) as other:
            other.execute("SELECT 1 FROM items WHERE id = 'i1' FOR NO KEY UPDATE")
            try:
                with anyio.fail_after(5):
                    held = await store.write(lambda tx: tx.renew_leases("a", ids, 50_000))
            finally:
                other.rollback()
        leases = await store.read(
            lambda tx: {i: r.lease_expires_at for i in ids if (r := tx.item(i)) is not None}
        )
    assert held == {"i0", "i1", "i2"}
    assert leases == {"i0": 50_000, "i1": 10_000, "i2": 50_000, "other": 10_000}


async def test_a_batch_reads_its_units_step_slots_at_once_and_each_sees_what_it_would_alone(
    pg_cluster: pg.Cluster,
) -> None:
    dsn = pg_cluster.new_database()
    ids = [f"i{n}" for n in range(6)]
    gate = ("summary", "score")
    async with PostgresStore.open(dsn, pool_size=2) as store:  # one writer: whole batches
        await rows.insert(
            store,
            *(rows.item(i, created_at=n, current_run_id=f"r{n}") for n, i in enumerate(ids)),
            *(rows.run(f"r{n}", i) for n, i in enumerate(ids)),
        )
        tokens = {
            r.id: r.lease_token for r in await store.write(lambda tx: tx.claim("me", 6, 10**6, 1))
        }

        def seed(tx: UnitOfWork) -> None:
            tx.add_artifact("i0", "summary", 1, "r0", '{"s": 0}', "{}", 2)
            tx.add_artifact("i1", "summary", 1, "r1", '{"s": 1}', "{}", 2)
            tx.insert_artifact("i1", "score", "user", None, '{"score": 80}', "{}", 3)
            tx.add_artifact("i2", "summary", 1, "r-earlier", '{"s": 2}', "{}", 2)

        await store.write(seed)
        slots = [StepSlot(i, "summary", "me", f"r{n}", tokens[i], gate) for n, i in enumerate(ids)]
        slots[3] = slots[3]._replace(token=tokens["i3"] - 1)  # a late write of an earlier claim
        slots[4] = slots[4]._replace(owner="other")  # not this owner's lease
        slots[5] = slots[5]._replace(gate=())  # a step that does not end its run

        def probe(slot: StepSlot) -> Callable[[UnitOfWork], object]:
            def unit(tx: UnitOfWork) -> object:
                found = tx.step_slot(
                    slot.item_id, slot.artifact_type, slot.owner, slot.run_id, token=slot.token
                )
                return found, tx.item(slot.item_id), tx.gate_inputs(slot.item_id, slot.run_id, gate)

            return unit

        alone = [await store.write(probe(slot)) for slot in slots]

        # The writer is kept busy while the six are queued, so they go out as one batch.
        release = threading.Event()
        together: list[object] = [None] * len(slots)

        async def told(k: int) -> None:
            together[k] = await store.write(probe(slots[k]), slot=slots[k])

        async with anyio.create_task_group() as tg:
            tg.start_soon(store.write, lambda tx: release.wait(10))
            await anyio.wait_all_tasks_blocked()
            before = store.counters()
            for k in range(len(slots)):
                tg.start_soon(told, k)
            await anyio.wait_all_tasks_blocked()
            release.set()
        after = store.counters()
    assert together == alone
    assert [a[0][0] is not None for a in alone] == [True, True, True, False, False, True]  # type: ignore[index]
    assert after.transactions - before.transactions == 2  # the busy unit's, then the six's
    # Alone, each asks three statements; together: the slots, the gates, and the item and
    # gate reads of the two whose lease does not hold, and the gate of the one not asked.
    assert after.statements - before.statements < 3 * len(slots)


async def test_a_race_on_a_unique_key_is_run_again_and_finds_the_winner(
    pg_cluster: pg.Cluster,
) -> None:
    """Two daemons take the same capture at once: both look, neither finds it, both
    insert. The loser's unit fails on the unique key, runs again, finds the winner's
    item and answers with it, as it would behind one writer."""
    dsn = pg_cluster.new_database()
    both_looked = threading.Barrier(2, timeout=30)

    def capture(item_id: str) -> Callable[[UnitOfWork], str]:
        runs: list[int] = []

        def unit(tx: UnitOfWork) -> str:
            runs.append(len(runs) + 1)
            found = tx.item_by_capture_id("same-capture")
            if len(runs) == 1:
                both_looked.wait()  # units run in the store's threads: wait for the other
            if found is not None:
                return found.id
            tx.insert_item(rows.item(item_id, capture_id="same-capture"))
            return item_id

        return unit

    answers: dict[str, str] = {}
    async with PostgresStore.open(dsn) as a, PostgresStore.open(dsn) as b:

        async def take(store: PostgresStore, item_id: str) -> None:
            answers[item_id] = await store.write(capture(item_id))

        async with anyio.create_task_group() as tg:
            tg.start_soon(take, a, "from-a")
            tg.start_soon(take, b, "from-b")
        kept = await a.read(lambda tx: [r.id for r in tx.list_items(None, None, 10, None)])
    assert len(kept) == 1 and answers == {"from-a": kept[0], "from-b": kept[0]}


async def test_a_role_that_may_only_read_and_write_runs_a_migrated_database(
    pg_cluster: pg.Cluster,
) -> None:
    owner_dsn = pg_cluster.new_database()
    dbname = owner_dsn.rsplit("dbname=", 1)[1]
    role = f"app_{dbname}"
    pg_cluster.execute(f"CREATE ROLE {role} LOGIN")
    app_dsn = owner_dsn.replace(f"user={pg_cluster.user}", f"user={role}")

    with pytest.raises(ConfigError, match="role that owns the database"):
        async with PostgresStore.open(app_dsn):
            pass  # PostgreSQL 15 lets no other role create tables in the public schema

    async with PostgresStore.open(owner_dsn):
        pass
    pg_cluster.execute(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        dbname,
    )
    async with PostgresStore.open(app_dsn) as store:
        await rows.insert(store, rows.item("a"))
        claimed = await store.write(lambda tx: tx.claim("w", 1, 100, 1))
        await store.write(lambda tx: tx.insert_event(1, "a", None, "note", None, None, "user"))
        assert [r.id for r in claimed] == ["a"]


async def test_backup_is_a_pg_dump_that_pg_restore_reads_or_an_error_naming_the_command(
    pg_cluster: pg.Cluster, tmp_path: Path
) -> None:
    dsn = pg_cluster.new_database()
    precious = tmp_path / "precious.txt"
    precious.write_text("not a backup")
    async with PostgresStore.open(dsn) as store:
        await rows.insert(store, rows.item("kept-item"))
        result = await store.backup(tmp_path / "copy.dump")
        again = await store.backup(tmp_path / "copy.dump")  # an earlier archive is refreshed
        into_dir = await store.backup(f"{tmp_path}/")
        with pytest.raises(ValidationFailed, match="not a pg_dump archive"):
            await store.backup(precious)
        with pytest.raises(ValidationFailed, match="not a directory"):
            await store.backup(tmp_path / "no-such-dir" / "copy.dump")
    with pytest.raises(BackupUnsupported) as refused:  # pg_dump itself fails
        await dump_database(pg_cluster.dsn("no_such_database"), None, tmp_path / "x.dump")
    pg_dump = find_pg_dump()
    assert pg_dump is not None
    listed = subprocess.run(
        [str(Path(pg_dump).with_name("pg_restore")), "--list", result.path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "TABLE DATA public items" in listed and result.bytes > 0
    assert again.path == result.path and Path(result.path).stat().st_mode & 0o777 == 0o600
    assert Path(into_dir.path).parent == tmp_path and into_dir.path.endswith(".dump")
    assert precious.read_text() == "not a backup"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert refused.value.error_code == "BACKUP_UNSUPPORTED"
    assert "pg_dump --format=custom" in refused.value.message
    assert "no_such_database" in refused.value.message and not (tmp_path / "x.dump").exists()


@pytest.fixture
def own_cluster() -> Iterator[pg.Cluster]:
    """A cluster of the test's own, to stop and start without disturbing other tests."""
    cluster = pg.Cluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_a_unit_waits_for_a_server_that_restarts_and_commits_once_it_is_back(
    own_cluster: pg.Cluster,
) -> None:
    dsn = own_cluster.new_database()
    async with PostgresStore.open(dsn, connect_timeout_s=0.5) as store:
        await rows.insert(store, rows.item("a"))
        own_cluster.stop_server()
        written: list[bool] = []

        async def write() -> None:
            def unit(tx: UnitOfWork) -> bool:
                return tx.set_status("a", "QUEUED", "READY", title="after the outage")

            written.append(await store.write(unit))

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            with anyio.fail_after(30):
                while store.outages == 0:  # the unit found the server gone, and waits
                    await anyio.sleep(0.01)
            assert not written
            await anyio.to_thread.run_sync(own_cluster.start_server)
        item = await store.read(lambda tx: tx.item("a"))
    assert written == [True]
    assert item is not None and (item.status, item.title) == ("READY", "after the outage")


def test_a_daemon_rides_out_a_database_restart_without_failing_an_item(
    own_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """The server stops with items in flight: the daemon logs store.unavailable, waits,
    and once the server is back every item ends READY, none failed."""
    d = DaemonProc(
        tmp_path,
        daemon={"concurrency": 50, "batch_size": 20},
        ai={"engine": "fixed", "fixed_delay_ms": 50},
        store={"backend": "postgresql", "dsn": own_cluster.new_database()},
    )
    daemons.append(d)
    d.start()
    ids = [
        d.call("capture", {"text": f"Article {i}.\n\nBody of article {i}.", "intent": "x"})["item"][
            "id"
        ]
        for i in range(60)
    ]
    d.wait_status("READY", count=5)
    own_cluster.stop_server()
    d.wait_log(lambda e: e["event"] == "store.unavailable", timeout=60)
    own_cluster.start_server()
    d.wait_log(lambda e: e["event"] == "store.available", timeout=60)
    d.wait_status("READY", count=len(ids), timeout=180)
    statuses = dict(d.query("SELECT status, count(*) FROM items GROUP BY status"))
    failed = [e for e in d.logs if e["event"] == "item.transition" and "FAILED" in e["to"]]
    assert statuses == {"READY": len(ids)} and failed == []
    assert d.stop() == 0


def test_a_daemon_whose_role_cannot_migrate_stops_with_exit_2_saying_what_to_do(
    pg_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    owner_dsn = pg_cluster.new_database()
    role = f"app_{owner_dsn.rsplit('dbname=', 1)[1]}"
    pg_cluster.execute(f"CREATE ROLE {role} LOGIN")
    app_dsn = owner_dsn.replace(f"user={pg_cluster.user}", f"user={role}")
    d = DaemonProc(tmp_path, store={"backend": "postgresql", "dsn": app_dsn})
    daemons.append(d)
    d.start(wait=False)
    assert d.proc is not None
    assert d.proc.wait(timeout=60) == 2
    d.close()
    assert b"role that owns the database" in d.stderr
