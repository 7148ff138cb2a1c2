"""``readdod import`` as a person runs it, against the real daemon on its Unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from readdod.capture.importing import import_file
from readdod.capture.plan import Options
from readdod.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_UNAVAILABLE
from readdod.control.client import Client
from tests.daemon_proc import DaemonProc, run_cli

FILES = Path(__file__).parent / "imports"
#: A page long enough to be an article (shorter kept content is fetched instead).
PAGE = " ".join(
    [
        "Spaced",
        "reviews",
        "help",
        "memory",
        "because",
        "each",
        "retrieval,",
        "made",
        "just",
        "as",
        "forgetting",
        "begins,",
        "strengthens",
        "the",
        "trace",
        "more",
        "than",
        "an",
        "easy",
        "review",
        "would",
        "do.",
    ]
    * 3
)


def _daemon(made: list[DaemonProc], root: Path) -> DaemonProc:
    d = DaemonProc(root, daemon={"auto_process": False})
    made.append(d)
    return d.start()


def _import(d: DaemonProc, *args: str) -> tuple[int, dict[str, Any], str]:
    out = run_cli(d, "import", *args, "--json", "--config", str(d.config))
    return out.returncode, json.loads(out.stdout), out.stderr


def _items(d: DaemonProc) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = d.call("list", {"limit": 1000})["items"]
    return items


def test_every_format_imports_and_a_second_run_adds_nothing(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    expected_new = {
        "bookmarks.html": 3,
        "pocket.csv": 3,
        "omnivore.json": 2,
        "wallabag.json": 1,
        "karakeep.json": 2,
        "urls.txt": 3,
    }
    for name, new in expected_new.items():
        code, first, _ = _import(d, str(FILES / name), "--intent", "learn from it")
        assert (first["new"], first["already"]) == (new, 0), (name, first)
        assert code == (EXIT_ERROR if first["refused"] else EXIT_OK)
        code, again, _ = _import(d, str(FILES / name), "--intent", "learn from it")
        assert (again["new"], again["already"]) == (0, new), (name, again)
        assert again["refused"] == first["refused"]
    assert len(_items(d)) == sum(expected_new.values())


def test_what_an_entry_keeps(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path)
    code, tally, _ = _import(d, str(FILES / "wallabag.json"), "--tag", "from-wallabag")
    assert code == EXIT_ERROR and tally["new"] == 1
    assert tally["refused"][0]["line"] == 24 and "ftp://" in tally["refused"][0]["reason"]
    (item,) = _items(d)
    assert item["title"] == "Async Rust in depth"
    # The annotation is the note; with no --intent the note is the intent.
    assert item["intent"] == "learn how pinning works"
    # Starred on wallabag: a tag to filter on.
    assert item["tags"] == ["async", "from-wallabag", "rust", "starred"]
    assert item["priority"] == "P3"
    assert item["source_type"] == "html"  # the page Wallabag kept came along
    got = d.call("get", {"id": item["id"], "history": True})
    capture = next(e for e in got["events"] if e["kind"] == "capture")
    assert capture["detail"]["origin"] == {
        "source": "import:wallabag",
        "saved_at": "2021-06-01T07:00:00Z",
        "note": "learn how pinning works",
        "highlights": ["Pinning keeps"],
    }


def test_entries_without_intent_are_refused_with_their_lines(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    code, tally, _ = _import(d, str(FILES / "bookmarks.html"))
    assert code == EXIT_ERROR
    # A <DD> is the source's description (often the page's teaser), never an intent.
    assert tally["new"] == 0
    reasons = {r["line"]: r["reason"] for r in tally["refused"]}
    assert "give --intent" in reasons[12] and "description is not an intent" in reasons[12]
    assert "give --intent" in reasons[14]
    assert "not a web address" in reasons[21] and "no HREF" in reasons[22]
    # Given an intent later, every link comes in.
    _, tally, _ = _import(d, str(FILES / "bookmarks.html"), "--intent", "read later")
    assert (tally["new"], tally["already"]) == (3, 0)


def test_an_import_cut_short_is_finished_by_running_it_again(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    lines = [f"https://example.org/page/{i}" for i in range(500)]
    whole = tmp_path / "links.txt"
    whole.write_text("\n".join(lines) + "\n")
    # What an interrupted run left behind: the first 180 links in.
    part = tmp_path / "part.txt"
    part.write_text("\n".join(lines[:180]) + "\n")
    assert _import(d, str(part), "-i", "skim")[1]["new"] == 180
    code, tally, _ = _import(d, str(whole), "-i", "skim")
    assert code == EXIT_OK
    assert (tally["new"], tally["already"], tally["refused"]) == (320, 180, [])
    assert len({i["url"] for i in _items(d)}) == 500


def test_an_import_is_one_call_with_its_progress(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    """Any client imports through one function: the file and options in, progress as
    it goes, the tally out; a daemon gone is said in the tally, not raised."""
    d = _daemon(daemons, tmp_path)
    links = tmp_path / "links.txt"
    links.write_text("".join(f"https://example.org/one/{i}\n" for i in range(250)))
    opts = Options(fmt="auto", intent="skim")
    done: list[int] = []
    tally = import_file(links, opts, lambda: Client(d.sock), lambda t: done.append(t.done))
    assert (tally.fmt, tally.total, tally.new, tally.interrupted) == ("urls", 250, 250, None)
    assert done[0] == 0 and done[-1] == 250 and done == sorted(done) and len(done) > 2
    assert len(_items(d)) == 250
    dry = import_file(links, opts, None)
    assert dry.dry_run and (dry.new, dry.already) == (250, 0) and len(_items(d)) == 250
    d.stop()
    gone = import_file(links, opts, lambda: Client(d.sock))
    assert gone.interrupted and not gone.cancelled and gone.new == 0


def test_the_daemon_going_away_says_how_to_resume(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    d.stop()
    out = run_cli(d, "import", str(FILES / "urls.txt"), "-i", "x", "--config", str(d.config))
    assert out.returncode == EXIT_UNAVAILABLE
    assert "run the same command again" in out.stderr


def test_dry_run_needs_no_daemon_and_captures_nothing(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    code, tally, _ = _import(d, str(FILES / "pocket.csv"), "--dry-run", "-i", "x")
    assert tally["dry_run"] and tally["new"] == 3 and code == EXIT_ERROR
    assert _items(d) == []


def test_a_file_that_is_no_export_is_refused_whole(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    junk = tmp_path / "notes.txt"
    junk.write_text("dear diary\n")
    out = run_cli(d, "import", str(junk), "--config", str(d.config))
    assert out.returncode == EXIT_ERROR and "give --format" in out.stderr
    out = run_cli(d, "import", str(tmp_path / "missing.csv"), "--config", str(d.config))
    assert out.returncode == EXIT_ERROR and "cannot read" in out.stderr


def test_on_a_terminal_the_import_asks_once_for_a_missing_intent(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    primary, secondary = os.openpty()
    try:
        os.write(primary, b"keep up with the field\n")
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "readdod",
                "import",
                str(FILES / "urls.txt"),
                "--socket",
                str(d.sock),
                "--config",
                str(d.config),
            ],
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert "3 entries have no note" in out.stderr
    assert {i["intent"] for i in _items(d)} == {"keep up with the field"}
    assert "new 3, already there 0, refused 1" in out.stdout


def test_omnivore_export_archive_is_read_whole(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    import zipfile

    d = _daemon(daemons, tmp_path)
    archive = tmp_path / "omnivore-export.zip"
    more = '[{"title": "B", "url": "https://example.org/b", "labels": [], "savedAt": "2024-01-01"}]'
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("metadata_0_to_3.json", (FILES / "omnivore.json").read_text())
        z.writestr("metadata_4_to_4.json", more)
        z.writestr("content/spacing-effect.html", f"<article><p>{PAGE}</p></article>")
        z.writestr(
            "highlights/spacing-effect.md",
            "> Reviews spaced over days beat one long session.\n\nuse for the exam\n",
        )
    _code, tally, _ = _import(d, str(archive), "-i", "study")
    assert tally["format"] == "omnivore" and tally["new"] == 3
    assert [r["line"] for r in tally["refused"]] == [17, 18]
    assert tally["refused"][0]["reason"].startswith("metadata_0_to_3.json: ")
    # The page Omnivore kept comes along with its link; the others are fetched.
    kinds = {i["url"]: i["source_type"] for i in _items(d)}
    assert kinds["https://example.org/spacing"] == "html"
    assert kinds["https://example.org/b"] == "url"
    # What the person highlighted is kept with the item, and counted.
    assert tally["highlighted"] == 1
    spacing = next(i for i in _items(d) if i["url"] == "https://example.org/spacing")
    got = d.call("get", {"id": spacing["id"], "history": True})
    origin = next(e for e in got["events"] if e["kind"] == "capture")["detail"]["origin"]
    assert origin["highlights"] == [
        "Reviews spaced over days beat one long session. — use for the exam"
    ]
    # The publisher's teaser is the description, never the intent.
    assert origin["description"] == "revisit before the exam"
    assert spacing["intent"] == "study"


def test_a_daemon_killed_mid_import_loses_nothing_and_adds_nothing_twice(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path)
    count = 4000
    links = tmp_path / "links.txt"
    links.write_text("".join(f"https://example.org/k/{i}\n" for i in range(count)))
    cmd = [sys.executable, "-m", "readdod", "import", str(links), "-i", "skim", "--json"]
    cmd += ["--socket", str(d.sock), "--config", str(d.config)]
    running = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        d.wait_log(lambda e: e["event"] == "item.captured", count=1000)
        d.kill9()
        out, err = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert running.returncode == EXIT_UNAVAILABLE, err
    assert "run the same command again" in err
    cut = json.loads(out)
    # Batches whose answers never came were written all the same: they count on the rerun.
    assert cut["interrupted"] and cut["new"] < count

    d.start()
    code, tally, _ = _import(d, str(links), "-i", "skim")
    assert code == EXIT_OK
    assert tally["new"] + tally["already"] == count
    assert tally["already"] >= max(cut["new"], 1000)
    with d.db() as db:
        stored = db.execute("SELECT count(*), count(DISTINCT url) FROM items").fetchone()
    assert tuple(stored) == (count, count)


def test_an_import_fits_in_few_connections(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    """With room for only a few connections, the import uses those it gets."""
    d = DaemonProc(tmp_path, daemon={"auto_process": False}, control={"max_connections": 3})
    daemons.append(d)
    d.start()
    links = tmp_path / "links.txt"
    links.write_text("".join(f"https://example.org/c/{i}\n" for i in range(1500)))
    code, tally, err = _import(d, str(links), "-i", "skim")
    assert code == EXIT_OK, err
    assert (tally["new"], tally["refused"]) == (1500, [])
