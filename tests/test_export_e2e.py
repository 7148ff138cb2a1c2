"""Export through the real daemon: files, idempotency, refusals, failures, auto_export."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from readdod.control.client import RpcError
from readdod.errors import DaemonUnavailable
from tests.daemon_proc import DaemonProc, run_cli

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database.\n\n"
    "Group commit batches many small transactions into one fsync."
)
FAST = {"engine": "fixed"}


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    root.mkdir(parents=True, exist_ok=True)
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _ready(d: DaemonProc, intent: str, *, count: int, title: str | None = None) -> str:
    params: dict[str, Any] = {"text": ARTICLE, "intent": intent}
    if title:
        params["title"] = title
    item_id: str = d.call("capture", params)["item"]["id"]
    d.wait_status("READY", count=count)
    return item_id


def _status(d: DaemonProc, item_id: str) -> str:
    return str(d.call("get", {"id": item_id})["item"]["status"])


def _fail(d: DaemonProc, method: str, params: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    with pytest.raises(RpcError) as exc:
        d.call(method, params)
    return exc.value.rpc_code, exc.value.error_code, exc.value.data


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every entry (temp files included) with its inode and mtime."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _front_matter(path: Path) -> dict[str, Any]:
    text = path.read_text()
    loaded = yaml.safe_load(text[4 : text.index("\n---\n", 4)])
    assert isinstance(loaded, dict)
    return loaded


def test_export_files_idempotency_and_reexport(
    tmp_path: Path, daemons: list[DaemonProc], store_sections: dict[str, dict[str, Any]]
) -> None:
    d = _daemon(daemons, tmp_path, ai=FAST, **store_sections).start()
    exports = tmp_path / "exports"
    item_id = _ready(d, "decide on WAL", count=1, title="SQLite WAL: a guide")

    out = run_cli(d, "export", item_id)
    assert out.returncode == 0, out.stderr
    md = Path(out.stdout.strip())
    assert md.parent == exports and md.name.endswith("-sqlite-wal-a-guide.md")
    meta = _front_matter(md)
    assert meta["id"] == item_id and meta["intent"] == "decide on WAL"
    assert meta["priority"] == "P1" and meta["match_score"] == 70
    assert md.read_text().count("- [ ] ") == 3
    assert _status(d, item_id) == "SHIPPED"

    # The same request again: the same file, and nothing written at all.
    before = _listing(exports)
    again = d.call("export", {"id": item_id})
    assert again["reused"] is True and again["files"] == [str(md)]
    assert again["item"]["status"] == "SHIPPED"
    assert _listing(exports) == before

    # JSON with a key of our own; the key is idempotent and bound to its format.
    first = d.call("export", {"id": item_id, "format": "json", "export_key": "k-1"})
    assert first["reused"] is False and first["export_key"] == "k-1"
    js = Path(first["files"][0])
    assert js.suffix == ".json" and json.loads(js.read_text())["card"]["match_score"] == 70
    before = _listing(exports)
    assert d.call("export", {"id": item_id, "format": "json", "export_key": "k-1"}) == {
        **first,
        "reused": True,
    }
    assert _listing(exports) == before
    code, error_code, _ = _fail(d, "export", {"id": item_id, "export_key": "k-1"})
    assert (code, error_code) == (409, "IDEMPOTENCY_CONFLICT")

    # A person's edit is a new card version: re-exporting from SHIPPED stays SHIPPED
    # and rewrites the item's own file (its name does not move with the title).
    card = d.call("get", {"id": item_id})["artifacts"]["card"]
    edited = {**card["payload"], "title": "WAL, my notes", "one_liner": "Edited by hand."}
    d.call("edit", {"id": item_id, "type": "card", "payload": edited})
    re = d.call("export", {"id": item_id})
    assert re["reused"] is False and re["files"] == [str(md)]
    assert re["item"]["status"] == "SHIPPED"
    meta = _front_matter(md)
    assert meta["title"] == "WAL, my notes" and meta["card_version"] == card["version"] + 1
    assert "> Edited by hand." in md.read_text()
    assert sorted(p.name for p in exports.iterdir()) == sorted([md.name, js.name])

    # Another item with the same title gets a suffixed name, never the first one's file.
    other = _ready(d, "another intent", count=2, title="SQLite WAL: a guide")
    out = run_cli(d, "export", other, "--json")
    assert out.returncode == 0, out.stderr
    path = Path(json.loads(out.stdout)["files"][0])
    assert path.name == md.name.replace(".md", "-2.md")
    assert _front_matter(md)["id"] == item_id and _front_matter(path)["id"] == other

    # `ship` still marks an item done without writing anything.
    third = _ready(d, "third", count=3)
    assert run_cli(d, "ship", third).returncode == 0 and _status(d, third) == "SHIPPED"

    runs = d.call("get", {"id": item_id})["runs"]
    assert [r["status"] for r in runs if r["mode"] == "EXPORT"] == ["succeeded"] * 3

    # A key whose file was deleted after the card changed cannot give that file back:
    # refused, with the way to export the card as it is now; nothing is written.
    js.unlink()
    out = run_cli(d, "export", item_id, "--format", "json", "--export-key", "k-1", "--json")
    assert out.returncode != 0 and "IDEMPOTENCY_CONFLICT" in out.stderr, out
    assert "is gone" in out.stderr and "without --export-key" in out.stderr
    assert not js.exists()
    assert d.stop() == 0


def test_an_export_whose_file_was_deleted_is_written_again_and_says_so(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai=FAST).start()
    item_id = _ready(d, "decide on WAL", count=1, title="SQLite WAL: a guide")
    for extra in ((), ("--format", "json", "--export-key", "my-key")):
        first = run_cli(d, "export", item_id, *extra, "--json")
        assert first.returncode == 0, first.stderr
        wrote = json.loads(first.stdout)
        assert (wrote["reused"], wrote["rewritten"]) == (False, [])
        path = Path(wrote["files"][0])
        content = path.read_bytes()
        # Deleted by hand, then the same export again: the same file, same name, same bytes.
        path.unlink()
        again = run_cli(d, "export", item_id, *extra, "--json")
        assert again.returncode == 0, again.stderr
        res = json.loads(again.stdout)
        assert res["reused"] is True and res["rewritten"] == [str(path)]
        assert res["files"] == [str(path)] and res["export_key"] == wrote["export_key"]
        assert path.read_bytes() == content
        # A person reading the terminal is told too.
        path.unlink()
        human = run_cli(d, "export", item_id, *extra)
        assert human.returncode == 0 and human.stdout.strip() == str(path)
        assert f"{path} was gone; written again" in human.stderr, human.stderr
        assert path.read_bytes() == content
        # With the file there, the key writes nothing, as before.
        quiet = json.loads(run_cli(d, "export", item_id, *extra, "--json").stdout)
        assert (quiet["reused"], quiet["rewritten"]) == (True, [])
    got = d.call("get", {"id": item_id, "history": True})
    assert got["item"]["status"] == "SHIPPED"
    rewrites = [e for e in got["events"] if e["detail"].get("rewritten")]
    assert len(rewrites) == 4
    assert d.stop() == 0


def test_export_is_refused_outside_ready_failed_export_and_shipped(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    cfg: dict[str, dict[str, Any]] = {
        "daemon": {"auto_process": False, "max_orphanings": 1},
        "ai": FAST,
    }
    d = _daemon(daemons, tmp_path, **cfg)
    # A worker that dies in step summary, once: with max_orphanings = 1 that is FAILED_AI.
    d.start(env={"READDOD_CRASH_AT": "step:summary"})
    failed_ai = d.call("capture", {"text": ARTICLE, "intent": "crash"})["item"]["id"]
    try:
        d.call("process", {"id": failed_ai})
    except DaemonUnavailable:
        pass  # the crash may come before the answer
    assert d.proc is not None and d.proc.wait(timeout=60) == 86
    d.close()
    d.start()

    captured = d.call("capture", {"text": ARTICLE, "intent": "captured"})["item"]["id"]
    empty_page = "<html><body><nav><a href='/'>Home</a></nav></body></html>"
    failed_ext = d.call("capture", {"html": empty_page, "intent": "x"})["item"]["id"]
    archived = d.call("capture", {"text": ARTICLE, "intent": "archived"})["item"]["id"]
    for i in (failed_ext, archived):
        d.call("process", {"id": i})
    d.wait_status("FAILED_EXTRACTION", count=1)
    d.wait_status("READY", count=1)
    d.call("archive", {"id": archived})
    d.call("pause")
    queued = d.call("capture", {"text": ARTICLE, "intent": "queued"})["item"]["id"]
    d.call("process", {"id": queued})

    cases = [
        (captured, "CAPTURED"),
        (queued, "QUEUED"),
        (failed_ext, "FAILED_EXTRACTION"),
        (failed_ai, "FAILED_AI"),
        (archived, "ARCHIVED"),
    ]
    for item_id, src in cases:
        assert _status(d, item_id) == src
        for params in ({}, {"format": "json"}, {"export_key": f"k-{src}"}):
            code, error_code, data = _fail(d, "export", {"id": item_id, **params})
            assert (code, error_code) == (409, "INVALID_TRANSITION"), src
            assert data["from"] == src and data["to"] == "SHIPPED"
        assert _status(d, item_id) == src
    out = run_cli(d, "export", captured)
    assert out.returncode == 1 and "INVALID_TRANSITION" in out.stderr
    assert not (tmp_path / "exports").exists()  # nothing was written for any of them

    assert _fail(d, "export", {"id": "01NOSUCHITEM"})[:2] == (404, "NOT_FOUND")
    for bad in ({"format": "pdf"}, {"out_dir": "relative/notes"}, {"export_key": ""}):
        assert _fail(d, "export", {"id": archived, **bad})[:2] == (422, "VALIDATION_ERROR")
    assert d.stop() == 0


def test_export_of_a_processing_item_is_busy(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(
        daemons,
        tmp_path,
        daemon={"concurrency": 1, "shutdown_grace_s": 0.2},
        ai={"engine": "fixed", "fixed_delay_ms": 600_000},
    ).start()
    item_id = d.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
    d.wait_status("PROCESSING", count=1)
    code, error_code, data = _fail(d, "export", {"id": item_id})
    assert (code, error_code) == (409, "PROCESSING_IN_PROGRESS")
    assert data["from"] == "PROCESSING" and data["to"] == "SHIPPED"
    assert _status(d, item_id) == "PROCESSING"
    assert d.stop() == 0


def test_unwritable_places_fail_the_export_and_a_good_place_ships_it(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai=FAST).start()
    item_id = _ready(d, "decide on WAL", count=1)
    blocker = tmp_path / "notes"
    blocker.write_text("a file where a folder should be\n")

    for attempt, out_dir in enumerate([blocker / "cards", blocker], start=1):
        code, error_code, data = _fail(d, "export", {"id": item_id, "out_dir": str(out_dir)})
        assert (code, error_code) == (500, "EXPORT_WRITE_FAILED")
        assert data["item_status"] == "FAILED_EXPORT" and str(out_dir) in data["path"]
        item = d.call("get", {"id": item_id})["item"]
        assert item["status"] == "FAILED_EXPORT"
        failure = item["failure"]
        assert failure["error_code"] == "EXPORT_WRITE_FAILED"
        assert failure["failed_step"] == "export" and failure.get("attempts", 1) == attempt
        assert f"{blocker} is a file, not a folder" in failure["message"]
        assert str(out_dir) in failure["message"]
    assert blocker.read_text() == "a file where a folder should be\n"
    assert f"Export again with `readdod export {item_id}" in run_cli(d, "show", item_id).stdout

    good = tmp_path / "good notes"
    out = run_cli(d, "export", item_id, "--out", str(good))
    assert out.returncode == 0, out.stderr
    path = Path(out.stdout.strip())
    assert path.parent == good and _front_matter(path)["id"] == item_id
    item = d.call("get", {"id": item_id})["item"]
    assert item["status"] == "SHIPPED" and item["failure"] is None
    assert d.call("get", {"id": item_id})["exported"] == [str(path)]
    assert f"Exported to: {path}" in run_cli(d, "show", item_id).stdout

    # A failed re-export leaves a SHIPPED item SHIPPED; the event log keeps the failure.
    out = run_cli(d, "export", item_id, "--out", str(blocker / "x"), "--format", "json")
    assert out.returncode == 1 and "EXPORT_WRITE_FAILED" in out.stderr
    assert str(blocker / "x") in out.stderr
    got = d.call("get", {"id": item_id, "history": True})
    assert got["item"]["status"] == "SHIPPED" and got["item"]["failure"] is None
    last = got["events"][-1]
    assert last["kind"] == "export" and last["to_status"] == "SHIPPED"
    assert last["detail"]["error_code"] == "EXPORT_WRITE_FAILED"
    moves = [(e["from_status"], e["to_status"]) for e in got["events"] if e["kind"] == "transition"]
    assert moves[-3:] == [
        ("READY", "FAILED_EXPORT"),
        ("FAILED_EXPORT", "FAILED_EXPORT"),
        ("FAILED_EXPORT", "SHIPPED"),
    ]
    export_runs = [r for r in got["runs"] if r["mode"] == "EXPORT"]
    assert [r["status"] for r in export_runs] == ["failed", "failed", "succeeded", "failed"]
    assert str(blocker / "x") in export_runs[-1]["error_message"]  # `show` tells why
    shown = run_cli(d, "show", item_id).stdout
    assert f"{export_runs[-1]['run_id']} EXPORT     failed    attempts=1 nothing written" in shown
    assert f"{export_runs[-2]['run_id']} EXPORT     succeeded attempts=1 file written" in shown
    assert d.stop() == 0


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="root ignores permission bits; test_export.py::test_read_only_folder covers this",
)
def test_read_only_folder_fails_the_export(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, ai=FAST).start()
    item_id = _ready(d, "x", count=1)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code, error_code, data = _fail(d, "export", {"id": item_id, "out_dir": str(ro)})
    finally:
        ro.chmod(0o755)
    assert (code, error_code) == (500, "EXPORT_WRITE_FAILED")
    assert data["path"].startswith(str(ro)) and _status(d, item_id) == "FAILED_EXPORT"
    assert d.call("export", {"id": item_id})["item"]["status"] == "SHIPPED"
    assert d.stop() == 0


def test_a_crash_after_writing_converges_and_a_bad_card_fails_to_render(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai=FAST)
    d.start(env={"READDOD_CRASH_AT": "export:written"})
    item_id = _ready(d, "crash after the write", count=1)
    broken = _ready(d, "a card that cannot be read", count=2)
    with pytest.raises(DaemonUnavailable):
        d.call("export", {"id": item_id})
    assert d.proc is not None and d.proc.wait(timeout=60) == 86
    d.close()
    exports = tmp_path / "exports"
    [written] = list(exports.iterdir())  # whole (it was renamed into place), not recorded
    assert _front_matter(written)["id"] == item_id

    # While the daemon is down, a user card version that no longer decodes.
    with sqlite3.connect(d.db_path) as db:
        db.execute(
            "INSERT INTO artifacts (item_id, artifact_type, version, created_by, run_id,"
            " payload, meta, created_at) SELECT item_id, 'card', max(version) + 1, 'user',"
            " NULL, '{\"title\": 42}', '{\"run_id\": null}', 0 FROM artifacts"
            " WHERE item_id = ? AND artifact_type = 'card'",
            (broken,),
        )
    d.start()
    assert _status(d, item_id) == "READY"  # the crash came before the commit
    again = d.call("export", {"id": item_id})
    assert again["files"] == [str(written)] and again["item"]["status"] == "SHIPPED"
    assert [p.name for p in exports.iterdir()] == [written.name]

    code, error_code, _ = _fail(d, "export", {"id": broken})
    assert (code, error_code) == (500, "EXPORT_RENDER_FAILED")
    item = d.call("get", {"id": broken})["item"]
    assert item["status"] == "FAILED_EXPORT"
    assert item["failure"]["error_code"] == "EXPORT_RENDER_FAILED"
    assert f"readdod edit {broken} card" in item["failure"]["message"]
    assert [p.name for p in exports.iterdir()] == [written.name]
    assert d.stop() == 0


def test_auto_export_on_ready(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(
        daemons,
        tmp_path / "on",
        daemon={"auto_export": True},
        export={"format": "json"},
        ai=FAST,
    ).start()
    ids = [
        d.call("capture", {"text": ARTICLE, "intent": f"auto {n}"})["item"]["id"] for n in (1, 2)
    ]
    done = d.wait_log(lambda e: e["event"] == "export.auto_done", count=2)
    assert {e["item_id"] for e in done} == set(ids)
    for item_id in ids:
        assert _status(d, item_id) == "SHIPPED"
    files = sorted((tmp_path / "on" / "exports").iterdir())
    assert [p.suffix for p in files] == [".json", ".json"]
    assert {json.loads(p.read_text())["id"] for p in files} == set(ids)
    assert d.stop() == 0


def test_auto_export_failure_is_recorded(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder\n")
    d = _daemon(
        daemons, tmp_path, daemon={"auto_export": True}, export={"dir": str(blocker)}, ai=FAST
    ).start()
    item_id = d.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
    [failed] = d.wait_log(lambda e: e["event"] == "export.auto_failed")
    assert failed["item_id"] == item_id and failed["error_code"] == "EXPORT_WRITE_FAILED"
    item = d.call("get", {"id": item_id})["item"]
    assert item["status"] == "FAILED_EXPORT" and str(blocker) in item["failure"]["message"]
    good = d.call("export", {"id": item_id, "out_dir": str(tmp_path / "good")})
    assert good["item"]["status"] == "SHIPPED"
    assert d.stop() == 0


def test_concurrent_exports_never_share_or_clobber_a_file(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    d = _daemon(daemons, tmp_path, ai=FAST).start()
    ids = [_ready(d, f"same title {n}", count=n + 1, title="Same title") for n in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda i: d.call("export", {"id": i}), ids))
        twins = list(pool.map(lambda _: d.call("export", {"id": ids[0]}), range(4)))
    paths = [Path(r["files"][0]) for r in results]
    assert len(set(paths)) == 6
    for item_id, path in zip(ids, paths, strict=True):
        assert _front_matter(path)["id"] == item_id
    assert {t["files"][0] for t in twins} == {str(paths[0])}
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == sorted(p.name for p in paths)
    with d.db() as db:
        assert db.execute("SELECT count(*) FROM exports").fetchone()[0] == 6
    assert d.stop() == 0
