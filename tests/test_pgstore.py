"""What only the PostgreSQL store has to show, beyond the store contract it passes:
several stores on one database, migrations run once, a role that may only read and
write, backups through pg_dump, and a server that goes away and comes back."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from readdod.errors import BackupUnsupported, ConfigError
from readdod.store.api import UnitOfWork
from readdod.store.postgresql import SCHEMA_VERSION, PostgresStore
from readdod.store.postgresql.backup import find_pg_dump
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
    assert versions == [(n,) for n in range(1, SCHEMA_VERSION + 1)]


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
    async with PostgresStore.open(dsn) as store:
        await rows.insert(store, rows.item("kept-item"))
        result = await store.backup(tmp_path / "copy.dump")
        with pytest.raises(BackupUnsupported) as refused:
            await store.backup(tmp_path / "no-such-dir" / "copy.dump")
    pg_dump = find_pg_dump()
    assert pg_dump is not None
    listed = subprocess.run(
        [str(Path(pg_dump).with_name("pg_restore")), "--list", result.path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "TABLE DATA public items" in listed and result.bytes > 0
    assert refused.value.error_code == "BACKUP_UNSUPPORTED"
    assert "pg_dump --format=custom" in refused.value.message
    assert "no-such-dir/copy.dump" in refused.value.message


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
