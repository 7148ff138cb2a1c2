"""Upgrading a database written by an older readdod: nothing is lost, and the
triggers of the new schema behave as the old ones did."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from importlib import resources
from pathlib import Path

import msgspec
import pytest

from readdod.errors import InternalError
from readdod.store import SqliteStore, SqliteUnitOfWork
from readdod.store.sqlite import SCHEMA_VERSION
from tests import invariants
from tests.daemon_proc import DaemonProc
from tests.payloads import CARD, SUMMARY, TODOS

pytestmark = pytest.mark.anyio

_KEY = "artifacts.item_id, artifacts.artifact_type, artifacts.{}"

_ARTIFACTS = [
    # item, type, version, by, run, payload, meta, created_at
    ("a", "extraction", 1, "system", "ra", '{"text":"old words about herons"}', "{}", 5),
    ("a", "extraction", 2, "user", None, '{"text":"edited words about kestrels"}', "{}", 7),
    ("a", "summary", 1, "system", "ra", '{"summary":"s \\u0000 \u2028 🙂"}', '{"m":1}', 6),
    ("b", "extraction", 1, "system", "rb", '{"text":"plain words about otters"}', "{}", 3),
]


_SOURCES = [("a", "<p>herons \u0000 🙂</p>" * 400, None), ("b", None, "otters " * 900)]


def _old_database(path: Path, version: int) -> None:
    """A database at schema ``version``, by the migrations of the time, with items
    whose extracted text (one of them edited by a person) is indexed."""
    conn = sqlite3.connect(path, isolation_level=None)
    folder = resources.files("readdod.store.sqlite") / "migrations"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql") and int(entry.name.split("_", 1)[0]) <= version:
            conn.executescript(f"BEGIN;\n{entry.read_text('utf-8')}\nCOMMIT;")
    conn.execute(f"PRAGMA user_version = {version}")
    for item in ("a", "b"):
        conn.execute(
            "INSERT INTO items (id, source_type, title, intent_text, status, created_at,"
            " updated_at) VALUES (?, 'text', ?, 'read later', 'READY', 1, 1)",
            (item, f"title {item}"),
        )
    conn.executemany("INSERT INTO item_sources (item_id, html, text) VALUES (?, ?, ?)", _SOURCES)
    conn.executemany(
        "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id, payload,"
        " meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        _ARTIFACTS,
    )
    conn.close()


def _search(tx: SqliteUnitOfWork, words: str) -> list[str]:
    return [
        r[0]
        for r in tx.execute(
            "SELECT i.id FROM items_fts JOIN items i ON i.rowid = items_fts.rowid"
            " WHERE items_fts MATCH ? ORDER BY i.id",
            (words,),
        )
    ]


async def test_artifacts_and_sources_survive_the_move_to_rowid_tables_and_stay_indexed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _old_database(path, 9)
    async with SqliteStore.open(path) as store:
        rows = await store.read(
            lambda tx: tx.execute(
                "SELECT item_id, artifact_type, version, created_by, run_id, payload, meta,"
                " created_at FROM artifacts ORDER BY item_id, artifact_type, version"
            ).fetchall()
        )
        assert rows == sorted(_ARTIFACTS)
        sources = await store.read(lambda tx: [(i, *tx.source(i)) for i in ("a", "b")])
        assert sources == _SOURCES
        version = await store.read(lambda tx: tx.execute("PRAGMA user_version").fetchone()[0])
        assert version == SCHEMA_VERSION
        tables = await store.read(
            lambda tx: tx.execute(
                "SELECT name, sql FROM sqlite_schema WHERE type = 'table'"
                " AND name IN ('artifacts', 'item_sources')"
            ).fetchall()
        )
        assert len(tables) == 2
        assert not [name for name, sql in tables if "WITHOUT ROWID" in sql.upper()]

        # The index kept what it had: a person's edit wins over the system's text.
        assert await store.read(lambda tx: _search(tx, "kestrels")) == ["a"]
        assert await store.read(lambda tx: _search(tx, "otters")) == ["b"]

        # The trigger came along: a new system extraction reindexes an unedited item only.
        def extract(tx: SqliteUnitOfWork) -> None:
            for item, words in (("a", "sparrows"), ("b", "beavers")):
                tx.execute(
                    "INSERT INTO artifacts (item_id, artifact_type, version, created_by,"
                    " run_id, payload, meta, created_at) VALUES (?, 'extraction', 3,"
                    " 'system', ?, ?, '{}', 9)",
                    (item, f"r2{item}", f'{{"text":"new words about {words}"}}'),
                )

        await store.write(extract)
        assert await store.read(lambda tx: _search(tx, "beavers")) == ["b"]
        assert await store.read(lambda tx: _search(tx, "otters")) == []
        assert await store.read(lambda tx: _search(tx, "sparrows")) == []
        assert await store.read(lambda tx: _search(tx, "kestrels")) == ["a"]

        # One system artifact per run and step, and versions unique, as before.
        refused = [
            ("run_id", "('b', 'extraction', 4, 'system', 'r2b', '{}', '{}', 10)"),
            ("version", "('b', 'summary', 1, 'user', NULL, '{}', '{}', 10)," * 2),
        ]
        for key, values in refused:
            sql = (
                "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,"
                f" payload, meta, created_at) VALUES {values.rstrip(',')}"
            )
            with pytest.raises(
                InternalError, match=re.escape("UNIQUE constraint failed: " + _KEY.format(key))
            ):
                await store.write(lambda tx, sql=sql: tx.execute(sql))  # type: ignore[misc]


def test_runs_of_an_older_database_become_attempts_and_its_cards_their_ready_run(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """Schema 10 to 11 through the real daemon: every run gets its attempt, a READY
    item the run it shows, and a queued run goes on as before."""
    d = DaemonProc(tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 0})
    daemons.append(d)
    d.data.mkdir(parents=True)
    conn = sqlite3.connect(d.db_path, isolation_level=None)
    folder = resources.files("readdod.store.sqlite") / "migrations"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql") and int(entry.name.split("_", 1)[0]) <= 10:
            conn.executescript(f"BEGIN;\n{entry.read_text('utf-8')}\nCOMMIT;")
    conn.execute("PRAGMA user_version = 10")
    score = {"match_score": 61, "priority": "P1", "reasons": ["a", "b", "c"],
             "recommendation": "read"}  # fmt: skip
    payloads = {
        "extraction": {"text": "Old words.", "source": "provided_text", "extractor": "t"},
        "summary": msgspec.to_builtins(SUMMARY),
        "score": score,
        "todos": msgspec.to_builtins(TODOS),
        "card": {**msgspec.to_builtins(CARD), "priority": "P1", "match_score": 61},
    }
    items = [("R", "READY", "r1", "succeeded"), ("Q", "QUEUED", "r2", "queued")]
    for iid, status, run, run_status in items:
        conn.execute(
            "INSERT INTO items (id, source_type, intent_text, status, priority, match_score,"
            " current_run_id, created_at, updated_at) VALUES (?, 'text', 'old', ?, 'P1', 61,"
            " ?, 1, 1)",
            (iid, status, run),
        )
        conn.execute(
            "INSERT INTO item_sources (item_id, text) VALUES (?, 'Old words about a queue.')",
            (iid,),
        )
        conn.execute(
            "INSERT INTO runs (run_id, item_id, mode, status, attempts, created_at)"
            " VALUES (?, ?, 'PROCESS', ?, 1, 1)",
            (run, iid, run_status),
        )
        moves = [
            ("capture", None, "CAPTURED", "user"),
            ("transition", "CAPTURED", "QUEUED", "system"),
        ]
        if status == "READY":
            moves += [
                ("transition", "QUEUED", "PROCESSING", "system"),
                ("transition", "PROCESSING", "READY", "system"),
            ]
            for kind, payload in payloads.items():
                conn.execute(
                    "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,"
                    " payload, meta, created_at) VALUES (?, ?, 1, 'system', ?, ?, ?, 1)",
                    (iid, kind, run, json.dumps(payload), json.dumps({"run_id": run})),
                )
        for kind, src, dst, trigger in moves:
            # Recent history: the daemon's retention at start leaves it alone.
            conn.execute(
                "INSERT INTO events (at, item_id, kind, from_status, to_status, trigger)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (int(time.time() * 1000), iid, kind, src, dst, trigger),
            )
    conn.close()

    d.start()
    d.wait_log(lambda e: e["event"] == "item.transition" and e["to"] == "READY")
    ready = d.call("get", {"id": "R"})
    assert ready["item"]["ready_run_id"] == "r1"
    assert [(a["run_id"], a["status"]) for a in ready["attempts"]] == [("r1", "succeeded")]
    assert invariants.shown_problems(ready) == []
    queued = d.call("get", {"id": "Q"})
    assert queued["item"]["status"] == "READY" and queued["item"]["ready_run_id"] == "r2"
    # The run's migrated attempt is the one that ran.
    assert [(a["mode"], a["status"]) for a in queued["attempts"]] == [("PROCESS", "succeeded")]
    assert d.stop() == 0
    assert invariants.check(d.db_path) == []
