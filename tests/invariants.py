"""What must hold in a readdod database whatever happened to the daemon.

:func:`check` reads a stopped daemon's SQLite file (read-only) and, if given,
its export folder, and returns every broken promise as a sentence a person
can act on; an empty list means all is well. The crash loop, the fault
tests and the model-based tests all end with it.

The promises (DESIGN §2-§4):

- every capture acknowledged to a client is stored;
- a FAILED_* item carries its failure (with an error code), an item in a
  state other than FAILED_* or ARCHIVED carries none;
- no item is PROCESSING without a live lease. With the daemon stopped no
  lease is live: after a clean stop there is no PROCESSING item at all; after
  a kill (``crashed=True``) a PROCESSING row is an orphan that the next start
  requeues, so it must at least carry a whole lease and a running run. A
  lease on an item that is not PROCESSING is a leak either way, and so is a
  run left ``queued``/``running`` that is not the current run of a QUEUED/
  PROCESSING item;
- no chunk is in flight (``processing``/``retrying``) but in the current run
  of a PROCESSING item: whatever stops a run (pause, ``archive --cancel``,
  a stop, recovery, a failure) puts its chunks in flight back to pending in
  the same transaction. After a clean stop no chunk is in flight at all;
- a READY or SHIPPED item has a complete artifact set of its current run:
  summary, score, todos and card made by that run (valid, and ``meta.run_id``
  agrees), and the run's extraction, or for a REGENERATE without refetch
  the newest extraction it reused; a person's edits may sit on top;
- a step commits at most one artifact per run (no duplicated version);
- the ``exports`` table and the export folder agree: every recorded file
  exists and is a whole export of its item; every visible file in the
  folder is a whole export of a known item (a file written just before a
  crash, not yet recorded, is allowed: the item's next export adopts it),
  and an item has one file per format and folder (the writer's promise);
  hidden temp files (``.NAME.xxxx.tmp``) are invisible by design;
- the event log explains every item's status: replaying its status events
  from the capture, each allowed by :mod:`readdod.items.states`, ends in the
  status the item has; an export it says shipped an item is recorded;
- the full-text index holds, for every item and nothing else, its title,
  url and intent and the text of the extraction a person sees (their edit
  first, else the newest version), as a rebuild from the tables would;
- optionally, the crash-loop limit (``max_orphanings``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from readdod.export import jsonfmt, markdown
from readdod.items import states
from readdod.items.states import Status, Trigger
from readdod.steps import GATED as AI_STEPS
from readdod.steps import rubric

#: The events that move an item's status (``export`` events record a failed re-export
#: of a SHIPPED item, which stays SHIPPED; ``step``/``edit`` events move nothing).
_STATUS_EVENTS = ("capture", "transition")
_WITH_ARTIFACTS = {Status.READY.value, Status.SHIPPED.value}


def check(
    db_path: Path,
    *,
    acknowledged: Iterable[str] = (),
    export_dir: Path | None = None,
    crashed: bool = False,
    max_orphanings: int | None = None,
    pruned: bool = False,
) -> list[str]:
    """Every invariant ``db_path`` (and ``export_dir``) breaks; empty when all hold.

    ``acknowledged`` are item ids a client was given. ``crashed`` says the
    daemon died without its shutdown (kill -9), so orphaned PROCESSING rows
    are expected until the next start recovers them. With
    ``max_orphanings`` (the daemon's setting), the crash-loop limit is
    checked too: an item is requeued as an orphan fewer than that many times
    in a row without a finished step, and fails WORKER_LOST only at that count.
    ``pruned`` says retention has removed old history, so an item's status
    events may have gaps.
    """
    db_path = Path(db_path)
    if not db_path.exists():
        return [f"no database at {db_path}"]
    running = _daemon_running(db_path)
    if running:
        return [running]
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        tables = _read(conn)
        search = _search_index(conn)
    finally:
        conn.close()
    return _judge(
        tables,
        search,
        acknowledged=acknowledged,
        export_dir=export_dir,
        crashed=crashed,
        max_orphanings=max_orphanings,
        pruned=pruned,
    )


def check_postgresql(
    dsn: str,
    *,
    acknowledged: Iterable[str] = (),
    export_dir: Path | None = None,
    crashed: bool = False,
    max_orphanings: int | None = None,
    pruned: bool = False,
) -> list[str]:
    """:func:`check` on a PostgreSQL database every daemon of which has stopped.

    The same promises on the same tables (the schema mirrors SQLite's); the
    full-text index is SQLite's own and is not checked here (the store
    contract checks PostgreSQL's search).
    """
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row) as pg:
        alive = pg.execute(
            "SELECT count(*) AS n FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND application_name LIKE 'readdod%%'"
        ).fetchone()
        if alive and alive["n"]:
            return [f"{alive['n']} readdod connections are still open: stop every daemon first"]
        tables = _read(pg)
    return _judge(
        tables,
        [],
        acknowledged=acknowledged,
        export_dir=export_dir,
        crashed=crashed,
        max_orphanings=max_orphanings,
        pruned=pruned,
    )


class _Tables:
    def __init__(self, conn: Any) -> None:
        self.items = {r["id"]: r for r in conn.execute("SELECT * FROM items")}
        self.runs = {r["run_id"]: r for r in conn.execute("SELECT * FROM runs")}
        self.arts = conn.execute(
            "SELECT item_id, artifact_type, version, created_by, run_id, payload, meta,"
            " discarded FROM artifacts ORDER BY item_id, artifact_type, version"
        ).fetchall()
        self.attempts = conn.execute(
            "SELECT * FROM attempts ORDER BY created_at, attempt_id"
        ).fetchall()
        self.events = conn.execute(
            "SELECT seq, item_id, kind, from_status, to_status, trigger, detail FROM events"
            " WHERE item_id IS NOT NULL ORDER BY seq"
        ).fetchall()
        self.exports = conn.execute("SELECT * FROM exports ORDER BY created_at").fetchall()
        self.in_flight = conn.execute(
            "SELECT run_id, step, idx, status FROM chunks"
            " WHERE status IN ('processing', 'retrying') ORDER BY run_id, step, idx"
        ).fetchall()


def _read(conn: Any) -> _Tables:
    """Every table the promises are about, on one connection (rows read by column name)."""
    return _Tables(conn)


def _judge(
    t: _Tables,
    search: list[str],
    *,
    acknowledged: Iterable[str],
    export_dir: Path | None,
    crashed: bool,
    max_orphanings: int | None,
    pruned: bool = False,
) -> list[str]:
    items, runs, arts, events, exports = t.items, t.runs, t.arts, t.events, t.exports
    out: list[str] = []
    out += _lost(items, acknowledged)
    out += _failures(items)
    out += _leases(items, runs, crashed=crashed)
    out += _chunks_in_flight(items, runs, t.in_flight, crashed=crashed)
    out += _artifact_sets(items, runs, arts)
    out += _attempts(runs, t.attempts)
    out += _events(items, events, pruned=pruned)
    out += _shipped_exports(events, exports)
    out += search
    if max_orphanings is not None:
        out += _orphan_limit(events, max_orphanings)
    if export_dir is not None:
        out += _exports(items, exports, Path(export_dir))
    return out


def _search_index(conn: sqlite3.Connection) -> list[str]:
    """Rows of the full-text index that differ from a rebuild from the tables."""
    indexed = {
        r[0]: tuple(r[1:])
        for r in conn.execute("SELECT rowid, title, url, intent, body FROM items_fts")
    }
    expected = {
        r[0]: (r[1], tuple(r[2:]))
        for r in conn.execute(
            "SELECT i.rowid, i.id, coalesce(i.title, ''), coalesce(i.url, ''), i.intent_text,"
            " coalesce((SELECT json_extract(a.payload, '$.text') FROM artifacts a"
            "           WHERE a.item_id = i.id AND a.artifact_type = 'extraction'"
            "             AND a.discarded = 0"
            "           ORDER BY a.created_by = 'user' DESC, a.version DESC LIMIT 1), '')"
            " FROM items i"
        )
    }
    out = [
        f"item {iid}: the search index holds {indexed.get(rowid)!r}, not {want!r}"
        for rowid, (iid, want) in expected.items()
        if indexed.get(rowid) != want
    ]
    out += [
        f"the search index holds row {rowid} of no item: {row!r}"
        for rowid, row in indexed.items()
        if rowid not in expected
    ]
    return out


def _daemon_running(db_path: Path) -> str | None:
    """A violation if a daemon holds the instance lock: its database is moving under us."""
    lock = db_path.with_name(db_path.name + ".lock")
    try:
        handle = lock.open("rb")
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return f"a daemon still holds {lock}: stop it before checking the database"
            raise
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


def _failures(items: dict[str, sqlite3.Row]) -> list[str]:
    """A failed item says why; an item that is not failed (or archived) carries no failure."""
    out = []
    for item in items.values():
        iid, status, failure = item["id"], item["status"], item["failure"]
        if status in states.FAILED:
            try:
                code = json.loads(failure or "null")["error_code"]
            except (ValueError, TypeError, KeyError):
                code = None
            if not code:
                out.append(f"item {iid} is {status} without a failure saying why ({failure!r})")
        elif failure is not None and status != Status.ARCHIVED:
            out.append(f"item {iid} is {status} but still carries a failure: {failure[:200]}")
    return out


def _lost(items: dict[str, sqlite3.Row], acknowledged: Iterable[str]) -> list[str]:
    return [
        f"acknowledged capture {item_id} is not in the database"
        for item_id in dict.fromkeys(acknowledged)
        if item_id not in items
    ]


def _leases(
    items: dict[str, sqlite3.Row], runs: dict[str, sqlite3.Row], *, crashed: bool
) -> list[str]:
    out = []
    for item in items.values():
        iid, status = item["id"], item["status"]
        leased = item["lease_owner"] is not None or item["lease_expires_at"] is not None
        run = runs.get(item["current_run_id"]) if item["current_run_id"] else None
        if status != Status.PROCESSING:
            if leased:
                out.append(
                    f"item {iid} is {status} but still carries a lease"
                    f" (owner {item['lease_owner']}, expires {item['lease_expires_at']})"
                )
            if status == Status.QUEUED and (run is None or run["status"] != "queued"):
                out.append(
                    f"item {iid} is QUEUED but its current run {item['current_run_id']} is"
                    f" {run['status'] if run else 'missing'}, not queued"
                )
            continue
        if not crashed:
            out.append(
                f"item {iid} is PROCESSING with the daemon stopped: nobody holds its lease"
                f" (owner {item['lease_owner']})"
            )
            continue
        if item["lease_owner"] is None or item["lease_expires_at"] is None:
            out.append(f"item {iid} is PROCESSING without a lease owner and expiry")
        if run is None or run["status"] != "running":
            out.append(
                f"item {iid} is PROCESSING but its current run {item['current_run_id']} is"
                f" {run['status'] if run else 'missing'}, not running"
            )
    for run in runs.values():
        if run["status"] not in ("queued", "running"):
            continue
        owner = items.get(run["item_id"])
        wanted = "QUEUED" if run["status"] == "queued" else "PROCESSING"
        if owner is None or owner["current_run_id"] != run["run_id"] or owner["status"] != wanted:
            out.append(
                f"run {run['run_id']} of item {run['item_id']} is still {run['status']}, but"
                f" the item is {owner['status'] if owner else 'gone'} with current run"
                f" {owner['current_run_id'] if owner else None}"
            )
    return out


def _chunks_in_flight(
    items: dict[str, sqlite3.Row],
    runs: dict[str, sqlite3.Row],
    in_flight: list[sqlite3.Row],
    *,
    crashed: bool,
) -> list[str]:
    """A chunk in flight belongs to the running run of a PROCESSING item (only after a kill)."""
    out = []
    for c in in_flight:
        where = f"chunk {c['idx']} of step {c['step']} of run {c['run_id']} is {c['status']}"
        run = runs.get(c["run_id"])
        owner = items.get(run["item_id"]) if run is not None else None
        if not crashed:
            out.append(f"{where} with the daemon stopped: nobody works on it")
        elif owner is None or owner["current_run_id"] != c["run_id"]:
            out.append(f"{where}, but the run is not the current run of its item")
        elif owner["status"] != Status.PROCESSING:
            out.append(f"{where}, but its item {owner['id']} is {owner['status']}")
    return out


def _artifact_sets(
    items: dict[str, sqlite3.Row], runs: dict[str, sqlite3.Row], arts: list[sqlite3.Row]
) -> list[str]:
    out = []
    by_item: dict[str, list[sqlite3.Row]] = defaultdict(list)
    seen: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for a in arts:
        by_item[a["item_id"]].append(a)
        try:
            meta_run = json.loads(a["meta"]).get("run_id")
        except (ValueError, AttributeError):
            meta_run = "<unreadable meta>"
        if meta_run != a["run_id"]:
            out.append(
                f"item {a['item_id']}: {a['artifact_type']} v{a['version']} says run"
                f" {meta_run} in its meta but is stored under run {a['run_id']}"
            )
        if a["created_by"] == "system":
            seen[(a["item_id"], a["artifact_type"], a["run_id"])].append(a["version"])
    for (iid, kind, run_id), versions in seen.items():
        if len(versions) > 1:
            out.append(
                f"item {iid}: step {kind} committed {len(versions)} artifacts for run {run_id}"
                f" (versions {versions}); a step commits one per run"
            )
    for item in items.values():
        if item["status"] not in _WITH_ARTIFACTS:
            continue
        iid, run_id = item["id"], item["current_run_id"]
        if run_id is None or run_id not in runs:
            out.append(f"item {iid} is {item['status']} without a current run ({run_id})")
            continue
        if item["ready_run_id"] != run_id:
            out.append(
                f"item {iid} is {item['status']} on run {item['ready_run_id']}, but its"
                f" current run is {run_id}"
            )
        out += _shown_score(item, by_item[iid])
        mine = [a for a in by_item[iid] if a["created_by"] == "system" and a["run_id"] == run_id]
        of_run = {a["artifact_type"]: a for a in mine}
        for step in AI_STEPS:
            art = of_run.get(step)
            if art is None:
                out.append(f"item {iid} is {item['status']} but run {run_id} has no {step}")
                continue
            _, problems = rubric.validate(step, art["payload"])
            if problems:
                out.append(
                    f"item {iid} is {item['status']} but run {run_id}'s {step}"
                    f" v{art['version']} is not valid: {'; '.join(problems)}"
                )
        if "extraction" not in of_run:
            run = runs[run_id]
            reused = run["mode"] == "REGENERATE" and not run["refetch"]
            older = [a for a in by_item[iid] if a["artifact_type"] == "extraction"]
            if not (reused and older):
                out.append(
                    f"item {iid} is {item['status']} but run {run_id} ({run['mode']}) has no"
                    " extraction" + (" and none to reuse" if reused else "")
                )
    return out


def _shown_score(item: sqlite3.Row, arts: list[sqlite3.Row]) -> list[str]:
    """A READY/SHIPPED item's priority and match score are those of the score it shows:
    a person's newest (not set aside), else that of the run it is READY on."""
    scores = [a for a in arts if a["artifact_type"] == "score"]
    mine = [a for a in scores if a["created_by"] == "user" and not a["discarded"]]
    of_run = [
        a for a in scores if a["created_by"] == "system" and a["run_id"] == item["ready_run_id"]
    ]
    shown = max(mine or of_run, key=lambda a: a["version"], default=None)
    if shown is None:
        return [f"item {item['id']} is {item['status']} but shows no score"]
    score = json.loads(shown["payload"])
    if (item["priority"], item["match_score"]) != (score["priority"], score["match_score"]):
        return [
            f"item {item['id']} has priority {item['priority']} and match score"
            f" {item['match_score']}, but the score it shows (v{shown['version']},"
            f" {shown['created_by']}) says {score['priority']} and {score['match_score']}"
        ]
    return []


def shown_problems(got: dict[str, Any]) -> list[str]:
    """What a ``get`` answer breaks of the one-run-per-card rule.

    Every system artifact a READY/SHIPPED item shows belongs to the run it is
    READY on (a reused extraction aside), the card shown carries the shown
    todos, key points and score, and the item's priority and match score are
    the shown score's.
    """
    item, shown = got["item"], got["artifacts"]
    if item["status"] not in _WITH_ARTIFACTS:
        return []
    out = []
    ready = item.get("ready_run_id")
    for kind in AI_STEPS:
        art = shown.get(kind)
        if art is None:
            out.append(f"item {item['id']} is {item['status']} but shows no {kind}")
        elif art["created_by"] == "system" and art["meta"]["run_id"] != ready:
            out.append(
                f"item {item['id']} shows {kind} v{art['version']} of run"
                f" {art['meta']['run_id']}, but it is {item['status']} on run {ready}"
            )
    if out:
        return out
    card, score = shown["card"]["payload"], shown["score"]["payload"]
    if (item["priority"], item["match_score"]) != (score["priority"], score["match_score"]):
        out.append(
            f"item {item['id']} has {item['priority']}/{item['match_score']} but shows a"
            f" score of {score['priority']}/{score['match_score']}"
        )

    def decides(kind: str) -> bool:
        """A part decides the card unless a person's card is newer than it."""
        if shown["card"]["created_by"] != "user":
            return True
        part = shown[kind]
        return bool(
            part["created_by"] == "user"
            and part["meta"]["created_at"] >= shown["card"]["meta"]["created_at"]
        )

    if decides("score") and (card["priority"], card["match_score"]) != (
        score["priority"],
        score["match_score"],
    ):
        out.append(f"item {item['id']}'s card does not show the score it shows")
    if decides("todos") and card["todos"] != shown["todos"]["payload"]["items"]:
        out.append(f"item {item['id']}'s card does not show the todos it shows")
    if decides("summary") and card["key_points"] != shown["summary"]["payload"]["key_points"]:
        out.append(f"item {item['id']}'s card does not show the key points it shows")
    return out


def _attempts(runs: dict[str, sqlite3.Row], attempts: list[sqlite3.Row]) -> list[str]:
    """A run waiting or running has exactly one attempt in the same state; a run that
    is over has none still open."""
    out = []
    open_by_run: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for a in attempts:
        if a["run_id"] not in runs:
            out.append(f"attempt {a['attempt_id']} belongs to no run ({a['run_id']})")
        if a["status"] in ("queued", "running"):
            open_by_run[a["run_id"]].append(a)
        elif a["finished_at"] is None:
            out.append(f"attempt {a['attempt_id']} is {a['status']} without a finish time")
    for run in runs.values():
        mine = open_by_run.get(run["run_id"], [])
        if run["status"] in ("queued", "running"):
            if [a["status"] for a in mine] != [run["status"]]:
                out.append(
                    f"run {run['run_id']} is {run['status']} but its open attempts are"
                    f" {[a['status'] for a in mine]}"
                )
        elif mine:
            out.append(
                f"run {run['run_id']} is {run['status']} but attempt {mine[0]['attempt_id']}"
                f" is still {mine[0]['status']}"
            )
    return out


def _events(
    items: dict[str, sqlite3.Row], events: list[sqlite3.Row], *, pruned: bool = False
) -> list[str]:
    """Each item's status events chain from its capture to its status. ``pruned``:
    retention removed old events of any item, so the chain may resume after a gap
    (never before the capture, which it keeps, nor after its last move)."""
    out = []
    by_item: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for e in events:
        if e["kind"] in _STATUS_EVENTS:
            by_item[e["item_id"]].append(e)
    for iid in by_item.keys() - items.keys():
        out.append(f"events name item {iid}, which does not exist")
    for item in items.values():
        iid, evs = item["id"], by_item.get(item["id"], [])
        if not evs:
            out.append(f"item {iid} is {item['status']} but has no status events at all")
            continue
        first = evs[0]
        headless = item["status"] == Status.ARCHIVED and first["kind"] != "capture"
        if not headless and (first["kind"] != "capture" or first["to_status"] != Status.CAPTURED):
            out.append(
                f"item {iid}: its first status event (seq {first['seq']}) is"
                f" {first['kind']} {first['from_status']}->{first['to_status']}, not the capture"
            )
            continue
        at: str | None = first["to_status"] if first["kind"] == "capture" else first["from_status"]
        for e in evs[1:] if first["kind"] == "capture" else evs:
            if pruned and e["from_status"] != at:
                at = e["from_status"]
            why = _bad_step(at, e)
            if why:
                out.append(f"item {iid}: event seq {e['seq']} {why}")
            at = e["to_status"]
        if at != item["status"]:
            out.append(
                f"item {iid} is {item['status']} but its events end in {at}: a status change"
                " went unrecorded"
            )
    return out


def _orphan_limit(events: list[sqlite3.Row], limit: int) -> list[str]:
    out = []
    streak: dict[str, int] = defaultdict(int)
    for e in events:
        iid = e["item_id"]
        if e["kind"] == "step":
            streak[iid] = 0
            continue
        if e["kind"] == "chunk":
            # A finished chunk is progress too: the crash count starts again.
            if json.loads(e["detail"] or "{}").get("state") == "done":
                streak[iid] = 0
            continue
        if e["kind"] != "transition" or e["from_status"] != Status.PROCESSING:
            continue
        if e["to_status"] == Status.READY:
            streak[iid] = 0
            continue
        try:
            detail = json.loads(e["detail"] or "{}")
        except ValueError:
            continue
        if e["to_status"] == Status.QUEUED and detail.get("reason") in (
            "orphan_recovery",
            "lease_expired",
        ):
            streak[iid] += 1
            if streak[iid] >= limit:
                out.append(
                    f"item {iid}: event seq {e['seq']} requeued it after {streak[iid]} orphanings"
                    f" in a row; at {limit} it must fail WORKER_LOST"
                )
        elif detail.get("error_code") == "WORKER_LOST":
            streak[iid] += 1
            if streak[iid] < limit:
                out.append(
                    f"item {iid}: event seq {e['seq']} failed it WORKER_LOST after only"
                    f" {streak[iid]} orphanings in a row (the limit is {limit})"
                )
    return out


def _shipped_exports(events: list[sqlite3.Row], exports: list[sqlite3.Row]) -> list[str]:
    """Every export the event log says shipped an item is in the ``exports`` table."""
    keys = {(row["export_key"], row["item_id"]) for row in exports}
    out = []
    for e in events:
        if e["kind"] != "transition" or e["to_status"] != Status.SHIPPED:
            continue
        try:
            detail = json.loads(e["detail"] or "{}")
        except ValueError:
            out.append(f"event seq {e['seq']} has unreadable detail {e['detail']!r}")
            continue
        key = detail.get("export_key") if detail.get("op") == "export" else None
        if key is not None and (key, e["item_id"]) not in keys:
            out.append(
                f"item {e['item_id']}: event seq {e['seq']} says export {key} shipped it,"
                " but the exports table has no such export"
            )
    return out


def _bad_step(at: str | None, e: sqlite3.Row) -> str | None:
    src, dst, trig = e["from_status"], e["to_status"], e["trigger"]
    if src != at:
        return f"moves from {src} but the item was {at}"
    try:
        ok = states.allowed(Status(src), Status(dst), Trigger(trig))
    except ValueError:
        return f"has an unknown status or trigger ({src}->{dst} by {trig})"
    return None if ok else f"is a transition {src}->{dst} by {trig} that DESIGN §3 forbids"


def _whole(path: Path, fmt: str, item_id: str) -> str | None:
    """Why ``path`` is not a whole export of ``item_id`` as ``fmt``, or None."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if fmt == "json":
        if not data.startswith(jsonfmt.marker(item_id)):
            return "does not begin as this item's JSON export"
        try:
            doc: Any = json.loads(data)
        except ValueError:
            return "is not whole JSON (cut short?)"
        return None if isinstance(doc, dict) and doc.get("id") == item_id else "names another id"
    if not data.startswith(markdown.marker(item_id)):
        return "does not begin as this item's Markdown export"
    if data.count(b"\n---\n") < 1 or not data.endswith(b"\n"):
        return "is not a whole Markdown export (front matter unclosed or cut short)"
    return None


def _owner(path: Path, items: dict[str, sqlite3.Row]) -> tuple[str, str] | None:
    """(item id, format) that ``path``'s first bytes name, if any known item."""
    try:
        with path.open("rb") as f:
            head = f.read(256)
    except OSError:
        return None
    for prefix, fmt in ((b"---\nid: ", "markdown"), (b'{\n  "id": ', "json")):
        if head.startswith(prefix):
            rest = head[len(prefix) :].split(b"\n", 1)[0].rstrip(b",").strip(b"'\" ")
            iid = rest.decode(errors="replace")
            if iid in items:
                return iid, fmt
    return None


def _exports(
    items: dict[str, sqlite3.Row], exports: list[sqlite3.Row], export_dir: Path
) -> list[str]:
    out = []
    recorded: set[Path] = set()
    for row in exports:
        try:
            files = [Path(p) for p in json.loads(row["files"])]
        except ValueError:
            out.append(f"export {row['export_key']} has unreadable files {row['files']!r}")
            continue
        if row["item_id"] not in items:
            out.append(f"export {row['export_key']} is of unknown item {row['item_id']}")
        if not files:
            out.append(f"export {row['export_key']} of item {row['item_id']} records no file")
        for path in files:
            recorded.add(path)
            if not path.exists():
                out.append(
                    f"export {row['export_key']} of item {row['item_id']} records {path},"
                    " which is not on disk"
                )
                continue
            why = _whole(path, row["format"], row["item_id"])
            if why:
                out.append(f"exported file {path} of item {row['item_id']} {why}")
    if not export_dir.is_dir():
        return out
    copies: dict[tuple[str, str, Path], list[str]] = defaultdict(list)
    for path in sorted(export_dir.rglob("*")):
        if not path.is_file() or any(p.startswith(".") for p in path.relative_to(export_dir).parts):
            continue
        owner = _owner(path, items)
        if owner is not None:
            copies[(*owner, path.parent)].append(path.name)
        if path in recorded:
            continue
        if owner is None:
            out.append(f"{path} is in the export folder but belongs to no export or item")
            continue
        why = _whole(path, owner[1], owner[0])
        if why:
            out.append(f"unrecorded file {path} of item {owner[0]} {why}")
    out += [
        f"item {iid} has {len(names)} {fmt} files in {folder} ({', '.join(names)});"
        " an export rewrites the item's own file"
        for (iid, fmt, folder), names in copies.items()
        if len(names) > 1
    ]
    return out
