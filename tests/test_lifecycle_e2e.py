"""The item lifecycle through the real daemon: capture dedupe, versions and
edits, archive semantics, cancel, retries across runs, the attempt ledger,
and every operation tried in every state."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.control.client import Client, RpcError
from tests.daemon_proc import DaemonProc, run_cli
from tests.test_urls import DIFFERENT, SAME_PAGE

ARTICLE = (
    "SQLite in WAL mode lets readers and a writer work at the same time.\n\n"
    "To enable it, run PRAGMA journal_mode=WAL once; the setting persists in the file. "
    "Checkpoints move pages from the WAL back into the database.\n\n"
    "Group commit batches many small transactions into one fsync."
)
PAGE = (
    "<html><head><title>WAL notes</title></head><body><article><h1>WAL notes</h1>"
    + "".join(f"<p>{p}</p>" for p in ARTICLE.split("\n\n"))
    + "</article></body></html>"
).encode()
EMPTY_PAGE = "<html><body><nav><a href='/'>Home</a></nav></body></html>"


class PageServer:
    """A loopback site: /page answers, /hang holds the request until released,
    /flaky answers 503 the first ``flaky_failures`` times."""

    def __init__(self, flaky_failures: int = 0) -> None:
        self.release = threading.Event()
        self.flaky_left = flaky_failures
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/hang"):
                    outer.release.wait(120)
                if self.path.startswith("/flaky") and outer.flaky_left > 0:
                    outer.flaky_left -= 1
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def site() -> Iterator[PageServer]:
    s = PageServer(flaky_failures=1)
    yield s
    s.close()


FETCH = {"allow_private": True, "attempts": 1, "timeout_s": 120.0, "read_timeout_s": 120.0}


def _daemon(made: list[DaemonProc], root: Path, **sections: dict[str, Any]) -> DaemonProc:
    d = DaemonProc(root, **sections)
    made.append(d)
    return d


def _refused(c: Client, method: str, params: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    with pytest.raises(RpcError) as exc:
        c.call(method, params)
    return exc.value.rpc_code, exc.value.error_code, exc.value.data


def _status(c: Client, item_id: str) -> str:
    return str(c.call("get", {"id": item_id})["item"]["status"])


def _wait_item(
    d: DaemonProc, item_id: str, status: str, *, count: int = 1, timeout: float = 60
) -> None:
    """Wait until ``item_id`` has reached ``status`` ``count`` times."""
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] == status
        ),
        count=count,
        timeout=timeout,
    )


# --- 1. capture ----------------------------------------------------------------


def test_capture_dedupes_by_canonical_url_and_intent(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, daemon={"auto_process": False}).start()
    with d.client() as c:
        first = c.call(
            "capture",
            {
                "url": "https://Example.org:443/post?b=2&a=1&utm_source=feed#comments",
                "intent": "Decide whether we adopt WAL",
                "priority": "P1",
                "tags": ["db", "sqlite", "db"],
            },
        )
        assert first["created"] is True
        item = first["item"]
        assert item["canonical_url"] == "https://example.org/post?a=1&b=2"
        assert item["priority"] == "P1" and item["tags"] == ["db", "sqlite"]
        for url, intent in [
            ("https://example.org/post?a=1&b=2", "Decide whether we adopt WAL"),
            ("HTTPS://EXAMPLE.ORG/post?fbclid=x&a=1&b=2&gclid=y", "decide  whether we\tadopt wal"),
            (
                "https://example.org./post?b=2&a=1&mc_eid=1&mc_cid=2",
                " DECIDE WHETHER WE ADOPT WAL ",
            ),
        ]:
            again = c.call("capture", {"url": url, "intent": intent})
            assert again["created"] is False and again["item"]["id"] == item["id"], url

        # The whole table of variants through the socket: one item per page, and
        # the pairs that are different pages stay different items.
        base = c.call("capture", {"url": SAME_PAGE[0], "intent": "table"})["item"]["id"]
        for variant in SAME_PAGE:
            got = c.call("capture", {"url": variant, "intent": "Table "})
            assert (got["created"], got["item"]["id"]) == (False, base), variant
        for n, (a, b) in enumerate(DIFFERENT):
            first_id = c.call("capture", {"url": a, "intent": f"pair {n}"})["item"]["id"]
            second = c.call("capture", {"url": b, "intent": f"pair {n}"})
            assert second["created"] is True and second["item"]["id"] != first_id, (a, b)

        other = c.call(
            "capture", {"url": "https://example.org/post?a=1&b=2", "intent": "learn WAL"}
        )
        assert other["created"] is True and other["item"]["sibling_of"] == item["id"]
        # The page's own HTML is new content (a fetch may have hit a bot wall):
        # a new item beside the first, and only an exact repeat of it is the same.
        with_html = {
            "url": "https://example.org/post?a=1&b=2",
            "html": PAGE.decode(),
            "intent": "Decide whether we adopt WAL",
        }
        sent = c.call("capture", with_html)
        assert sent["created"] is True and sent["item"]["sibling_of"] == item["id"]
        repeat = c.call("capture", with_html)
        assert repeat["created"] is False and repeat["item"]["id"] == sent["item"]["id"]
        different = c.call(
            "capture", {"url": "https://example.org/Post?a=1&b=2", "intent": "learn WAL"}
        )
        assert different["created"] is True and different["item"]["sibling_of"] is None
        assert c.call("get", {"id": item["id"]})["siblings"] == [
            other["item"]["id"],
            sent["item"]["id"],
        ]
        assert c.call("get", {"id": other["item"]["id"]})["siblings"] == [
            item["id"],
            sent["item"]["id"],
        ]

        # capture_id: the same content answers the same item, other content is refused.
        body = {"text": ARTICLE, "intent": "x", "capture_id": "c-1"}
        made = c.call("capture", body)["item"]["id"]
        assert c.call("capture", body) == {
            "item": c.call("get", {"id": made})["item"],
            "created": False,
        }
        code, error_code, _ = _refused(c, "capture", {**body, "intent": "y"})
        assert (code, error_code) == (409, "IDEMPOTENCY_CONFLICT")
        for bad in [{"priority": "P9"}, {"url": "ftp://example.org/x"}, {"url": "http://:80/"}]:
            params = {"intent": "x", "url": "https://example.org/a", **bad}
            assert _refused(c, "capture", params)[:2] == (422, "VALIDATION_ERROR"), bad

    shown = run_cli(d, "show", item["id"])
    assert shown.returncode == 0 and other["item"]["id"] in shown.stdout
    # Nothing will process it (auto_process is off): --wait says so at once.
    waited = run_cli(d, "capture", "--text", "-", "--intent", "w", "--wait", stdin=ARTICLE)
    assert waited.returncode == 1 and "auto_process is off" in waited.stderr
    assert "· CAPTURED ·" in waited.stdout
    assert d.stop() == 0


def test_capture_wait_prints_the_card_or_the_failure(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai={"engine": "fixed"}).start()
    ok = run_cli(d, "capture", "--text", "-", "--intent", "learn WAL", "--wait", stdin=ARTICLE)
    assert ok.returncode == 0, ok.stderr
    assert "Todos:" in ok.stdout and "[ ]" in ok.stdout
    bad = run_cli(d, "capture", "--html", "-", "--intent", "learn", "--wait", stdin=EMPTY_PAGE)
    assert bad.returncode == 1
    assert "FAILED at extract: EXTRACTION_EMPTY" in bad.stdout
    assert "Once the cause is fixed: `readdod process " in bad.stdout
    assert d.stop() == 0


# --- 3. regenerate, versions, user edits ----------------------------------------


def test_regenerate_keeps_versions_and_user_edits_win(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(daemons, tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 0}).start()
    with d.client() as c:
        item_id = c.call("capture", {"text": ARTICLE, "intent": "learn WAL"})["item"]["id"]
        _wait_item(d, item_id, "READY")
        first = c.call("get", {"id": item_id})
        run1 = first["item"]["current_run_id"]

        score = dict(first["artifacts"]["score"]["payload"])
        score.update(match_score=93, priority="P0")
        edited = c.call("edit", {"id": item_id, "type": "score", "payload": score})["artifact"]
        assert edited["created_by"] == "user" and edited["version"] == 2
        got = c.call("get", {"id": item_id})
        assert got["artifacts"]["score"]["version"] == 2
        assert got["item"]["match_score"] == 93 and got["item"]["priority"] == "P0"

        # A person's version is checked for structure (types, bounds, required fields);
        # the machine's rubric is not theirs to meet (test_person_edits_are_shown...).
        for bad_type, payload in [
            ("score", {**score, "match_score": 101}),
            ("score", {k: v for k, v in score.items() if k != "priority"}),
            ("todos", {"items": [{"title": "t", "kind": "chore", "estimate_min": 5}]}),
            ("todos", {"items": [{"title": " ", "kind": "read", "estimate_min": 5}]}),
            ("nonsense", {}),
        ]:
            code, error_code, _ = _refused(
                c, "edit", {"id": item_id, "type": bad_type, "payload": payload}
            )
            assert (code, error_code) == (422, "VALIDATION_ERROR"), payload
        assert _refused(c, "edit", {"id": "01NOPE", "type": "score", "payload": score})[:2] == (
            404,
            "NOT_FOUND",
        )

        # Regenerate, with a request id that makes a repeat harmless.
        req = {"id": item_id, "regenerate": True, "process_request_id": "r-1"}
        run2 = c.call("process", req)["run_id"]
        assert run2 != run1
        assert c.call("process", req)["run_id"] == run2
        _wait_item(d, item_id, "READY", count=2)
        # Seen again after the run finished: the first answer, and nothing queued.
        assert c.call("process", req)["run_id"] == run2
        assert _status(c, item_id) == "READY"
        other = c.call("capture", {"text": ARTICLE, "intent": "another"})["item"]["id"]
        code, error_code, _ = _refused(c, "process", {**req, "id": other})
        assert (code, error_code) == (409, "IDEMPOTENCY_CONFLICT")
        got = c.call("get", {"id": item_id, "versions": True})
        assert [r["run_id"] for r in got["runs"]] == [run1, run2]
        assert got["item"]["current_run_id"] == run2
        assert got["artifacts"]["summary"]["version"] == 2
        assert got["artifacts"]["summary"]["meta"]["run_id"] == run2
        # The regenerate made score v3, but the person's v2 is still what shows.
        assert got["artifacts"]["score"]["version"] == 2
        assert got["artifacts"]["score"]["created_by"] == "user"
        assert got["item"]["match_score"] == 93
        assert got["artifacts"]["extraction"]["version"] == 1  # reused, not refetched
        versions = {(v["artifact_type"], v["version"]): v for v in got["versions"]}
        assert versions[("score", 1)]["run_id"] == run1
        assert versions[("score", 2)]["created_by"] == "user" and versions[("score", 2)]["shown"]
        assert versions[("score", 3)]["run_id"] == run2 and not versions[("score", 3)]["shown"]
        old = c.call("artifact", {"id": item_id, "type": "summary", "version": 1})["artifact"]
        assert old["meta"]["run_id"] == run1

        run3 = c.call("process", {"id": item_id, "regenerate": True, "refetch": True})["run_id"]
        _wait_item(d, item_id, "READY", count=3)
        got = c.call("get", {"id": item_id})
        assert got["artifacts"]["extraction"]["version"] == 2
        assert got["artifacts"]["extraction"]["meta"]["run_id"] == run3

    shown = run_cli(d, "show", item_id, "--versions")
    assert shown.returncode == 0, shown.stderr
    assert "Edited by you: score" in shown.stdout
    assert f"run {run1}" in shown.stdout and "user" in shown.stdout

    # CLI edit: from a file, and in $EDITOR.
    card = got["artifacts"]["card"]["payload"]
    src = tmp_path / "card.json"
    src.write_text(json.dumps({**card, "one_liner": "My own words."}))
    out = run_cli(d, "edit", item_id, "card", "--file", str(src))
    assert out.returncode == 0, out.stderr
    editor = (
        f'{sys.executable} -c "import json,sys; p=sys.argv[1]; d=json.load(open(p));'
        " d['tl_dr']='Edited in the editor.'; json.dump(d, open(p, 'w'))\""
    )
    out = run_cli(d, "edit", item_id, "summary", env={"EDITOR": editor, "VISUAL": ""})
    assert out.returncode == 0, out.stderr
    bad = run_cli(d, "edit", item_id, "card", "--file", "-", stdin="{not json")
    assert bad.returncode == 1 and "not valid JSON" in bad.stderr
    got = d.call("get", {"id": item_id})
    assert got["artifacts"]["card"]["payload"]["one_liner"] == "My own words."
    assert got["artifacts"]["summary"]["payload"]["tl_dr"] == "Edited in the editor."
    assert got["artifacts"]["summary"]["created_by"] == "user"
    assert d.stop() == 0


# --- 4. archive semantics ------------------------------------------------------


def test_auto_skip_archives_low_scores_and_unarchive_brings_them_back(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    # The fixed engine scores every item 70.
    d = _daemon(daemons, tmp_path, ai={"engine": "fixed"}, daemon={"skip_below": 71}).start()
    with d.client() as c:
        item_id = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        _wait_item(d, item_id, "ARCHIVED")
        got = c.call("get", {"id": item_id, "history": True})
        assert got["item"]["archive_reason"] == "SYSTEM_SKIP"
        skip = got["events"][-1]
        assert (skip["from_status"], skip["to_status"], skip["trigger"]) == (
            "READY",
            "ARCHIVED",
            "system",
        )
        assert skip["detail"] == {"reason": "SYSTEM_SKIP", "match_score": 70, "skip_below": 71}
        back = c.call("unarchive", {"id": item_id})["item"]
        assert back["status"] == "READY" and back["archive_reason"] is None
        assert c.call("archive", {"id": item_id})["item"]["archive_reason"] == "USER_ARCHIVE"
        assert c.call("unarchive", {"id": item_id, "regenerate": True})["item"]["status"] == (
            "QUEUED"
        )
        assert _refused(c, "archive", {"id": item_id, "reason": "SYSTEM_SKIP"})[:2] == (
            422,
            "VALIDATION_ERROR",
        )
    # --wait shows the skipped card; it was made fine, so the exit code is 0.
    out = run_cli(d, "capture", "--text", "-", "--intent", "another", "--wait", stdin=ARTICLE)
    assert out.returncode == 0, out.stderr
    assert "Archived: SYSTEM_SKIP" in out.stdout and "Todos:" in out.stdout
    assert d.stop() == 0

    # skip_below = 0 turns it off.
    (tmp_path / "off").mkdir()
    d2 = _daemon(
        daemons, tmp_path / "off", ai={"engine": "fixed"}, daemon={"skip_below": 0}
    ).start()
    with d2.client() as c:
        item_id = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        _wait_item(d2, item_id, "READY")
        assert _status(c, item_id) == "READY"
    assert d2.stop() == 0


def test_archive_cancel_stops_a_running_item_and_it_writes_nothing_after(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = _daemon(
        daemons, tmp_path, ai={"engine": "fixed", "fixed_delay_ms": 600_000}, daemon={}
    ).start()
    with d.client() as c:
        item_id = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        _wait_item(d, item_id, "PROCESSING")
        code, error_code, data = _refused(c, "archive", {"id": item_id})
        assert (code, error_code, data["from"], data["to"]) == (
            409,
            "PROCESSING_IN_PROGRESS",
            "PROCESSING",
            "ARCHIVED",
        )
        out = run_cli(d, "archive", item_id, "--cancel")
        assert out.returncode == 0 and "ARCHIVED" in out.stdout, out.stderr
        # Logged once the actor has stopped.
        d.wait_log(lambda e: e["event"] == "actor.cancelled" and e["item_id"] == item_id)
        assert c.call("ping")["in_flight"] == 0
        got = c.call("get", {"id": item_id, "history": True})
        assert got["item"]["status"] == "ARCHIVED"
        assert got["item"]["archive_reason"] == "USER_ARCHIVE"
        moves = [
            (e["from_status"], e["to_status"], e["trigger"])
            for e in got["events"]
            if e["kind"] == "transition"
        ]
        assert moves[-2:] == [
            ("PROCESSING", "QUEUED", "system"),
            ("QUEUED", "ARCHIVED", "user"),
        ]
        assert got["runs"][0]["status"] == "cancelled"
        # The actor's extraction finished before the cancel; nothing came after it.
        last_seq = got["events"][-1]["seq"]
        assert set(got["artifacts"]) <= {"extraction"}
        # The actor has ended; the last event is still the archive.
        assert got["events"][-1]["to_status"] == "ARCHIVED"
        assert c.call("get", {"id": item_id, "history": True})["events"][-1]["seq"] == last_seq
        # With no complete run, unarchive queues the item again.
        assert c.call("unarchive", {"id": item_id})["item"]["status"] == "QUEUED"
    assert d.stop() == 0


# --- 5 and 6. retries across runs, the attempt ledger ---------------------------


def test_a_retryable_failure_is_retried_by_itself_and_the_ledger_shows_it(
    tmp_path: Path, daemons: list[DaemonProc], site: PageServer
) -> None:
    d = _daemon(
        daemons,
        tmp_path,
        ai={"engine": "fixed"},
        fetch=FETCH,
        **{"retry.network": {"attempts": 2, "delays_s": [0.2]}},
        daemon={"skip_below": 0},
    ).start()
    with d.client() as c:
        # An address with credentials in it: the failure quotes it without them.
        secret_url = site.base.replace("://", "://alice:s3cretpw@") + "/flaky?token=tok123&a=1"
        item_id = c.call("capture", {"url": secret_url, "intent": "learn WAL"})["item"]["id"]
        _wait_item(d, item_id, "FAILED_EXTRACTION")
        failed = c.call("get", {"id": item_id, "history": True})
        shown_failure = json.dumps([failed["item"]["failure"], failed["runs"], failed["events"]])
        assert "s3cretpw" not in shown_failure and "tok123" not in shown_failure
        assert "[redacted]@" in failed["item"]["failure"]["message"]
        assert "token=[redacted]&a=1" in failed["item"]["failure"]["message"]
        d.wait_log(lambda e: e["event"] == "retry.scheduled" and e["item_id"] == item_id)
        _wait_item(d, item_id, "READY")
        got = c.call("get", {"id": item_id, "history": True})
        requeue = next(e for e in got["events"] if e["detail"].get("op") == "auto_retry")
        assert (requeue["from_status"], requeue["to_status"], requeue["trigger"]) == (
            "FAILED_EXTRACTION",
            "QUEUED",
            "system",
        )
        [run] = got["runs"]
        assert run["status"] == "succeeded" and run["attempts"] == 2
        assert run["steps_done"] == ["extraction", "summary", "score", "todos", "card"]
        [failure] = run["failures"]
        assert failure["step"] == "extraction"
        assert failure["error_code"] == "EXTRACTION_FETCH_FAILED" and "503" in failure["message"]
    shown = run_cli(d, "show", item_id)
    assert "attempts=2" in shown.stdout and "EXTRACTION_FETCH_FAILED" in shown.stdout
    failed_lines = [line for line in shown.stdout.splitlines() if "failed at" in line]
    assert failed_lines and all(
        "token=[redacted]" in line and "tok123" not in line for line in failed_lines
    )
    assert d.stop() == 0


def test_retry_failed_through_the_cli(tmp_path: Path, daemons: list[DaemonProc]) -> None:
    d = _daemon(daemons, tmp_path, ai={"engine": "fixed"}).start()
    with d.client() as c:
        ids = [
            c.call("capture", {"html": EMPTY_PAGE, "intent": f"i{n}"})["item"]["id"] for n in (1, 2)
        ]
        ready = c.call("capture", {"text": ARTICLE, "intent": "x"})["item"]["id"]
        for i in ids:
            _wait_item(d, i, "FAILED_EXTRACTION")
        _wait_item(d, ready, "READY")
        failure = c.call("get", {"id": ids[0]})["item"]["failure"]
        assert failure["retryable"] is False and "next_attempt_at" not in failure
        assert _refused(c, "retry_failed", {"step": "nope"})[:2] == (422, "VALIDATION_ERROR")
    dry = run_cli(d, "retry-failed", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert sorted(json.loads(dry.stdout)["requeued"]) == sorted(ids)
    assert d.call("get", {"id": ids[0]})["item"]["status"] == "FAILED_EXTRACTION"
    assert (
        json.loads(run_cli(d, "retry-failed", "--step", "summary", "--json").stdout)["count"] == 0
    )
    out = run_cli(d, "retry-failed", "--step", "extraction")
    assert out.returncode == 0 and "queued 2 failed item(s)" in out.stdout
    d.wait_status("FAILED_EXTRACTION", count=4)
    assert d.call("get", {"id": ready})["item"]["status"] == "READY"
    assert d.stop() == 0


# --- every operation in every state --------------------------------------------

STATES = [
    "CAPTURED",
    "QUEUED",
    "PROCESSING",
    "READY",
    "FAILED_EXTRACTION",
    "FAILED_AI",
    "FAILED_EXPORT",
    "SHIPPED",
    "ARCHIVED",
]

#: (operation, state) -> expected refusal (rpc code, error code, to). The
#: operations' allowed cells are exercised after the refusals.
REFUSED: dict[tuple[str, str], tuple[int, str, str]] = {
    ("process", "QUEUED"): (409, "INVALID_TRANSITION", "QUEUED"),
    ("process", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "QUEUED"),
    ("process", "READY"): (409, "INVALID_TRANSITION", "QUEUED"),
    ("process", "SHIPPED"): (409, "INVALID_TRANSITION", "QUEUED"),
    ("regenerate", "QUEUED"): (409, "INVALID_TRANSITION", "QUEUED"),
    ("regenerate", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "QUEUED"),
    ("regenerate", "SHIPPED"): (409, "INVALID_TRANSITION", "QUEUED"),
    ("edit", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "PROCESSING"),
    ("archive", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "ARCHIVED"),
    ("archive", "ARCHIVED"): (409, "INVALID_TRANSITION", "ARCHIVED"),
    ("archive_cancel", "ARCHIVED"): (409, "INVALID_TRANSITION", "ARCHIVED"),
    ("unarchive", "CAPTURED"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "QUEUED"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "READY"),
    ("unarchive", "READY"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "FAILED_EXTRACTION"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "FAILED_AI"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "FAILED_EXPORT"): (409, "INVALID_TRANSITION", "READY"),
    ("unarchive", "SHIPPED"): (409, "INVALID_TRANSITION", "READY"),
    ("ship", "CAPTURED"): (409, "INVALID_TRANSITION", "SHIPPED"),
    ("ship", "QUEUED"): (409, "INVALID_TRANSITION", "SHIPPED"),
    ("ship", "PROCESSING"): (409, "PROCESSING_IN_PROGRESS", "SHIPPED"),
    ("ship", "FAILED_EXTRACTION"): (409, "INVALID_TRANSITION", "SHIPPED"),
    ("ship", "FAILED_AI"): (409, "INVALID_TRANSITION", "SHIPPED"),
    ("ship", "ARCHIVED"): (409, "INVALID_TRANSITION", "SHIPPED"),
}
#: Edits of an artifact the item does not have yet.
EDIT_MISSING = {"CAPTURED", "QUEUED", "FAILED_EXTRACTION"}

#: (operation, state, status after). Each cell that moves the item gets an item of its own.
ALLOWED: list[tuple[str, str, str]] = [
    ("process", "CAPTURED", "QUEUED"),
    ("regenerate", "CAPTURED", "QUEUED"),
    ("archive", "CAPTURED", "ARCHIVED"),
    ("archive_cancel", "CAPTURED", "ARCHIVED"),
    ("archive", "QUEUED", "ARCHIVED"),
    ("archive_cancel", "QUEUED", "ARCHIVED"),
    ("edit", "READY", "READY"),
    ("regenerate", "READY", "QUEUED"),
    ("ship", "READY", "SHIPPED"),
    ("archive", "READY", "ARCHIVED"),
    ("archive_cancel", "READY", "ARCHIVED"),
    ("process", "FAILED_EXTRACTION", "QUEUED"),
    ("regenerate", "FAILED_EXTRACTION", "QUEUED"),
    ("archive", "FAILED_EXTRACTION", "ARCHIVED"),
    ("archive_cancel", "FAILED_EXTRACTION", "ARCHIVED"),
    ("edit", "FAILED_AI", "FAILED_AI"),
    ("process", "FAILED_AI", "QUEUED"),
    ("regenerate", "FAILED_AI", "QUEUED"),
    ("archive", "FAILED_AI", "ARCHIVED"),
    ("archive_cancel", "FAILED_AI", "ARCHIVED"),
    ("edit", "FAILED_EXPORT", "FAILED_EXPORT"),
    ("process", "FAILED_EXPORT", "QUEUED"),
    ("regenerate", "FAILED_EXPORT", "QUEUED"),
    ("ship", "FAILED_EXPORT", "SHIPPED"),
    ("archive", "FAILED_EXPORT", "ARCHIVED"),
    ("archive_cancel", "FAILED_EXPORT", "ARCHIVED"),
    ("edit", "SHIPPED", "SHIPPED"),
    ("ship", "SHIPPED", "SHIPPED"),
    ("archive", "SHIPPED", "ARCHIVED"),
    ("archive_cancel", "SHIPPED", "ARCHIVED"),
    ("edit", "ARCHIVED", "ARCHIVED"),
    ("process", "ARCHIVED", "QUEUED"),
    ("regenerate", "ARCHIVED", "QUEUED"),
    ("unarchive", "ARCHIVED", "READY"),
    # Last: it frees the only slot, and queued items start to run.
    ("archive_cancel", "PROCESSING", "ARCHIVED"),
]


def _call(c: Client, op: str, item_id: str, payload: Any = None) -> Any:
    if op == "regenerate":
        return c.call("process", {"id": item_id, "regenerate": True})
    if op == "archive_cancel":
        return c.call("archive", {"id": item_id, "cancel": True})
    if op == "edit":
        return c.call("edit", {"id": item_id, "type": "extraction", "payload": payload})
    return c.call(op, {"id": item_id})


def test_every_operation_in_every_state(
    tmp_path: Path, daemons: list[DaemonProc], site: PageServer
) -> None:
    # concurrency 1: the item held at /hang keeps the only slot, so queued items stay QUEUED.
    sections: dict[str, dict[str, Any]] = {
        "ai": {"engine": "fixed"},
        "daemon": {"auto_process": False, "concurrency": 1, "max_orphanings": 1, "skip_below": 0},
        "fetch": FETCH,
    }
    d = _daemon(daemons, tmp_path, **sections)
    moving = [(op, state) for op, state, dst in ALLOWED if op != "edit" and state != dst]
    need = {state: 1 + sum(1 for _, st in moving if st == state) for state in STATES}
    # FAILED_AI: the worker dies in the summary step; with max_orphanings = 1,
    # the next start fails the item with WORKER_LOST at that step. One item
    # per crash; the item the refusals use also takes the last allowed cell.
    failed_ai: list[str] = []
    for n in range(need["FAILED_AI"] - 1):
        d.start(env={"READDOD_CRASH_AT": "step:summary"})
        with d.client() as c:
            failed_ai.append(
                c.call("capture", {"text": ARTICLE, "intent": f"ai {n}"})["item"]["id"]
            )
            c.call("process", {"id": failed_ai[-1]})
        assert d.proc is not None and d.proc.wait(timeout=60) != 0
    d.start()
    with d.client() as c:
        for item_id in failed_ai:
            failure = c.call("get", {"id": item_id})["item"]["failure"]
            assert (failure["failed_step"], failure["error_code"]) == ("summarize", "WORKER_LOST")
        counter = iter(range(1000))

        def make(**src: str) -> str:
            params = {"intent": f"item {next(counter)}", **(src or {"text": ARTICLE})}
            return str(c.call("capture", params)["item"]["id"])

        pool: dict[str, list[str]] = {"FAILED_AI": failed_ai}
        pool["CAPTURED"] = [make() for _ in range(need["CAPTURED"])]
        for state in ("READY", "SHIPPED", "ARCHIVED", "FAILED_EXPORT"):
            pool[state] = [make() for _ in range(need[state])]
        pool["FAILED_EXTRACTION"] = [
            make(html=EMPTY_PAGE) for _ in range(need["FAILED_EXTRACTION"])
        ]
        for state in ("READY", "SHIPPED", "ARCHIVED", "FAILED_EXPORT", "FAILED_EXTRACTION"):
            for item_id in pool[state]:
                c.call("process", {"id": item_id})
        for item_id in pool["FAILED_EXTRACTION"]:
            _wait_item(d, item_id, "FAILED_EXTRACTION")
        for state in ("READY", "SHIPPED", "ARCHIVED", "FAILED_EXPORT"):
            for item_id in pool[state]:
                _wait_item(d, item_id, "READY")
        blocked = tmp_path / "a-file"
        blocked.write_text("not a folder")
        for item_id in pool["SHIPPED"]:
            c.call("ship", {"id": item_id})
        for item_id in pool["ARCHIVED"]:
            c.call("archive", {"id": item_id})
        for item_id in pool["FAILED_EXPORT"]:
            with pytest.raises(RpcError) as exc:
                c.call("export", {"id": item_id, "out_dir": str(blocked / "cards")})
            assert exc.value.data["error_code"] == "EXPORT_WRITE_FAILED"
        hang = {"url": f"{site.base}/hang", "intent": "hold the slot"}
        pool["PROCESSING"] = [c.call("capture", hang)["item"]["id"]]
        c.call("process", {"id": pool["PROCESSING"][0]})
        _wait_item(d, pool["PROCESSING"][0], "PROCESSING")
        pool["QUEUED"] = [make() for _ in range(need["QUEUED"])]
        for item_id in pool["QUEUED"]:
            c.call("process", {"id": item_id})
        for state in STATES:
            assert {_status(c, i) for i in pool[state]} == {state}, state
        items = {state: ids[0] for state, ids in pool.items()}

        # capture: the same page and intent is the existing item, whatever its state.
        again = c.call("capture", {"url": f"{site.base}/hang#top", "intent": " Hold the  SLOT"})
        assert again["created"] is False and again["item"]["id"] == items["PROCESSING"]

        extraction = c.call("get", {"id": items["READY"]})["artifacts"]["extraction"]["payload"]
        for (op, state), (rpc, error_code, dst) in REFUSED.items():
            with pytest.raises(RpcError) as exc:
                _call(c, op, items[state], extraction)
            got = (exc.value.rpc_code, exc.value.error_code, exc.value.data)
            assert got[:2] == (rpc, error_code) and got[2]["from"] == state, (op, state)
            assert got[2]["to"] == dst and got[2]["status"] == rpc, (op, state)
            assert _status(c, items[state]) == state, (op, state)
        # The refusals people meet most say what to do instead.
        for state, advice in [
            ("SHIPPED", f"`readdod archive {items['SHIPPED']}`"),
            ("QUEUED", "already QUEUED"),
            ("READY", "use regenerate"),
        ]:
            with pytest.raises(RpcError) as exc:
                _call(c, "process", items[state])
            assert advice in exc.value.message, state
        for state in EDIT_MISSING:
            with pytest.raises(RpcError) as exc:
                _call(c, "edit", items[state], extraction)
            assert (exc.value.rpc_code, exc.value.error_code) == (404, "NOT_FOUND"), state

        # retry_failed takes exactly the FAILED_EXTRACTION and FAILED_AI items.
        dry = c.call("retry_failed", {"dry_run": True})
        assert sorted(dry["requeued"]) == sorted([*pool["FAILED_EXTRACTION"], *failed_ai])

        # The allowed cells, each on an item of its own when it moves the item.
        spare = {state: list(ids[1:]) for state, ids in pool.items()}
        moved: dict[tuple[str, str], str] = {}
        for op, state, dst in ALLOWED:
            if op == "edit" or state == dst or not spare[state]:
                # The last FAILED_AI cell, and the one PROCESSING item.
                item_id = items[state]
            else:
                item_id = spare[state].pop()
            moved[(op, state)] = item_id
            answer = _call(c, op, item_id, extraction)
            if op == "edit":
                assert answer["artifact"]["created_by"] == "user", state
            else:
                assert answer["item"]["status"] == dst, (op, state)
            if (op, state) != ("archive_cancel", "PROCESSING"):
                assert _status(c, item_id) == dst, (op, state)
        assert all(not left for left in spare.values())
        reason = c.call("get", {"id": moved[("archive", "FAILED_EXTRACTION")]})["item"]
        assert reason["archive_reason"] == "FAILURE_ARCHIVE"
        # An archived item that never ran is queued again by unarchive.
        never_ran = moved[("archive", "CAPTURED")]
        assert _call(c, "unarchive", never_ran)["item"]["status"] == "QUEUED"
    assert d.stop() == 0
