"""Crash loops: kill the daemon again and again under a mixed workload, then
check every invariant (tests/invariants.py). First, the checker itself on
hand-built bad databases, so that it is known to fail when it should."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod.control.client import Client, RpcError
from readdod.errors import DaemonUnavailable
from readdod.export import markdown, naming
from readdod.runtime import faults
from readdod.steps import NAMES as STEPS
from tests import invariants
from tests.daemon_proc import DaemonProc
from tests.payloads import CARD, SCORE, SUMMARY, TODOS

# --- the checker on hand-built databases -------------------------------------

EXTRACTION = {"text": "Body.", "source": "provided_text", "extractor": "test"}
PAYLOADS = {
    "extraction": EXTRACTION,
    "summary": msgspec.to_builtins(SUMMARY),
    "score": msgspec.to_builtins(SCORE),
    "todos": msgspec.to_builtins(TODOS),
    "card": msgspec.to_builtins(CARD),
}
#: The status events of an item that was processed once and became READY.
TO_READY = [
    ("capture", None, "CAPTURED", "user"),
    ("transition", "CAPTURED", "QUEUED", "system"),
    ("transition", "QUEUED", "PROCESSING", "system"),
    ("transition", "PROCESSING", "READY", "system"),
]


class Hand:
    """A readdod database written by hand: the real schema, rows chosen by the test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "readdod.db"
        self.exports = root / "exports"
        self.exports.mkdir()
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA synchronous = OFF")  # a scratch file: no fsync needed
        folder = resources.files("readdod.store.sqlite") / "migrations"
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".sql"):
                self.conn.executescript(entry.read_text("utf-8"))

    def item(self, iid: str, status: str, run_id: str | None, **fields: object) -> None:
        cols = {
            "id": iid,
            "source_type": "text",
            "intent_text": "x",
            "status": status,
            "current_run_id": run_id,
            "created_at": 1,
            "updated_at": 1,
            **fields,
        }
        self.conn.execute(
            f"INSERT INTO items ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            list(cols.values()),
        )

    def run(self, run_id: str, iid: str, status: str = "succeeded", mode: str = "PROCESS") -> None:
        """A run with one attempt in the same state."""
        self.conn.execute(
            "INSERT INTO runs (run_id, item_id, mode, status, created_at) VALUES (?, ?, ?, ?, 1)",
            (run_id, iid, mode, status),
        )
        self.conn.execute(
            "INSERT INTO attempts (attempt_id, run_id, item_id, mode, status, created_at,"
            " finished_at) VALUES (?, ?, ?, ?, ?, 1, ?)",
            (run_id, run_id, iid, mode, status, None if status in ("queued", "running") else 2),
        )

    def artifact(
        self, iid: str, kind: str, run_id: str, version: int = 1, created_by: str = "system"
    ) -> None:
        self.conn.execute(
            "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id, payload,"
            " meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
            (
                iid,
                kind,
                version,
                created_by,
                run_id,
                json.dumps(PAYLOADS[kind]),
                json.dumps({"run_id": run_id, "engine": "test"}),
            ),
        )

    def events(self, iid: str, steps: Sequence[tuple[Any, ...]]) -> None:
        """(kind, from, to, trigger[, detail]) rows, in order."""
        for kind, src, dst, trigger, *detail in steps:
            self.conn.execute(
                "INSERT INTO events (at, item_id, kind, from_status, to_status, trigger, detail)"
                " VALUES (1, ?, ?, ?, ?, ?, ?)",
                (iid, kind, src, dst, trigger, json.dumps(detail[0] if detail else {})),
            )

    def ready(self, iid: str, run_id: str) -> None:
        """A READY item with the whole artifact set of one run and its history."""
        score = PAYLOADS["score"]
        self.item(
            iid,
            "READY",
            run_id,
            ready_run_id=run_id,
            priority=score["priority"],
            match_score=score["match_score"],
        )
        self.run(run_id, iid)
        for kind in PAYLOADS:
            self.artifact(iid, kind, run_id)
        self.events(iid, TO_READY)

    def shipped(self, iid: str, run_id: str) -> Path:
        """A SHIPPED item with one Markdown export on disk."""
        self.ready(iid, run_id)
        self.conn.execute("UPDATE items SET status = 'SHIPPED' WHERE id = ?", (iid,))
        self.conn.execute(
            "INSERT INTO events (at, item_id, kind, from_status, to_status, trigger, detail)"
            " VALUES (1, ?, 'transition', 'READY', 'SHIPPED', 'user', ?)",
            (iid, json.dumps({"op": "export", "export_key": f"k-{iid}"})),
        )
        path = self.exports / f"{iid}.md"
        path.write_bytes(markdown.marker(iid) + b"title: t\n---\n\n# t\n")
        self.conn.execute(
            "INSERT INTO exports (export_key, item_id, card_version, template_version, format,"
            " files, created_at) VALUES (?, ?, 1, 'md.v1', 'markdown', ?, 1)",
            (f"k-{iid}", iid, json.dumps([str(path)])),
        )
        return path

    def check(self, **kw: object) -> list[str]:
        return invariants.check(self.path, export_dir=self.exports, **kw)  # type: ignore[arg-type]


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[Hand]:
    h = Hand(tmp_path)
    h.ready("I1", "R1")
    h.shipped("I2", "R2")
    yield h
    h.conn.close()


def one(violations: list[str], *needles: str) -> None:
    assert len(violations) == 1, violations
    assert all(n in violations[0] for n in needles), violations


def test_a_sound_database_passes(hand: Hand) -> None:
    (hand.exports / ".x.md.0a1b2c3d.tmp").write_bytes(b"---\nid: I2\nhalf")
    assert hand.check(acknowledged=["I1", "I2"]) == []


def test_a_lost_acknowledged_capture_is_reported(hand: Hand) -> None:
    one(hand.check(acknowledged=["I1", "I9"]), "I9", "not in the database")


def test_processing_without_a_live_lease(hand: Hand) -> None:
    hand.item("P1", "PROCESSING", "RP", lease_owner="w", lease_expires_at=10**15)
    hand.run("RP", "P1", status="running")
    hand.events("P1", [TO_READY[0], TO_READY[1], ("transition", "QUEUED", "PROCESSING", "system")])
    one(hand.check(), "P1", "PROCESSING with the daemon stopped")
    assert hand.check(crashed=True) == []  # an orphan the next start requeues
    hand.conn.execute("UPDATE items SET lease_owner = NULL WHERE id = 'P1'")
    one(hand.check(crashed=True), "P1", "without a lease owner")
    hand.conn.execute("UPDATE items SET lease_owner = 'w', status = 'QUEUED' WHERE id = 'P1'")
    hand.events("P1", [("transition", "PROCESSING", "QUEUED", "system")])
    hand.conn.execute("UPDATE runs SET status = 'queued' WHERE run_id = 'RP'")
    hand.conn.execute("UPDATE attempts SET status = 'queued' WHERE run_id = 'RP'")
    one(hand.check(), "P1", "QUEUED but still carries a lease")
    hand.conn.execute("UPDATE items SET lease_owner = NULL, lease_expires_at = NULL")
    hand.run("RX", "I1", status="running")  # a run nobody will ever finish
    one(hand.check(), "RX", "still running", "READY")


def test_a_chunk_left_in_flight(hand: Hand) -> None:
    hand.item("P1", "PROCESSING", "RP", lease_owner="w", lease_expires_at=10**15)
    hand.run("RP", "P1", status="running")
    hand.events("P1", [TO_READY[0], TO_READY[1], ("transition", "QUEUED", "PROCESSING", "system")])
    for idx, status in enumerate(["done", "retrying", "pending"]):
        hand.conn.execute(
            "INSERT INTO chunks (run_id, step, idx, status, updated_at)"
            " VALUES ('RP', 'summary', ?, ?, 1)",
            (idx, status),
        )
    assert hand.check(crashed=True) == []  # the next start requeues the run and its chunk
    hand.conn.execute(
        "UPDATE items SET status = 'QUEUED', lease_owner = NULL,"
        " lease_expires_at = NULL WHERE id = 'P1'"
    )
    hand.conn.execute("UPDATE runs SET status = 'queued' WHERE run_id = 'RP'")
    hand.conn.execute("UPDATE attempts SET status = 'queued' WHERE run_id = 'RP'")
    hand.events("P1", [("transition", "PROCESSING", "QUEUED", "system", {"reason": "pause"})])
    one(hand.check(), "chunk 1 of step summary of run RP is retrying", "nobody works on it")
    one(hand.check(crashed=True), "chunk 1", "its item P1 is QUEUED")
    hand.conn.execute("UPDATE chunks SET status = 'pending' WHERE idx = 1")
    assert hand.check() == []


def test_the_crash_loop_limit(hand: Hand) -> None:
    orphaned = ("transition", "PROCESSING", "QUEUED", "system", {"reason": "orphan_recovery"})
    claimed = TO_READY[2]
    lost = {"error_code": "WORKER_LOST"}
    hand.item("W1", "FAILED_AI", "RW", failure=json.dumps(lost))
    hand.run("RW", "W1", status="failed")
    hand.events("W1", [TO_READY[0], TO_READY[1], TO_READY[2]])
    hand.events("W1", [orphaned, claimed, ("step", None, None, "system", {}), orphaned, claimed])
    hand.events("W1", [("transition", "PROCESSING", "FAILED_AI", "system", lost)])
    one(hand.check(max_orphanings=3), "W1", "WORKER_LOST after only 2 orphanings")
    assert hand.check() == []
    hand.conn.execute("DELETE FROM events WHERE kind = 'step'")
    assert hand.check(max_orphanings=3) == []
    one(hand.check(max_orphanings=2), "W1", "requeued it after 2 orphanings")
    # A finished chunk is progress as a finished step is; one still in flight is not.
    hand.conn.execute("DELETE FROM events WHERE item_id = 'W1'")
    hand.events("W1", [TO_READY[0], TO_READY[1], TO_READY[2]])
    chunk_done = ("chunk", None, None, "system", {"state": "done", "chunk": 0})
    hand.events("W1", [orphaned, claimed, chunk_done, orphaned, claimed])
    hand.events("W1", [("transition", "PROCESSING", "FAILED_AI", "system", lost)])
    one(hand.check(max_orphanings=3), "W1", "WORKER_LOST after only 2 orphanings")
    hand.conn.execute(
        "UPDATE events SET detail = json('{\"state\": \"retrying\"}') WHERE kind = 'chunk'"
    )
    assert hand.check(max_orphanings=3) == []


def test_crash_points_can_wait_for_their_nth_visit() -> None:
    assert faults._parse("step:summary@3, export:written,tx:capture@0,,x@y") == {
        "step:summary": 3,
        "export:written": 1,
        "tx:capture": 1,
        "x": 1,
    }


def test_an_incomplete_or_mixed_artifact_set(hand: Hand) -> None:
    hand.conn.execute("DELETE FROM artifacts WHERE item_id = 'I1' AND artifact_type = 'card'")
    one(hand.check(), "I1", "has no card")
    hand.run("R0", "I1")
    hand.artifact("I1", "card", "R0")  # a card, but of another run
    one(hand.check(), "I1", "has no card")
    hand.artifact("I1", "card", "R1", version=2)
    assert hand.check() == []
    hand.artifact("I1", "card", "R1", version=3, created_by="user")  # an edit on top
    assert hand.check() == []
    hand.conn.execute(
        "UPDATE artifacts SET payload = '{\"items\": []}' WHERE item_id = 'I1'"
        " AND artifact_type = 'todos'"
    )
    one(hand.check(), "I1", "todos", "not valid")


def test_a_regenerate_may_reuse_the_extraction_but_needs_one(hand: Hand) -> None:
    hand.run("R3", "I1", mode="REGENERATE")
    for kind in ("summary", "score", "todos", "card"):
        hand.artifact("I1", kind, "R3", version=2)
    hand.conn.execute("UPDATE items SET current_run_id = 'R3', ready_run_id = 'R3' WHERE id = 'I1'")
    assert hand.check() == []
    hand.conn.execute("DELETE FROM artifacts WHERE item_id = 'I1' AND artifact_type = 'extraction'")
    hand.conn.execute("UPDATE items_fts SET body = '' WHERE rowid = 1")  # indexed as it now is
    one(hand.check(), "I1", "no extraction and none to reuse")


def test_a_step_committed_twice_for_one_run(hand: Hand) -> None:
    hand.conn.execute("DROP INDEX artifacts_one_per_run")  # the store's guard, gone
    hand.artifact("I1", "summary", "R1", version=2)
    one(hand.check(), "I1", "summary committed 2 artifacts for run R1")
    hand.conn.execute(
        "UPDATE artifacts SET meta = '{\"run_id\": \"R9\"}' WHERE item_id = 'I1' AND version = 2"
    )
    assert any("says run R9" in v for v in hand.check())


def test_a_search_index_out_of_step(hand: Hand) -> None:
    hand.conn.execute("UPDATE items_fts SET body = 'stale' WHERE rowid = 1")
    one(hand.check(), "I1", "search index holds", "stale")
    hand.conn.execute("DROP TRIGGER items_fts_delete")  # the store's guard, gone
    hand.conn.execute("DELETE FROM items WHERE id = 'I1'")
    assert any("row 1 of no item" in v for v in hand.check())


def test_exports_that_do_not_match_the_disk(hand: Hand) -> None:
    path = hand.exports / "I2.md"
    whole = path.read_bytes()
    path.write_bytes(whole[:20])
    one(hand.check(), "I2", "not a whole Markdown export")
    path.unlink()
    one(hand.check(), "I2", "not on disk")
    path.write_bytes(whole)
    hand.conn.execute("UPDATE exports SET export_key = 'other'")
    one(hand.check(), "I2", "says export k-I2 shipped it")
    hand.conn.execute("UPDATE exports SET export_key = 'k-I2'")
    (hand.exports / "stray.md").write_text("a note of mine\n")
    one(hand.check(), "stray.md", "belongs to no export")
    (hand.exports / "stray.md").write_bytes(markdown.marker("I1") + b"title: t\n---\n\n# t\n")
    assert hand.check() == []  # written just before a crash: the next export adopts it
    (hand.exports / "stray-2.md").write_bytes(markdown.marker("I1") + b"title: u\n---\n\n# u\n")
    one(hand.check(), "I1", "2 markdown files")
    (hand.exports / "stray-2.md").unlink()
    (hand.exports / "stray.md").write_bytes(markdown.marker("I1") + b"title: t")
    one(hand.check(), "stray.md", "unrecorded", "not a whole")


def test_a_failure_where_it_belongs(hand: Hand) -> None:
    hand.item("F1", "FAILED_AI", "RF", failure=None)
    hand.run("RF", "F1", status="failed")
    hand.events("F1", [*TO_READY[:3], ("transition", "PROCESSING", "FAILED_AI", "system")])
    one(hand.check(), "F1", "without a failure")
    failure = json.dumps({"error_code": "AI_TIMEOUT"})
    hand.conn.execute("UPDATE items SET failure = ? WHERE id IN ('F1', 'I1')", (failure,))
    one(hand.check(), "I1", "READY but still carries a failure")


def test_a_status_the_events_do_not_explain(hand: Hand) -> None:
    hand.conn.execute("UPDATE items SET status = 'ARCHIVED' WHERE id = 'I1'")
    one(hand.check(), "I1", "events end in READY")
    hand.events("I1", [("transition", "READY", "PROCESSING", "system")])
    got = hand.check()
    assert any("READY->PROCESSING" in v and "forbids" in v for v in got), got
    hand.item("I3", "CAPTURED", None)
    assert any("I3" in v and "no status events" in v for v in hand.check())


def test_a_running_daemon_is_refused(hand: Hand) -> None:
    lock = hand.path.with_name(hand.path.name + ".lock")
    with lock.open("ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        one(hand.check(), "still holds")
    assert hand.check() == []


# --- the crash loop ------------------------------------------------------------

#: Where a start may be told to die (READDOD_CRASH_AT), as ``NAME@N`` with N in 1..3:
#: at the start of a step (after the previous step's artifact committed, before the
#: next status change), inside a step's commit after its artifact row (for the card,
#: before the READY gate in the same transaction), inside a capture's or an export's
#: transaction, half-way through writing an export's temp file, and between an
#: export's file and its commit.
CRASH_POINTS = (
    "step:extraction",
    "step:summary",
    "step:score",
    "step:todos",
    "step:card",
    "tx:step:summary",
    "tx:step:card",
    "tx:capture",
    "tx:export",
    "export:temp",
    "export:written",
)
#: Answers a request may get in a mixed workload that are not bugs: the item was
#: in another state, unknown to the store yet, or the edit did not fit.
EXPECTED_REFUSALS = frozenset(
    {"INVALID_TRANSITION", "PROCESSING_IN_PROGRESS", "NOT_FOUND", "IDEMPOTENCY_CONFLICT"}
)
OPS = {
    "capture_text": 4,
    "capture_html": 3,
    "capture_blocked": 1,
    "burst": 1,
    "recapture": 1,
    "process": 2,
    "regenerate": 2,
    "export": 5,
    "archive": 2,
    "unarchive": 2,
    "ship": 1,
    "edit": 2,
    "edit_card": 1,
    "retry_failed": 1,
    "pause": 1,
    "resume": 2,
}
SUMMARY_EDIT = {
    "tl_dr": "My own summary.",
    "key_points": ["One.", "Two.", "Three."],
    "intent_relevance": "What I want from it.",
    "reading_time_min": 2,
}
MAX_ORPHANINGS = 3
CI_SEED = 20_261_126
CI_CYCLES = 30
CI_CRASHES = 30
CI_POINTS = 6


class LoopFailure(AssertionError):
    pass


class CrashLoop:
    """A daemon killed again and again under a mixed workload, checked after every death.

    Every choice comes from ``random.Random(seed)``; kills happen after a
    number of acknowledged requests or a number of further log lines, so
    the same seed replays the same decisions (timing may still differ).
    """

    def __init__(
        self,
        root: Path,
        seed: int,
        *,
        engine: str = "fixed",
        engine_delay_ms: int = 20,
        concurrency: int = 4,
        auto_export: bool = False,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.exports = root / "exports"
        self.d = DaemonProc(
            root,
            daemon={
                "concurrency": concurrency,
                "batch_size": min(concurrency, 20),
                "shutdown_grace_s": 0.2,
                "max_orphanings": MAX_ORPHANINGS,
                "auto_export": auto_export,
            },
            ai={"engine": engine, "fixed_delay_ms": engine_delay_ms},
        )
        self.acknowledged: list[str] = []
        self.unanswered: list[dict[str, Any]] = []
        self.exported: dict[str, str] = {}
        self.edited: set[tuple[str, int]] = set()
        self.counts: Counter[str] = Counter()
        self.seconds: dict[str, float] = defaultdict(float)
        self.history: list[str] = []
        self.armed = ""
        self.ever_ready = False
        self.n = 0

    # --- one cycle --------------------------------------------------------------

    def cycle(self, number: int) -> None:
        started = time.monotonic()
        rng = self.rng
        kind = rng.choices(
            ("sigkill", "early", "point", "term", "term-kill"), weights=(5, 1, 4, 1, 1)
        )[0]
        env = {}
        point = rng.choice(CRASH_POINTS)
        if kind == "point":
            env["READDOD_CRASH_AT"] = f"{point}@{rng.randint(1, 3)}"
        ops = rng.randint(1, 8)
        kill_after = rng.randint(0, ops) if kind == "sigkill" else ops
        more_lines = rng.randint(1, 30)
        self.history.append(f"cycle {number}: {kind} {env} ops={ops} kill_after={kill_after}")
        self.armed = env.get("READDOD_CRASH_AT", "")
        self.d.start(wait=False, env=env)
        if kind == "early":  # while it opens the database and recovers
            try:
                self.d.wait_log(lambda e: True, count=rng.randint(1, 4), timeout=5)
            except AssertionError:
                pass
            self._end("sigkill")
            self.seconds[kind] += time.monotonic() - started
            return
        alive = self._ready()
        try:
            if alive:
                with Client(self.d.sock, timeout_s=30) as c:
                    alive = all(self._op(c) for _ in range(kill_after))
                    if alive and kind == "point":
                        alive = self._provoke(c, point)
        except DaemonUnavailable:
            alive = False
        if alive and point.startswith(("step:", "tx:step:")) and kind == "point":
            self._wait_exit(3)  # the captures just sent reach it within milliseconds
        elif alive and kill_after == ops:
            seen = len(self.d.logs)
            try:
                self.d.wait_log(lambda e: True, count=seen + more_lines, timeout=0.5)
            except AssertionError:
                pass  # the work ran out first
        self._end(kind)
        self.seconds[kind] += time.monotonic() - started

    def _provoke(self, c: Client, point: str) -> bool:
        """Requests that reach ``point`` three times if the state allows; False once dead.

        Exports of items already exported in that format write nothing, so
        every format of up to ten items is tried.
        """
        if not self._call(c, "resume", {}):
            return False
        if point.startswith(("step:", "tx:step:", "tx:capture")):
            return all(self._call(c, "capture", self._capture("capture_text")) for _ in range(3))
        ready = self._list(c, ["READY", "FAILED_EXPORT", "SHIPPED"])
        return all(
            self._call(c, "export", {"id": iid, "format": fmt})
            for iid in ready
            for fmt in ("markdown", "json")
        )

    def _list(self, c: Client, statuses: list[str]) -> list[str]:
        return [i["id"] for i in c.call("list", {"status": statuses, "limit": 10})["items"]]

    def _wait_exit(self, timeout: float) -> None:
        assert self.d.proc is not None
        try:
            self.d.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass  # the point was not reached: this start ends by SIGKILL

    def _ready(self) -> bool:
        try:
            self.d.wait_log(lambda e: e["event"] == "daemon.ready", timeout=60)
        except AssertionError:
            if self.d.proc is not None and self.d.proc.poll() is not None:
                return False
            raise
        self.ever_ready = True
        return True

    def _end(self, kind: str) -> None:
        proc = self.d.proc
        assert proc is not None
        if proc.poll() is None and kind in ("term", "term-kill"):
            seen = len(self.d.logs)
            proc.send_signal(signal.SIGTERM)
            if kind == "term-kill":
                # A stop that takes too long gets SIGKILL (systemd's TimeoutStopSec).
                try:
                    self.d.wait_log(lambda e: True, count=seen + self.rng.randint(1, 6), timeout=2)
                except AssertionError:
                    pass
            else:
                proc.wait(timeout=60)
        if proc.poll() is None:
            self.d.kill9()  # if it is not dying already (a crash point that just fired)
        code = proc.wait()
        self.d.close()
        clean = kind in ("term", "term-kill") and code == 0
        if clean:
            self.counts["clean stops"] += 1
        elif code == -signal.SIGKILL:
            self.counts["SIGKILL"] += 1
            if kind == "term-kill":
                self.counts["SIGKILL mid-shutdown"] += 1
        elif code == faults.CRASH_EXIT_CODE and self.armed:
            self.counts["crash points"] += 1
            self.counts[f"died at {self.armed.split('@')[0]}"] += 1
        else:
            raise LoopFailure(f"the daemon exited {code}: {self.d.stderr[-2000:]!r}")
        self.verify(crashed=not clean)

    # --- the workload ---------------------------------------------------------

    def _op(self, c: Client) -> bool:
        """One request; False when the daemon died under it."""
        rng = self.rng
        name = rng.choices(list(OPS), weights=list(OPS.values()))[0]
        if name == "burst":  # many items in flight at the next kill
            return all(
                self._call(c, "capture", self._capture("capture_text"))
                for _ in range(rng.randint(5, 20))
            )
        if name.startswith("capture") or name == "recapture" or not self.acknowledged:
            return self._call(c, "capture", self._capture(name))
        item = rng.choice(self.acknowledged)
        card_edit = {**PAYLOADS["card"], "title": f"A title of mine, take {rng.randint(1, 4)}"}
        calls: dict[str, tuple[str, dict[str, Any]]] = {
            "process": ("process", {"id": item}),
            "regenerate": ("process", {"id": item, "regenerate": True}),
            "export": ("export", {"id": item, "format": rng.choice(("markdown", "json"))}),
            "archive": ("archive", {"id": item, "cancel": rng.random() < 0.5}),
            "unarchive": ("unarchive", {"id": item, "regenerate": rng.random() < 0.3}),
            "ship": ("ship", {"id": item}),
            "edit": ("edit", {"id": item, "type": "summary", "payload": SUMMARY_EDIT}),
            "edit_card": ("edit", {"id": item, "type": "card", "payload": card_edit}),
            "retry_failed": ("retry_failed", {}),
            "pause": ("pause", {}),
            "resume": ("resume", {}),
        }
        method, params = calls[name]
        return self._call(c, method, params)

    def _call(self, c: Client, method: str, params: dict[str, Any]) -> bool:
        try:
            result = c.call(method, params)
        except DaemonUnavailable:
            if method == "capture":
                self.unanswered.append(params)
            return False
        except RpcError as exc:
            if exc.error_code not in EXPECTED_REFUSALS:
                raise LoopFailure(
                    f"{method} {params} answered {exc.rpc_code} {exc.error_code}: {exc}"
                ) from exc
            self.counts["refused"] += 1
            return True
        self.counts[f"ok {method}"] += 1
        item_id = params.get("id") or (result.get("item") or {}).get("id")
        if item_id:
            self._one_run_per_card(c, str(item_id))
        if method == "capture":
            iid = result["item"]["id"]
            if iid not in self.acknowledged:
                self.acknowledged.append(iid)
        elif method == "export":
            self.exported[result["export_key"]] = params["id"]
        elif method == "edit":
            self.edited.add((params["id"], result["artifact"]["version"]))
        return True

    def _one_run_per_card(self, c: Client, item_id: str) -> None:
        """After every step: what the item shows is one run's card and that run's score."""
        try:
            got = c.call("get", {"id": item_id})
        except DaemonUnavailable:
            return  # killed meanwhile: the checks after the restart cover it
        broken = invariants.shown_problems(got)
        if broken:
            raise LoopFailure("one run per card broken:\n  " + "\n  ".join(broken))

    def _capture(self, name: str) -> dict[str, Any]:
        if name == "recapture" and self.unanswered:
            return self.unanswered.pop(0)  # the same capture_id again: one item, at most
        self.n += 1
        n = self.n
        params: dict[str, Any] = {"intent": f"learn about topic {n % 7}", "capture_id": f"c{n}"}
        body = f"Note {n} on durable queues.\n\nParagraph {n} says why fsync matters."
        if name == "capture_html":
            params["url"] = f"https://example.org/crash/{n}"
            params["html"] = f"<html><head><title>Page {n}</title></head><body><article>" + (
                "".join(f"<p>{p}</p>" for p in body.split("\n\n")) + "</article></body></html>"
            )
        elif name == "capture_blocked":
            params["url"] = f"http://127.0.0.1:9/page/{n}"  # refused by the address guard
        else:
            params["text"] = body
        return params

    # --- checks ---------------------------------------------------------------

    def verify(self, *, crashed: bool) -> None:
        if not self.ever_ready:
            return  # killed before its first start finished creating the database
        found = invariants.check(
            self.d.db_path,
            acknowledged=self.acknowledged,
            export_dir=self.exports,
            crashed=crashed,
            max_orphanings=MAX_ORPHANINGS,
        )
        with self.d.db() as db:
            keys = {k for (k,) in db.execute("SELECT export_key FROM exports")}
            edits = set(
                db.execute("SELECT item_id, version FROM artifacts WHERE created_by = 'user'")
            )
        found += [
            f"acknowledged export {key} of item {iid} is not in the exports table"
            for key, iid in self.exported.items()
            if key not in keys
        ]
        found += [f"acknowledged edit {e} is lost" for e in sorted(self.edited - edits)]
        if found:
            raise LoopFailure("invariants broken:\n  " + "\n  ".join(found))

    def finish(self) -> None:
        """Start without faults, let every queued item finish, stop cleanly, check."""
        self.history.append("finish")
        self.d.start()
        with Client(self.d.sock, timeout_s=30) as c:
            c.call("resume")
            for pending in self.unanswered:
                iid = c.call("capture", pending)["item"]["id"]
                if iid not in self.acknowledged:
                    self.acknowledged.append(iid)
            self.unanswered.clear()
            while True:
                seen = sum(1 for e in self.d.logs if e["event"] == "item.transition")
                busy = c.call("list", {"status": ["QUEUED", "PROCESSING"], "limit": 5})["items"]
                if not busy:
                    break
                try:
                    self.d.wait_log(
                        lambda e: e["event"] == "item.transition", count=seen + 1, timeout=60
                    )
                except AssertionError as exc:
                    raise LoopFailure(f"items stuck after the last restart: {busy}") from exc
        code = self.d.stop()
        if code != 0:
            raise LoopFailure(f"the final stop exited {code}: {self.d.stderr[-2000:]!r}")
        self.d.close()
        self.verify(crashed=False)

    @property
    def crashes(self) -> int:
        return self.counts["SIGKILL"] + self.counts["crash points"]

    def run(self, cycles: int, *, min_crashes: int = 0, min_points: int = 0) -> dict[str, Any]:
        """``cycles`` restarts, more (up to twice as many) to reach ``min_crashes`` of which
        ``min_points`` at crash points; then finish and check."""
        number = 0
        try:
            while number < cycles or (
                (self.crashes < min_crashes or self.counts["crash points"] < min_points)
                and number < 2 * cycles
            ):
                number += 1
                self.cycle(number)
            self.finish()
        except LoopFailure as exc:
            self.d.close()
            log = self.d.root / "last-daemon-log.jsonl"
            log.write_text("".join(json.dumps(e) + "\n" for e in self.d.logs))
            tail = "\n".join(self.history[-5:])
            raise LoopFailure(
                f"seed {self.seed}: {exc}\nlast cycles:\n{tail}\nthe daemon's log: {log}"
            ) from exc
        finally:
            self.d.close()
        with self.d.db() as db:
            statuses = dict(db.execute("SELECT status, count(*) FROM items GROUP BY status"))
        return {
            "seed": self.seed,
            "cycles": number,
            "crashes": self.crashes,
            "items": len(self.acknowledged),
            "statuses": statuses,
            "counts": dict(sorted(self.counts.items())),
            "seconds_by_cycle_kind": {k: round(v, 1) for k, v in sorted(self.seconds.items())},
            "violations": 0,
        }


def test_crash_loop_keeps_every_promise(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """30 deaths at least (6 at crash points), every invariant checked after each.

    Another seed: ``READDOD_CRASH_SEED=S``; hundreds of cycles: ``python -m bench.crashloop``.
    """
    seed = int(os.environ.get("READDOD_CRASH_SEED", CI_SEED))
    print(f"crash loop seed {seed}")
    loop = CrashLoop(tmp_path, seed)
    got = loop.run(CI_CYCLES, min_crashes=CI_CRASHES, min_points=CI_POINTS)
    print(got)
    record_property("figures", f"crash loop: {got['crashes']} crashes survived, {got['counts']}")
    assert got["crashes"] >= CI_CRASHES, got
    assert got["counts"].get("crash points", 0) >= CI_POINTS, got
    assert got["items"] >= 20, got
    assert "READY" in got["statuses"] or "SHIPPED" in got["statuses"], got


# --- what the loops found, pinned -----------------------------------------------


def test_an_export_cut_short_by_a_crash_leaves_one_file_after_a_retitle(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """The file written just before the crash is adopted even when the title changed since."""
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start()
    iid = d.call("capture", {"text": "A note.\n\nOn queues.", "intent": "x"})["item"]["id"]
    d.wait_status("READY", 1)
    d.stop()
    d.start(env={"READDOD_CRASH_AT": "export:written"})
    with pytest.raises(DaemonUnavailable):
        d.call("export", {"id": iid})
    assert d.proc is not None and d.proc.wait(timeout=30) == faults.CRASH_EXIT_CODE
    d.close()
    d.start()
    d.call("edit", {"id": iid, "type": "card", "payload": {**PAYLOADS["card"], "title": "New"}})
    files = d.call("export", {"id": iid})["files"]
    assert d.stop() == 0
    assert invariants.check(d.db_path, acknowledged=[iid], export_dir=d.root / "exports") == []
    assert [p.name for p in (d.root / "exports").iterdir()] == [Path(files[0]).name]


def test_names_of_an_item_under_any_title() -> None:
    kw = {"date": "2026-01-02", "ext": "md", "item_id": "01ABC", "fmt": "markdown"}
    same = naming.any_title(naming.DEFAULT_PATTERN, **kw)
    assert same is not None
    assert same("2026-01-02-old-title.md") and same("2026-01-02-new-title-3.md")
    assert not same("2026-01-03-old-title.md") and not same("2026-01-02-x.json")
    assert not same("2026-01-02-.md")
    tail = naming.any_title("{slug} ({date}).{ext}", **kw)
    assert tail is not None and tail("a b (2026-01-02).md") and tail("a b (2026-01-02)-2.md")
    assert naming.any_title("{date}-{id}.{ext}", **kw) is None


@pytest.mark.parametrize("point", ["export:temp", "export:written", "tx:export"])
def test_auto_export_survives_a_crash_during_the_export(
    tmp_path: Path, daemons: list[DaemonProc], point: str
) -> None:
    """An item a run made READY is exported by the next start if a crash cut its export short."""
    d = DaemonProc(tmp_path, daemon={"auto_export": True}, ai={"engine": "fixed"})
    daemons.append(d)
    d.start(env={"READDOD_CRASH_AT": point})
    iid = d.call("capture", {"text": "A note.\n\nOn queues.", "intent": "x"})["item"]["id"]
    assert d.proc is not None and d.proc.wait(timeout=60) == faults.CRASH_EXIT_CODE
    d.close()
    d.start()
    d.wait_status("SHIPPED", 1)
    assert d.stop() == 0
    exports = d.root / "exports"
    assert invariants.check(d.db_path, acknowledged=[iid], export_dir=exports) == []
    assert len([p for p in exports.iterdir() if not p.name.startswith(".")]) == 1


# --- each crash point inside a transaction, once ----------------------------------


@pytest.mark.parametrize("point", ["tx:step:extraction", "tx:step:summary", "tx:step:card"])
def test_a_crash_inside_a_steps_commit_keeps_nothing_of_it(
    tmp_path: Path, daemons: list[DaemonProc], point: str
) -> None:
    """Death after the step's artifact row, before its run, event and (for the card) READY
    gate in the same transaction: none of it is kept, and the resumed run commits the step
    once, as version 1 of the same run."""
    step = point.rsplit(":", 1)[1]
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start(env={"READDOD_CRASH_AT": point})
    # Paused, the capture is answered before any step can run (with room, a capture
    # takes its lease in its own commit and the crash could beat the answer).
    d.call("pause")
    iid = d.call("capture", {"text": "A note.\n\nOn queues.", "intent": "x"})["item"]["id"]
    with contextlib.suppress(DaemonUnavailable):  # the crash may come before this answer
        d.call("resume")
    assert d.proc is not None and d.proc.wait(timeout=60) == faults.CRASH_EXIT_CODE
    d.close()
    with d.db() as db:
        status, run_id = db.execute(
            "SELECT status, current_run_id FROM items WHERE id = ?", (iid,)
        ).fetchone()
        kinds = {k for (k,) in db.execute("SELECT artifact_type FROM artifacts")}
        noted = {s for (s,) in db.execute("SELECT json_extract(detail, '$.step') FROM events")}
    done = set(STEPS[: STEPS.index(step)])
    assert (status, kinds, noted & set(STEPS)) == ("PROCESSING", done, done)
    assert invariants.check(d.db_path, acknowledged=[iid], crashed=True) == []
    d.start()
    d.wait_status("READY", 1)
    assert d.stop() == 0
    with d.db() as db:
        arts = db.execute("SELECT artifact_type, version, run_id FROM artifacts").fetchall()
    assert sorted(arts) == sorted((kind, 1, run_id) for kind in STEPS)
    assert invariants.check(d.db_path, acknowledged=[iid]) == []


def test_a_capture_cut_short_in_its_transaction_is_not_there_and_can_be_sent_again(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start(env={"READDOD_CRASH_AT": "tx:capture"})
    params = {"text": "A note.\n\nOn queues.", "intent": "x", "capture_id": "once"}
    with pytest.raises(DaemonUnavailable):
        d.call("capture", params)
    assert d.proc is not None and d.proc.wait(timeout=60) == faults.CRASH_EXIT_CODE
    d.close()
    with d.db() as db:
        items = db.execute("SELECT count(*) FROM items").fetchone()[0]
        events = db.execute("SELECT count(*) FROM events WHERE item_id IS NOT NULL").fetchone()[0]
    assert (items, events) == (0, 0)
    d.start()
    first, again = d.call("capture", params), d.call("capture", params)
    assert first["created"] and not again["created"]
    assert first["item"]["id"] == again["item"]["id"]
    d.wait_status("READY", 1)
    assert d.stop() == 0
    assert invariants.check(d.db_path, acknowledged=[first["item"]["id"]]) == []
