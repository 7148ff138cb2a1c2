"""Retention through the real daemon and CLI: with every stored time 60 days old, the
runs, attempts and events of READY, SHIPPED and FAILED items go, by their own age and
outcome, while what each item shows stays (its versions, the run it shows, its last
failure); ``prune --dry-run`` counts each kind first; the daemon's own pruning does the
same; the token totals stay."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests import invariants, pg
from tests.aging import DAY_MS, age_everything, age_postgresql
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config

TERMINAL = ("READY", "FAILED_AI", "SHIPPED")
TEXT = "SQLite in WAL mode lets readers and one writer work at once. Checkpoints fold the log."


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def dsn(request: pytest.FixtureRequest) -> str | None:
    """The store the daemon runs on: its SQLite file (None), or a PostgreSQL database."""
    return pg.shared().new_database() if request.param == "postgresql" else None


def start(
    made: list[DaemonProc], root: Path, fake: FakeOpenAI, dsn: str | None, *, prune: bool
) -> DaemonProc:
    d = DaemonProc(
        root,
        ai=ai_config(fake.base_url),
        daemon={"skip_below": 0},
        retention={"enabled": prune},
        export={"dir": str(root / "cards")},
        **({"store": {"backend": "postgresql", "dsn": dsn}} if dsn else {}),
        **NO_AUTO_RETRY,
    )
    made.append(d)
    return d.start()


def age(d: DaemonProc, days: int) -> int:
    """Every time the stopped daemon's store holds, ``days`` older."""
    if d.dsn is not None:
        return age_postgresql(d.dsn, days * DAY_MS)
    with closing(sqlite3.connect(d.db_path)) as db, db:
        return age_everything(db, days * DAY_MS)


def holds_together(d: DaemonProc) -> list[str]:
    """The invariants of the stopped daemon's store, retention having pruned it."""
    if d.dsn is not None:
        return invariants.check_postgresql(d.dsn, pruned=True)
    return invariants.check(d.db_path, pruned=True)


def settle(d: DaemonProc, item_id: str, count: int) -> dict[str, Any]:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in TERMINAL
        ),
        count=count,
    )
    got: dict[str, Any] = d.call("get", {"id": item_id, "history": True})
    return got


def shows(got: dict[str, Any]) -> dict[str, Any]:
    """What a person sees of an item: its state, failure, versions shown and the run."""
    item = got["item"]
    return {
        "status": item["status"],
        "failure": item["failure"],
        "ready_run_id": item.get("ready_run_id"),
        "artifacts": {k: (a["version"], a["run_id"]) for k, a in got["artifacts"].items()},
    }


def history(d: DaemonProc, item_id: str) -> tuple[int, int, int]:
    """(runs, attempts, events) the store holds of an item."""
    return (
        d.query("SELECT count(*) FROM runs WHERE item_id = ?", (item_id,))[0][0],
        d.query("SELECT count(*) FROM attempts WHERE item_id = ?", (item_id,))[0][0],
        d.query("SELECT count(*) FROM events WHERE item_id = ?", (item_id,))[0][0],
    )


def test_sixty_days_on_every_items_old_history_goes_and_what_it_shows_stays(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc], dsn: str | None
) -> None:
    d = start(daemons, tmp_path, fake, dsn, prune=False)
    ready = d.call("capture", {"text": TEXT, "intent": "tune WAL readymark"})["item"]["id"]
    shipped = d.call("capture", {"text": TEXT, "intent": "tune WAL shipmark"})["item"]["id"]
    fake.fault("failmark", "400", step="score")
    failed = d.call("capture", {"text": TEXT, "intent": "tune WAL failmark"})["item"]["id"]
    assert settle(d, ready, 1)["item"]["status"] == "READY"
    assert settle(d, shipped, 1)["item"]["status"] == "READY"
    assert settle(d, failed, 1)["item"]["status"] == "FAILED_AI"
    # A second run of each: the first becomes history.
    for item_id in (ready, shipped, failed):
        d.call("process", {"id": item_id, "regenerate": True})
    assert settle(d, ready, 2)["item"]["status"] == "READY"
    assert settle(d, shipped, 2)["item"]["status"] == "READY"
    d.call("export", {"id": shipped})
    assert settle(d, failed, 2)["item"]["status"] == "FAILED_AI"
    items = {"READY": ready, "SHIPPED": shipped, "FAILED_AI": failed}
    seen = {s: shows(d.call("get", {"id": i})) for s, i in items.items()}
    assert {s: v["status"] for s, v in seen.items()} == {s: s for s in items}
    assert seen["FAILED_AI"]["failure"] is not None
    before = {s: history(d, i) for s, i in items.items()}
    tokens = d.call("stats")["tokens"]
    assert tokens["prompt"] > 0
    assert d.stop() == 0

    assert age(d, 60) > 0
    d = start(daemons, tmp_path, fake, dsn, prune=False)
    dry = json.loads(run_cli(d, "prune", "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True
    # The superseded first run of each item (with its attempt), and their events.
    assert dry["removed"]["runs"] == 3 and dry["removed"]["attempts"] == 3
    assert dry["removed"]["events"] > 0
    assert {s: history(d, i) for s, i in items.items()} == before
    text = run_cli(d, "prune")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("removed 3 runs (3 attempts,"), text.stdout
    after = {s: history(d, i) for s, i in items.items()}
    for state, item_id in items.items():
        runs, attempts, events = after[state]
        # The run shown stays (and a shipped item's export, when it shipped).
        assert runs == attempts == (2 if state == "SHIPPED" else 1), (state, after[state])
        assert events < before[state][2]
        got = d.call("get", {"id": item_id, "history": True})
        assert shows(got) == seen[state]
        # Its capture stays (where it came from), and the events of the run it shows.
        kept_runs = {r["run_id"] for r in got["runs"]}
        assert {e["kind"] for e in got["events"] if e["run_id"] is None} <= {"capture"}
        assert all(e["run_id"] in kept_runs for e in got["events"] if e["run_id"])
    assert (
        sum(b[2] - a[2] for a, b in zip(after.values(), before.values(), strict=True))
        == (dry["removed"]["events"])
    )
    assert d.call("stats")["tokens"] == tokens
    # What the items show holds together: their runs, versions and events' chains.
    assert d.stop() == 0
    assert holds_together(d) == []
    d = start(daemons, tmp_path, fake, dsn, prune=False)
    assert json.loads(run_cli(d, "prune", "--json").stdout)["removed"] == dict.fromkeys(
        dry["removed"], 0
    )

    # The daemon's own pruning (at start, then daily) does the same.
    d.call("process", {"id": ready, "regenerate": True})
    assert settle(d, ready, 1)["item"]["status"] == "READY"  # logs of this start
    seen["READY"] = shows(d.call("get", {"id": ready}))
    assert history(d, ready)[0] == 2
    assert d.stop() == 0
    age(d, 60)
    d = start(daemons, tmp_path, fake, dsn, prune=True)
    pruned = d.wait_log(lambda e: e["event"] == "retention.pruned" and not e["dry_run"])[0]
    assert pruned["runs"] == 1 and pruned["attempts"] == 1
    assert history(d, ready)[:2] == (1, 1)
    assert shows(d.call("get", {"id": ready})) == seen["READY"]
    # Every token the model server reported, the pruned runs' included.
    tokens = d.call("stats")["tokens"]
    assert (tokens["prompt"], tokens["completion"]) == fake.tokens_reported()
    assert d.stop() == 0
    assert holds_together(d) == []
