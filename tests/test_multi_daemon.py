"""Several real daemons on one PostgreSQL database behave as one fleet.

Each daemon is a subprocess with its own socket and data directory, all on
one database of the session's throwaway cluster (tests/pg.py). The quick
tests ask one daemon and watch another; the slow one runs 2,000 items
through three daemons while one is killed with ``kill -9`` every few seconds
and restarted, and one is frozen with SIGSTOP past its lease TTL while
another takes its items, then let go: tests/invariants.py then checks the
database, with the fleet's own promises on top.
"""

from __future__ import annotations

import functools
import json
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client, RpcError
from readdod.errors import DaemonUnavailable
from tests import invariants, pg
from tests.daemon_proc import DaemonProc
from tests.test_metrics import samples

TEXT = "Group commit batches many small transactions into one fsync.\n\nIt keeps writes durable."


def fleet(
    root: Path,
    made: list[DaemonProc],
    names: str,
    dsn: str,
    *,
    delay_ms: int = 0,
    **daemon: Any,
) -> list[DaemonProc]:
    out = []
    for name in names:
        (root / name).mkdir()
        d = DaemonProc(
            root / name,
            ai={"engine": "fixed", "fixed_delay_ms": delay_ms},
            daemon={"skip_below": 0, **daemon},
            store={"backend": "postgresql", "dsn": dsn},
        )
        made.append(d)
        out.append(d)
    return out


class Watch:
    """``watch`` on a daemon, subscribed when made: its events as they come, 20 s apart at
    most."""

    def __init__(self, d: DaemonProc) -> None:
        self.client = Client(d.sock, timeout_s=20)
        self.client.call("watch")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            msg = json.loads(self.client.read_raw())
            if msg.get("method") == "event":
                yield msg["params"]

    def close(self) -> None:
        self.client.close()


def first(events: Watch, match: Callable[[dict[str, Any]], bool]) -> Any:
    for ev in events:
        if match(ev):
            return ev
    raise AssertionError("the watch ended first")


@pytest.fixture
def dsn() -> str:
    return pg.shared().new_database()


def test_watch_pause_resume_and_health_span_the_fleet(
    tmp_path: Path, daemons: list[DaemonProc], dsn: str
) -> None:
    a, b = fleet(tmp_path, daemons, "ab", dsn)
    a.start()
    b.start()
    id_a, id_b = a.call("ping")["worker_id"], b.call("ping")["worker_id"]
    on_b = Watch(b)
    item = a.call("capture", {"text": TEXT, "intent": "learn group commit"})["item"]["id"]
    queued = first(
        on_b,
        lambda e: (
            e["item_id"] == item
            and e["event"] == "item.transition"
            and e["data"].get("daemon") == id_a
        ),
    )
    assert queued["data"]["to"] in ("QUEUED", "PROCESSING")

    assert a.call("pause")["paused"] is True
    first(on_b, lambda e: e["event"] == "daemon.paused" and e["data"].get("daemon") == id_a)
    assert b.call("ping")["paused"] is True
    a.call("resume")
    first(on_b, lambda e: e["event"] == "daemon.resumed")
    assert b.call("ping")["paused"] is False
    on_b.close()

    health = a.call("health")
    assert health["daemon"] == id_a
    shown = {(m["daemon_id"], m["this"], m["alive"]) for m in health["fleet"]}
    assert shown == {(id_a, True, True), (id_b, False, True)}
    assert {m["daemon_id"] for m in b.call("stats")["fleet"]} == {id_a, id_b}
    # Each daemon's metrics carry its own id; the store's gauges are the same for all.
    _wait(lambda: a.call("get", {"id": item})["item"]["status"] == "READY", 60, "READY")
    seen = {}
    for d, own in ((a, id_a), (b, id_b)):
        got, _, labelled = samples(d.call("metrics")["text"])
        assert labelled == {own}
        seen[own] = {k: v for k, v in got.items() if k[0] == "readdod_items"}
    assert seen[id_a] == seen[id_b] and sum(seen[id_a].values()) == 1
    notices_a, _, _ = samples(a.call("metrics")["text"])
    notices_b, _, _ = samples(b.call("metrics")["text"])
    key = "readdod_fleet_notices_total"
    assert notices_a[(key, (("direction", "sent"),))] > 0
    assert notices_b[(key, (("direction", "heard"),))] > 0
    b.kill9()  # no clean stop: its row stays, not alive once silent ...
    assert {m["daemon_id"] for m in a.call("health")["fleet"]} == {id_a, id_b}
    b.start()  # ... until its next life, which knows its earlier one is dead
    again = b.call("ping")["worker_id"]
    assert {m["daemon_id"] for m in a.call("health")["fleet"]} == {id_a, again}
    assert b.stop() == 0
    assert [m["daemon_id"] for m in a.call("health")["fleet"]] == [id_a]


def test_a_daemon_killed_without_a_clean_stop_makes_the_others_health_degraded_until_it_is_back(
    tmp_path: Path, daemons: list[DaemonProc], dsn: str
) -> None:
    a, b = fleet(tmp_path, daemons, "ab", dsn, lease_ttl_s=1.5)  # a beat every 0.5 s
    a.start()
    b.start()
    id_b = b.call("ping")["worker_id"]
    assert a.call("health")["checks"]["silent_daemons"]["status"] == "ok"
    b.kill9()
    _wait(
        lambda: a.call("health")["checks"]["silent_daemons"]["status"] == "degraded",
        30,
        "the killed daemon to count as silent",
    )
    health = a.call("health")
    assert health["status"] in ("degraded", "unhealthy")
    assert any(id_b in reason and "silent" in reason for reason in health["reasons"])
    assert [m["alive"] for m in health["fleet"] if m["daemon_id"] == id_b] == [False]
    b.start()  # its next life knows its earlier one is dead and takes it out of the registry
    check = a.call("health")["checks"]["silent_daemons"]
    assert check["status"] == "ok" and check["value"] == 0
    assert b.stop() == 0


def test_archive_cancel_on_one_daemon_stops_the_actor_on_the_daemon_holding_the_lease(
    tmp_path: Path, daemons: list[DaemonProc], dsn: str
) -> None:
    # A step takes a minute: within seconds, only the cancel can end the actor.
    a, b = fleet(tmp_path, daemons, "ab", dsn, delay_ms=60_000)
    b.start()
    item = b.call("capture", {"text": TEXT, "intent": "learn group commit"})["item"]["id"]
    b.wait_log(lambda e: e["event"] == "step.started" and e.get("step") == "summary")
    a.start()
    assert a.call("archive", {"id": item, "cancel": True})["item"]["status"] == "ARCHIVED"
    b.wait_log(lambda e: e["event"] == "actor.cancelled" and e.get("item_id") == item, timeout=10)
    assert b.call("ping")["in_flight"] == 0
    rows = a.query("SELECT artifact_type FROM artifacts WHERE item_id = ?", (item,))
    assert rows == [("extraction",)], "the cancelled actor wrote nothing more"


class Chaos:
    """Captures through whichever daemon answers, while daemons die and freeze."""

    def __init__(self, ds: list[DaemonProc], seed: int) -> None:
        self.ds = ds
        self.rng = random.Random(seed)
        self.acknowledged: list[str] = []
        self.kills = 0
        self.stopping = threading.Event()
        self.frozen: DaemonProc | None = None
        self.lock = threading.Lock()

    def capture(self, n: int) -> None:
        for i in range(n):
            if self.stopping.is_set():
                return
            body = {"text": f"{TEXT}\n\nItem {i}.", "intent": "learn it", "capture_id": f"c{i}"}
            for attempt in range(200):
                d = self.ds[(i + attempt) % len(self.ds)]
                if d is self.frozen:
                    continue
                try:
                    with Client(d.sock, timeout_s=5) as c:
                        self.acknowledged.append(c.call("capture", body)["item"]["id"])
                    break
                except (DaemonUnavailable, RpcError, OSError):
                    continue  # killed or restarting: the next daemon takes it
            else:
                raise AssertionError(f"no daemon took capture {i}")

    def killer(self, victims: list[DaemonProc]) -> None:
        """Every 1.5-3 s: kill -9 one daemon and start it again."""
        while not self.stopping.wait(self.rng.uniform(1.5, 3)):
            d = self.rng.choice(victims)
            with self.lock:
                d.kill9()
                self.kills += 1
                d.start()


def _held_by(d: DaemonProc, owner: str) -> list[str]:
    return [r[0] for r in d.query("SELECT id FROM items WHERE lease_owner = ?", (owner,))]


def _wait(
    what: Callable[[], bool],
    timeout: float,
    why: str,
    diagnose: Callable[[], object] = lambda: "",
) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {why}; {diagnose()}")
        time.sleep(0.05)  # polling the database for a state, not to let time pass


def _first(
    conditions: dict[str, Callable[[], bool]],
    timeout: float,
    diagnose: Callable[[], object] = lambda: "",
) -> str:
    """The name of the first condition that holds."""
    deadline = time.monotonic() + timeout
    while True:
        for name, holds in conditions.items():
            if holds():
                return name
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for any of {list(conditions)}; {diagnose()}")
        time.sleep(0.05)  # polling the database for a state, not to let time pass


def _given_up(d: DaemonProc, owner: str, items: list[str]) -> bool:
    """None of ``items`` is leased to ``owner`` any more."""
    return not set(items) & set(_held_by(d, owner))


def _requeued_after_expiry(d: DaemonProc, items: list[str], since_seq: int) -> list[str]:
    """Those of ``items`` whose lease ran out and was requeued after event ``since_seq``.

    An item can also leave its owner's hands because the owner's last write was
    already on its way to the server when the owner froze: that item was
    finished, not taken over, and no late write of its actor is to be expected.
    """
    if not items:
        return []
    marks = ", ".join("?" for _ in items)
    rows = d.query(
        f"SELECT DISTINCT item_id FROM events WHERE seq > ? AND item_id IN ({marks})"
        " AND detail LIKE '%%lease_expired%%'",
        (since_seq, *items),
    )
    return sorted(r[0] for r in rows)


def _last_event(d: DaemonProc) -> int:
    return int(d.query("SELECT coalesce(max(seq), 0) FROM events")[0][0])


def _open_transactions(d: DaemonProc, *, older_than_s: float) -> int:
    """readdod sessions whose transaction has been open longer than ``older_than_s``."""
    rows = d.query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'readdod' AND xact_start < now() - make_interval(secs => ?)",
        (older_than_s,),
    )
    return int(rows[0][0])


def _sessions(d: DaemonProc) -> list[tuple[Any, ...]]:
    """The database's readdod sessions: what each waits for, and since when."""
    return d.query(
        "SELECT pid, application_name, state, wait_event, now() - xact_start,"
        " left(query, 80) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name LIKE 'readdod%%'"
    )


@pytest.mark.slow
def test_three_daemons_2000_items_kill_9_and_a_freeze_past_the_lease(
    tmp_path: Path,
    daemons: list[DaemonProc],
    dsn: str,
    record_property: Callable[[str, object], None],
) -> None:
    items = 2000
    ttl = 2.0
    # A frozen daemon must not hold row locks for ever: the server ends its open
    # transaction (as an operator's setting would), and the fence refuses the rest.
    dbname = dsn.rsplit("dbname=", 1)[1]
    pg.shared().execute(
        f"ALTER DATABASE \"{dbname}\" SET idle_in_transaction_session_timeout = '1s'"
    )
    ds = fleet(tmp_path, daemons, "abc", dsn, delay_ms=20, lease_ttl_s=ttl, concurrency=16)
    for d in ds:
        d.start()
    started = time.monotonic()
    chaos = Chaos(ds, seed=21)
    frozen, victims = ds[0], ds[1:]
    capturing = threading.Thread(target=chaos.capture, args=(items,))
    killer = threading.Thread(target=chaos.killer, args=(victims,))
    try:
        capturing.start()

        # Freeze daemon a while it holds items; wait until another daemon has taken them.
        # A freeze that lands inside one of its transactions keeps that transaction's rows
        # locked until it runs again (PostgreSQL ends no session that waits, pipelined, for
        # its client): that is not the failure under test, so it is let go and frozen again.
        owner = frozen.call("ping")["worker_id"]
        assert frozen.proc is not None
        inside_a_transaction = finished_in_flight = 0
        taken: list[str] = []
        for _ in range(20):
            _wait(
                lambda: len(_held_by(frozen, owner)) >= 3, 60, "the daemon to freeze to hold items"
            )
            frozen.proc.send_signal(signal.SIGSTOP)
            chaos.frozen = frozen
            held = _held_by(frozen, owner)
            since = _last_event(frozen)
            outcome = _first(
                {
                    "taken": functools.partial(_given_up, victims[0], owner, held),
                    "locked": lambda: _open_transactions(victims[0], older_than_s=ttl) > 0,
                },
                10 * ttl + 30,
                lambda: f"sessions: {_sessions(victims[0])}",
            )
            if outcome == "taken":
                taken = _requeued_after_expiry(victims[0], held, since)
                if taken:
                    break
                finished_in_flight += 1  # its writes were on their way when it froze
            else:
                inside_a_transaction += 1
            frozen.proc.send_signal(signal.SIGCONT)
            chaos.frozen = None
        else:
            raise AssertionError(
                f"no freeze had its items taken over: {inside_a_transaction} landed inside a"
                f" transaction, {finished_in_flight} froze with its last writes on their way"
            )
        killer.start()
        frozen.proc.send_signal(signal.SIGCONT)
        chaos.frozen = None
        frozen_for = time.monotonic() - started

        capturing.join(timeout=300)
        assert not capturing.is_alive()
        _wait(
            lambda: (
                victims[0].query("SELECT count(*) FROM items WHERE status = 'READY'")[0][0] >= items
                and chaos.kills >= 3
            ),
            240,
            f"{items} items READY and three kills",
        )
    finally:
        # Whatever happened, no thread starts a daemon after the test has let go of them.
        chaos.stopping.set()
        for thread in (capturing, killer):
            if thread.is_alive():
                thread.join(timeout=120)
    for d in ds:
        assert d.stop() == 0, d.stderr[-2000:]
    wall = time.monotonic() - started

    acknowledged = set(chaos.acknowledged)
    violations = invariants.check_postgresql(dsn, acknowledged=acknowledged)
    statuses = dict(ds[0].query("SELECT status, count(*) FROM items GROUP BY status"))
    ready_moves = Counter(
        r[0] for r in ds[0].query("SELECT item_id FROM events WHERE to_status = 'READY'")
    )
    versions = ds[0].query(
        "SELECT item_id, artifact_type, count(*) FROM artifacts WHERE created_by = 'system'"
        " GROUP BY item_id, artifact_type HAVING count(*) > 1"
    )
    late = [e for e in frozen.logs if e["event"] == "lease.lost" and e.get("item_id") in set(taken)]
    record_property(
        "figures",
        f"{items} items on 3 daemons: {chaos.kills} kill -9, 1 freeze of"
        f" {len(taken)} leased items taken over ({frozen_for:.1f} s in;"
        f" {inside_a_transaction} earlier freezes landed inside a transaction,"
        f" {finished_in_flight} with their last writes on their way), {len(violations)} violations,"
        f" {len(late)} late writes refused, {wall:.1f} s",
    )
    assert len(acknowledged) == items
    assert violations == []
    assert statuses == {"READY": items}, "every acknowledged capture READY, none PROCESSING"
    assert [i for i, n in ready_moves.items() if n != 1] == [], "each item made READY once"
    assert versions == [], "no step finished twice: one system artifact per item and step"
    assert chaos.kills >= 3
    assert late, "the frozen daemon's actors tried to write after the takeover and were refused"


@pytest.fixture
def own_cluster() -> Iterator[pg.Cluster]:
    """A cluster of the test's own, to restart without disturbing other tests."""
    cluster = pg.Cluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_after_a_database_restart_the_daemons_listen_again_and_wake_each_other(
    own_cluster: pg.Cluster, tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """The LISTEN connection dies with the server; once it is back, a capture on a full
    daemon is claimed by the other within seconds, though its claim timer is a minute."""
    dsn = own_cluster.new_database()
    (b,) = fleet(tmp_path, daemons, "b", dsn, claim_interval_s=60)
    (tmp_path / "a").mkdir()
    a = DaemonProc(  # one slot, held by an item whose step takes ten minutes
        tmp_path / "a",
        ai={"engine": "fixed", "fixed_delay_ms": 600_000},
        daemon={"skip_below": 0, "concurrency": 1, "claim_interval_s": 60},
        store={"backend": "postgresql", "dsn": dsn},
    )
    daemons.append(a)
    a.start()
    b.start()
    held = a.call("capture", {"text": TEXT, "intent": "hold the slot"})["item"]
    assert held["status"] == "PROCESSING"
    own_cluster.restart()
    b.wait_log(lambda e: e["event"] == "fleet.listen_failed", timeout=60)
    b.wait_log(lambda e: e["event"] == "fleet.relistened", timeout=60)
    item = a.call("capture", {"text": TEXT, "intent": "be picked up"})["item"]
    assert item["status"] == "QUEUED"
    b.wait_log(
        lambda e: (
            e["event"] == "item.transition"
            and e.get("item_id") == item["id"]
            and e.get("to") == "READY"
        ),
        timeout=20,
    )
