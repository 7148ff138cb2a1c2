"""The `readdod` command as a person runs it, against the real daemon: config and
usage errors and their exit codes, and what `ls`, `show`, `watch` and `ping` print."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod import cli
from readdod.items.states import TRANSITIONS, Status, Trigger
from tests.daemon_proc import DaemonProc, run_cli, toml
from tests.test_lifecycle_e2e import ARTICLE, EMPTY_PAGE, FETCH, PageServer

README = Path(__file__).resolve().parent.parent / "README.md"
#: The user documentation beside the README, and the file that lists the exit codes.
DOCS = README.parent / "docs"
ERRORS_DOC = DOCS / "errors.md"
#: The exit codes docs/errors.md documents (and scripts rely on).
CONFIG_ERROR = 2
USAGE_ERROR = 64


@pytest.fixture
def site() -> Iterator[PageServer]:
    s = PageServer()
    yield s
    s.close()


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    root.mkdir(parents=True, exist_ok=True)
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _readdod(
    *args: str, home: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``readdod ARGS`` with no --socket: the config alone says where the daemon is."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    clean.update({"XDG_CONFIG_HOME": str(home / "xdg"), "XDG_RUNTIME_DIR": str(home / "run")})
    return subprocess.run(
        [sys.executable, "-m", "readdod", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def _wait_item(d: DaemonProc, item_id: str, status: str) -> None:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] == status
        )
    )


#: Every verb that talks to the daemon, with arguments it accepts.
CLIENT_VERBS: list[list[str]] = [
    ["capture", "https://example.org/a", "--intent", "x"],
    ["ls"],
    ["show", "01NOPE"],
    ["process", "01NOPE"],
    ["archive", "01NOPE"],
    ["unarchive", "01NOPE"],
    ["ship", "01NOPE"],
    ["export", "01NOPE"],
    ["edit", "01NOPE", "card", "--file", "-"],
    ["retry-failed", "--dry-run"],
    ["pause"],
    ["resume"],
    ["ping"],
    ["backup", "copy.db"],
    ["watch"],
    ["health"],
    ["stats"],
    ["prune", "--dry-run"],
    ["feed", "ls"],
    ["todo", "done", "01NOPE", "1"],
    ["todos", "export", "--format", "ics"],
    ["metrics"],
]


def test_a_bad_config_stops_every_verb_with_exit_2_naming_file_and_key(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path / "d").start()
    good = tmp_path / "good.toml"
    good.write_text(toml({"control": {"socket": str(d.sock)}}))
    assert _readdod("ls", "--config", str(good), home=tmp_path).returncode == 0
    typo = tmp_path / "typo.toml"
    typo.write_text(toml({"control": {"socket": str(d.sock)}, "daemon": {"concurency": 4}}))

    assert {v[0] for v in CLIENT_VERBS} == set(cli.CLIENT_VERBS)
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Hello there, reader.</p></body></html>")
    local = [["config"], ["extract", "--html", str(page)], ["eval"], ["serve"], ["tui"]]
    local.append(["import", str(page), "--dry-run"])
    for args in [*CLIENT_VERBS, *local]:
        out = _readdod(*args, "--config", str(typo), home=tmp_path, stdin="{}")
        assert out.returncode == CONFIG_ERROR, (args, out)
        assert str(typo) in out.stderr and "concurency" in out.stderr, (args, out.stderr)
        assert "not running" not in out.stderr and "--config" in out.stderr, args
    # The same through $READDOD_CONFIG, and with --socket given: the config is still read.
    for extra in ([], ["--socket", str(d.sock)]):
        out = _readdod("ls", *extra, home=tmp_path, env={"READDOD_CONFIG": str(typo)})
        assert out.returncode == CONFIG_ERROR, out
        assert str(typo) in out.stderr and "$READDOD_CONFIG" in out.stderr
    # A bad value, a file that is not TOML, one that is missing, a bad override.
    bad_value = tmp_path / "value.toml"
    bad_value.write_text(toml({"control": {"socket": str(d.sock)}, "daemon": {"concurrency": 0}}))
    broken = tmp_path / "broken.toml"
    broken.write_text("[control\nsocket = 1\n")
    for path, says in [
        (bad_value, "daemon.concurrency"),
        (broken, "not valid TOML"),
        (tmp_path / "missing.toml", "cannot read"),
    ]:
        out = _readdod("ping", "--config", str(path), home=tmp_path)
        assert out.returncode == CONFIG_ERROR, out
        assert str(path) in out.stderr and says in out.stderr, out.stderr
    out = _readdod(
        "ls", "--config", str(good), home=tmp_path, env={"READDOD_DAEMON_CONCURRENCY": "-1"}
    )
    assert out.returncode == CONFIG_ERROR and "READDOD_DAEMON_CONCURRENCY" in out.stderr
    assert "unset that variable" in out.stderr
    # `demo` runs its own daemon with its own config: --config there is a usage error.
    out = _readdod("demo", "--config", str(good), home=tmp_path)
    assert out.returncode == USAGE_ERROR and "--config" in out.stderr
    assert d.stop() == 0


def test_usage_errors_have_their_own_exit_code(tmp_path: Path) -> None:
    for args in (
        [],
        ["nope"],
        ["ls", "--bogus"],
        ["ls", "--limit", "many"],
        ["capture", "--priority", "P9"],
        ["show"],
        ["extract"],
    ):
        out = _readdod(*args, home=tmp_path)
        assert out.returncode == USAGE_ERROR, (args, out)
        assert out.stderr.strip(), args
    assert _readdod("--version", home=tmp_path).returncode == 0
    assert _readdod("ls", "--help", home=tmp_path).returncode == 0


def test_the_docs_list_every_exit_code() -> None:
    assert (cli.EXIT_CONFIG, cli.EXIT_USAGE) == (CONFIG_ERROR, USAGE_ERROR)
    text = ERRORS_DOC.read_text()
    table = text[text.index("| exit code |") :].split("\n\n", 1)[0]
    listed = {int(m) for m in re.findall(r"^\| `?(\d+)`? \|", table, re.M)}
    codes = {getattr(cli, n) for n in dir(cli) if n.startswith("EXIT_")}
    assert codes <= listed, codes - listed
    assert listed - codes <= set(cli.HEALTH_EXIT.values()), listed - codes


def test_ls_and_watch_show_the_intent_and_why_an_item_was_archived(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    # Every card scores below 101: READY items are archived as SYSTEM_SKIP at once.
    d = _daemon(daemons, tmp_path, daemon={"skip_below": 101}).start()
    watch = subprocess.Popen(
        [sys.executable, "-m", "readdod", "watch", "--config", str(d.config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    killer = threading.Timer(60, watch.kill)
    killer.start()
    try:
        d.wait_log(lambda e: e["event"] == "watch.subscribed")
        skipped = d.call("capture", {"text": ARTICLE, "intent": "decide on WAL mode"})["item"]
        seen: list[str] = []
        assert watch.stdout is not None
        for line in watch.stdout:
            seen.append(line)
            if skipped["id"] in line and "ARCHIVED" in line:
                break
    finally:
        watch.kill()
        watch.wait(timeout=30)
        if watch.stdout is not None:
            watch.stdout.close()
        killer.cancel()
    assert "ARCHIVED  reason SYSTEM_SKIP" in seen[-1], seen
    assert "reason" not in seen[-2], seen  # READY was reached for no stated reason

    d.call("pause")
    kept = d.call("capture", {"text": ARTICLE, "intent": "keep this one"})["item"]
    mine = d.call("capture", {"text": ARTICLE, "intent": "one I put away"})["item"]
    d.call("archive", {"id": mine["id"]})
    table = run_cli(d, "ls")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "PRI", "SCORE", "AGE", "TITLE", "INTENT"]
    by_id = {r.split()[0]: r for r in rows}
    assert by_id[mine["id"]].split()[1] == "ARCHIVED:USER_ARCHIVE"
    assert by_id[mine["id"]].endswith("one I put away")
    assert by_id[kept["id"]].split()[1] == "QUEUED"
    assert by_id[kept["id"]].endswith("keep this one")
    assert by_id[skipped["id"]].split()[1] == "ARCHIVED:SYSTEM_SKIP"
    assert by_id[skipped["id"]].endswith("decide on WAL mode")
    assert d.stop() == 0


def test_ping_speaks_to_people(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path).start()
    out = run_cli(d, "ping")
    assert out.returncode == 0, out.stderr
    assert "paused: no" in out.stdout
    assert re.search(r"uptime: \d+ (s|min)\b", out.stdout), out.stdout
    assert "True" not in out.stdout and "False" not in out.stdout and "uptime_s" not in out.stdout
    paused = run_cli(d, "pause")
    assert paused.stdout.strip() == "paused: yes", paused.stdout
    assert "paused: yes" in run_cli(d, "ping").stdout
    assert json.loads(run_cli(d, "ping", "--json").stdout)["paused"] is True
    assert d.stop() == 0


def _shown(value: Any) -> str:
    if isinstance(value, str) and value and " " not in value:
        return value
    return json.dumps(value, ensure_ascii=False)


def test_show_history_prints_every_field_of_every_event(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, daemon={"skip_below": 0}).start()
    item_id = d.call("capture", {"text": ARTICLE, "intent": "learn WAL"})["item"]["id"]
    _wait_item(d, item_id, "READY")
    d.call("process", {"id": item_id, "regenerate": True})
    # Both runs' transitions: to QUEUED, PROCESSING and READY twice.
    d.wait_log(
        lambda e: e["event"] == "item.transition" and e.get("item_id") == item_id,
        count=6,
    )
    events = d.call("get", {"id": item_id, "history": True})["events"]
    out = run_cli(d, "show", item_id, "--history")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("  History:\n", 1)[1].splitlines()[: len(events)]
    assert len(events) >= 6 and any(ev["run_id"] for ev in events)
    for ev, line in zip(events, lines, strict=True):
        want = [
            ev["at"],
            ev["kind"],
            f"{ev['from_status'] or '-'} -> {ev['to_status'] or '-'}",
            ev["trigger"],
            f"run={ev['run_id'] or '-'}",
            f"seq={ev['seq']}",
            *(f"{k}={_shown(v)}" for k, v in ev["detail"].items()),
        ]
        missing = [w for w in want if w not in line]
        assert not missing, (missing, line)
    assert d.stop() == 0


def _next(out: subprocess.CompletedProcess[str]) -> list[str]:
    """The commands of `show`'s Next block."""
    assert out.returncode == 0, out.stderr
    block = out.stdout.split("  Next:\n", 1)[1].splitlines()
    return [re.split(r"\s{2,}", line.strip())[0] for line in block if line.startswith("   ")]


def test_show_lists_the_next_actions_the_state_allows(
    tmp_path: Path, daemons: list[DaemonProc], site: PageServer
) -> None:
    d = _daemon(daemons, tmp_path, fetch=FETCH, daemon={"skip_below": 0}).start()
    ready = d.call("capture", {"text": ARTICLE, "intent": "a"})["item"]["id"]
    failed = d.call("capture", {"html": EMPTY_PAGE, "intent": "b"})["item"]["id"]
    shipped = d.call("capture", {"text": ARTICLE, "intent": "c"})["item"]["id"]
    running = d.call("capture", {"url": f"{site.base}/hang", "intent": "d"})["item"]["id"]
    for item_id in (ready, shipped):
        _wait_item(d, item_id, "READY")
    _wait_item(d, failed, "FAILED_EXTRACTION")
    _wait_item(d, running, "PROCESSING")
    d.call("ship", {"id": shipped})

    assert _next(run_cli(d, "show", ready)) == [
        f"readdod export {ready}",
        f"readdod edit {ready} card",
        f"readdod process {ready} --regenerate",
        f"readdod ship {ready}",
        f"readdod archive {ready}",
    ]
    shown = run_cli(d, "show", failed)
    assert "FAILED at extract: EXTRACTION_EMPTY" in shown.stdout
    assert _next(shown) == [f"readdod process {failed}", f"readdod archive {failed}"]
    assert _next(run_cli(d, "show", shipped)) == [
        f"readdod export {shipped}",
        f"readdod archive {shipped}",
    ]
    assert _next(run_cli(d, "show", running)) == [
        f"readdod watch {running}",
        f"readdod archive {running} --cancel",
    ]
    # Each command works as printed.
    assert run_cli(d, "archive", running, "--cancel").returncode == 0
    assert _next(run_cli(d, "show", running)) == [
        f"readdod unarchive {running}",
        f"readdod unarchive {running} --regenerate",
    ]
    d.call("pause")
    queued = d.call("capture", {"text": ARTICLE, "intent": "e"})["item"]["id"]
    assert _next(run_cli(d, "show", queued)) == [
        f"readdod watch {queued}",
        f"readdod archive {queued}",
    ]
    assert d.stop() == 0
    d2 = _daemon(daemons, tmp_path / "manual", daemon={"auto_process": False}).start()
    captured = d2.call("capture", {"text": ARTICLE, "intent": "f"})["item"]["id"]
    assert _next(run_cli(d2, "show", captured)) == [
        f"readdod process {captured}",
        f"readdod archive {captured}",
    ]
    assert d2.stop() == 0


def test_every_move_a_person_may_make_has_a_command() -> None:
    """The Next block comes from the transition table: a new user transition needs a command."""
    for (src, dst), triggers in TRANSITIONS.items():
        if Trigger.USER in triggers:
            assert cli._moves(src, dst, "ID"), (src, dst)
    for status in Status:
        item = {"id": "ID", "status": status.value}
        assert cli.next_actions(item, has_card=True), status


#: Names of documents that are not in the repository; what users read says the rule itself.
ELSEWHERE = re.compile(r"Cecelia|DESIGN|the design\b|\bseeds? \d|seeds/|novel-proofer|§")


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_what_users_read_stands_on_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    example = README.parent / "config" / "readdod.example.toml"
    texts = {"README.md": README.read_text(), str(example.name): example.read_text()}
    texts |= {f"docs/{doc.name}": doc.read_text() for doc in sorted(DOCS.glob("*.md"))}
    local = {"serve", "demo", "config", "schemas", "eval", "extract", "browser", "browser-host"}
    local |= {"import", "tui"}
    texts["readdod --help"] = _help(capsys)
    for verb in sorted(set(cli.CLIENT_VERBS) | local):
        texts[f"readdod {verb} --help"] = _help(capsys, verb)
    found = {name: ELSEWHERE.findall(text) for name, text in texts.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
