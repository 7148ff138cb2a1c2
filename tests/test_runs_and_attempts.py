"""One run per card, edits people can see, and the attempts of a run, through the real daemon.

- What an item shows is a person's newest version of each type, else the
  system version of the run it is READY on; its priority and match score
  are the shown score's.
- The card shown is composed from the shown summary, score and todos, so a
  person's todos are on it (and in its export), survive a regenerate, and
  ``edit --discard`` brings the system's back.
- Each execution of a run is an attempt; a retry or a resume is a new
  attempt of the same run, and a finished step is not paid for again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.items.todos import without_ticks
from tests import invariants
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc, run_cli
from tests.fake_openai import FakeOpenAI, ai_config
from tests.test_openai_e2e import ARTICLE

TERMINAL = ("READY", "FAILED_AI", "FAILED_EXTRACTION")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _start(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, **{"daemon": {"skip_below": 0}, **sections})
    made.append(d)
    return d.start()


def _settled(d: DaemonProc, item_id: str, count: int = 1) -> dict[str, Any]:
    """Wait for the item's ``count``-th move into a settled state; its ``get``."""
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] in TERMINAL
        ),
        count=count,
        timeout=60,
    )
    got: dict[str, Any] = d.call("get", {"id": item_id})
    return got


def _requests(fake: FakeOpenAI, needle: str, step: str) -> int:
    """Model requests for ``step`` about the item whose intent holds ``needle``."""
    return sum(
        1
        for r in fake.completions()
        if needle in json.dumps(r["body"]["messages"])
        and f'"{step}"' in json.dumps(r["body"].get("response_format") or r["body"]["messages"])
    )


def test_a_failed_regenerate_archived_and_unarchived_shows_the_ready_run_alone(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = _start(daemons, tmp_path, ai=ai_config(fake.base_url), **NO_AUTO_RETRY)
    intent = "decide on WAL mode tag-onerun"
    item_id = d.call("capture", {"text": ARTICLE, "intent": intent})["item"]["id"]
    first = _settled(d, item_id)
    assert first["item"]["status"] == "READY"
    run1 = first["item"]["current_run_id"]
    assert first["item"]["ready_run_id"] == run1

    # A regenerate whose todos step fails: run 2 wrote a summary and a score.
    fake.fault("tag-onerun", "invalid", step="todos")
    run2 = d.call("process", {"id": item_id, "regenerate": True})["run_id"]
    failed = _settled(d, item_id, count=2)
    assert failed["item"]["status"] == "FAILED_AI" and failed["item"]["current_run_id"] == run2
    # While it is failed, the item still shows the card of the run it was READY on.
    shown_runs = {
        kind: a["meta"]["run_id"] for kind, a in failed["artifacts"].items() if kind != "extraction"
    }
    assert shown_runs == dict.fromkeys(("card", "score", "summary", "todos"), run1)
    assert failed["item"]["ready_run_id"] == run1
    assert (failed["item"]["priority"], failed["item"]["match_score"]) == (
        first["item"]["priority"],
        first["item"]["match_score"],
    )
    fake.fault("tag-onerun", None)

    d.call("archive", {"id": item_id})
    back = d.call("unarchive", {"id": item_id})["item"]
    assert back["status"] == "READY" and back["ready_run_id"] == run1
    got = d.call("get", {"id": item_id, "versions": True})
    assert invariants.shown_problems(got) == []
    for kind in ("summary", "score", "todos", "card"):
        art = got["artifacts"][kind]
        assert (art["meta"]["run_id"], art["version"]) == (run1, 1), (kind, art)
    versions = {(v["artifact_type"], v["version"]): v for v in got["versions"]}
    assert versions[("summary", 2)]["run_id"] == run2 and not versions[("summary", 2)]["shown"]
    assert versions[("score", 2)]["run_id"] == run2 and not versions[("score", 2)]["shown"]
    score1 = got["artifacts"]["score"]["payload"]
    assert (got["item"]["priority"], got["item"]["match_score"]) == (
        score1["priority"],
        score1["match_score"],
    )

    # The export pairs the card of run 1 with run 1's reasons.
    out = d.call("export", {"id": item_id, "format": "json"})
    exported = json.loads(Path(out["files"][0]).read_text())
    assert exported["card_version"] == 1
    # `get` adds each todo's tick (`done`), which the card itself does not hold.
    assert exported["card"] == without_ticks("card", got["artifacts"]["card"]["payload"])
    assert exported["reasons"] == score1["reasons"]
    assert d.stop() == 0
    assert invariants.check(d.db_path) == []


def test_a_persons_todos_are_on_the_card_shown_and_exported_until_discarded(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _start(daemons, tmp_path, ai={"engine": "fixed"})
    item_id = d.call("capture", {"text": ARTICLE, "intent": "learn WAL"})["item"]["id"]
    first = _settled(d, item_id)
    system_todos = first["artifacts"]["todos"]["payload"]["items"]
    mine: list[dict[str, Any]] = [
        {"title": "Ask Dana whether our backups copy the -wal file", "kind": "action",
         "estimate_min": 10},
        {"title": "Read the checkpoint section again", "kind": "read", "estimate_min": 15},
    ]  # fmt: skip
    # Two todos and none of kind output: a person's right, not the machine's rubric.
    src = tmp_path / "todos.json"
    src.write_text(json.dumps({"items": mine}))
    out = run_cli(d, "edit", item_id, "todos", "--file", str(src))
    assert out.returncode == 0, out.stderr
    got = d.call("get", {"id": item_id})
    assert got["artifacts"]["todos"]["created_by"] == "user"
    # `get` shows each todo with its tick; none is ticked.
    assert got["artifacts"]["card"]["payload"]["todos"] == [t | {"done": False} for t in mine]
    assert invariants.shown_problems(got) == []

    shown = run_cli(d, "show", item_id)
    assert shown.returncode == 0, shown.stderr
    assert mine[0]["title"] in shown.stdout
    assert all(t["title"] not in shown.stdout for t in system_todos)
    md = Path(d.call("export", {"id": item_id})["files"][0]).read_text()
    assert f"- [ ] {mine[0]['title']}" in md and f"- [ ] {mine[1]['title']}" in md
    assert all(t["title"] not in md for t in system_todos)

    # A regenerate does not hide the person's todos.
    d.call("archive", {"id": item_id})
    d.call("process", {"id": item_id, "regenerate": True})
    again = _settled(d, item_id, count=2)
    assert again["item"]["status"] == "READY"
    assert again["artifacts"]["todos"]["created_by"] == "user"
    assert again["artifacts"]["card"]["payload"]["todos"] == [t | {"done": False} for t in mine]
    assert again["artifacts"]["card"]["meta"]["run_id"] == again["item"]["ready_run_id"]

    # --discard: the system's todos are shown again, on the card and in the export.
    out = run_cli(d, "edit", item_id, "todos", "--discard")
    assert out.returncode == 0, out.stderr
    assert "discarded your todos" in out.stdout
    got = d.call("get", {"id": item_id, "versions": True})
    todos = got["artifacts"]["todos"]
    assert todos["created_by"] == "system"
    assert todos["meta"]["run_id"] == got["item"]["ready_run_id"]
    assert got["artifacts"]["card"]["payload"]["todos"] == todos["payload"]["items"]
    assert [v["discarded"] for v in got["versions"] if v["created_by"] == "user"] == [True]
    md = Path(d.call("export", {"id": item_id})["files"][0]).read_text()
    assert mine[0]["title"] not in md
    # Nothing left of the person's to discard: a clear refusal.
    nothing = run_cli(d, "edit", item_id, "todos", "--discard")
    assert nothing.returncode != 0 and "no version of yours" in nothing.stderr
    assert d.stop() == 0
    assert invariants.check(d.db_path) == []


def test_each_execution_of_a_run_is_an_attempt_and_finished_steps_are_not_paid_twice(
    tmp_path: Path, fake: FakeOpenAI, daemons: list[DaemonProc]
) -> None:
    d = _start(daemons, tmp_path, ai=ai_config(fake.base_url), **NO_AUTO_RETRY)
    # A: fails at todos, then a retry finishes the same run from todos on.
    fake.fault("tag-retry", "invalid", step="todos")
    a = d.call("capture", {"text": ARTICLE, "intent": "WAL tag-retry"})["item"]["id"]
    assert _settled(d, a)["item"]["status"] == "FAILED_AI"
    paid = _requests(fake, "tag-retry", "summary"), _requests(fake, "tag-retry", "score")
    fake.fault("tag-retry", None)
    run_a = d.call("process", {"id": a})["run_id"]
    got_a = _settled(d, a, count=2)
    assert got_a["item"]["status"] == "READY" and got_a["item"]["ready_run_id"] == run_a
    assert (_requests(fake, "tag-retry", "summary"), _requests(fake, "tag-retry", "score")) == paid
    assert [(x["mode"], x["status"]) for x in got_a["attempts"]] == [
        ("PROCESS", "failed"),
        ("RETRY", "succeeded"),
    ]
    retry = got_a["attempts"][1]
    assert retry["run_id"] == run_a and retry["first_step"] == "todos"
    assert got_a["attempts"][0]["error_code"] == "AI_SCHEMA_INVALID"

    # B: the model server never answers the score: the attempt ends as a timeout.
    fake.fault("tag-slow", "hang", step="score")
    b = d.call("capture", {"text": ARTICLE, "intent": "WAL tag-slow"})["item"]["id"]
    got_b = _settled(d, b)
    assert got_b["item"]["failure"]["error_code"] == "AI_TIMEOUT"
    assert [(x["mode"], x["status"]) for x in got_b["attempts"]] == [("PROCESS", "timeout")]

    # C: paused while it waits for the model; it resumes as a new attempt of the same run.
    fake.fault("tag-pause", "hang", step="summary")
    c = d.call("capture", {"text": ARTICLE, "intent": "WAL tag-pause"})["item"]["id"]
    d.wait_log(
        lambda e: e["event"] == "step.started" and e.get("item_id") == c and e["step"] == "summary"
    )
    d.call("pause")
    fake.fault("tag-pause", None)
    held = d.call("get", {"id": c})
    assert held["item"]["status"] == "QUEUED"
    assert [(x["mode"], x["status"]) for x in held["attempts"]] == [
        ("PROCESS", "cancelled"),
        ("RESUME", "queued"),
    ]
    d.call("resume")
    got_c = _settled(d, c)
    assert got_c["item"]["status"] == "READY"
    assert [(x["mode"], x["status"]) for x in got_c["attempts"]] == [
        ("PROCESS", "cancelled"),
        ("RESUME", "succeeded"),
    ]
    assert {x["run_id"] for x in got_c["attempts"]} == {got_c["item"]["current_run_id"]}
    assert got_c["attempts"][1]["first_step"] == "summarize"

    # A terminal attempt never changes: the first ones read as they did.
    assert d.call("get", {"id": a})["attempts"][0] == got_a["attempts"][0]
    stats = d.call("stats")["attempts_by_outcome"]
    assert stats["failed"] == 1 and stats["timeout"] == 1 and stats["cancelled"] == 1
    assert stats["succeeded"] == 2

    printed = run_cli(d, "stats")
    assert printed.returncode == 0, printed.stderr
    assert "attempts (each execution of a run):" in printed.stdout
    assert "  timeout            1" in printed.stdout

    shown = run_cli(d, "show", a)
    assert shown.returncode == 0, shown.stderr
    assert "attempt 1 PROCESS" in shown.stdout and "failed" in shown.stdout
    assert "attempt 2 RETRY" in shown.stdout
    assert d.stop() == 0
    assert invariants.check(d.db_path) == []
