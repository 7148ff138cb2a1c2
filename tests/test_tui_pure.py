"""The TUI's pure parts: which keys an item offers, the search line, rows, progress, forms."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from readdod.cli.exits import EXIT_ERROR
from readdod.items.states import FAILED, TRANSITIONS, Status, Trigger
from readdod.tui import filters, keys, operations, rows
from readdod.tui.capture import FormError, capture_params
from readdod.tui.progress import TOTAL_STEPS, Progress, bar, from_get

S = Status


def test_every_user_transition_has_a_key() -> None:
    assert operations.uncovered_user_moves() == []


def test_keys_are_unique_and_named_in_the_key_map() -> None:
    taken = [op.key for op in operations.OPERATIONS]
    taken += [k for k, _, _ in keys.GENERAL if len(k) == 1]
    assert len(taken) == len(set(taken))
    text = "\n".join(keys.lines())
    for op in operations.OPERATIONS:
        assert f"{op.key:<10} {op.label}" in text


@pytest.mark.parametrize("status", list(Status))
def test_an_offered_operation_asks_for_a_move_the_table_allows(status: Status) -> None:
    """Read the other way round: nothing is offered that the table would refuse."""
    for op in operations.offered(status, has_card=True):
        moves = op.moves(status)
        if op.name == "cancel":
            assert status is S.PROCESSING
            continue
        if op.name == "edit":
            assert status is S.READY
            continue
        assert moves and any(Trigger.USER in TRANSITIONS.get(m, frozenset()) for m in moves)


def test_a_processing_item_offers_only_to_cancel_it() -> None:
    assert [op.name for op in operations.offered(S.PROCESSING, has_card=True)] == ["cancel"]


def test_failed_items_offer_retry_and_never_regenerate() -> None:
    for status in FAILED:
        names = {op.name for op in operations.offered(status, has_card=False)}
        assert "retry" in names and "regenerate" not in names and "archive" in names


def test_edit_needs_a_card() -> None:
    assert operations.is_offered("edit", S.READY, has_card=True)
    assert not operations.is_offered("edit", S.READY, has_card=False)


def test_requests_carry_the_id_and_the_right_method() -> None:
    assert operations.request("regenerate", S.ARCHIVED, "X") == (
        "unarchive",
        {"id": "X", "regenerate": True},
    )
    assert operations.request("regenerate", S.READY, "X") == (
        "process",
        {"id": "X", "regenerate": True},
    )
    assert operations.request("cancel", S.PROCESSING, "X") == (
        "archive",
        {"id": "X", "cancel": True},
    )
    assert operations.request("edit", S.READY, "X") is None


def test_search_line() -> None:
    f = filters.parse("spaced  #study P1 is:ready repetition")
    assert f.params() == {
        "status": ["READY"],
        "query": "spaced repetition",
        "tags": ["study"],
        "priority": "P1",
    }
    assert filters.parse("", "failed").params() == {"status": sorted(s.value for s in FAILED)}
    with pytest.raises(filters.FilterError, match="is:ready"):
        filters.parse("is:nonsense")


def test_the_filter_key_cycles_through_every_group() -> None:
    f = filters.Filter()
    seen = []
    for _ in filters.GROUPS:
        seen.append(f.group)
        f = f.next_group()
    assert seen == list(filters.GROUPS) and f.group == "all"


def _item(status: str, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "01ABC",
        "status": status,
        "priority": "P1",
        "match_score": 72,
        "intent": "learn",
        "title": "A page",
        "url": "https://example.org/a",
        "created_at": "2026-01-01T00:00:00.000Z",
        "failure": None,
        "tags": [],
    }
    return base | extra


def test_processing_and_retrying_are_both_active() -> None:
    assert rows.status_word(_item("PROCESSING")) == "active"
    waiting = {"next_attempt_at": "2026-01-01T00:01:00.000Z", "auto_retries": 1}
    assert rows.status_word(_item("FAILED_AI", failure=waiting)) == "active"
    assert rows.status_word(_item("FAILED_AI", failure={"next_attempt_at": None})) == "failed"
    assert rows.status_word(_item("READY")) == "ready"


def test_ages() -> None:
    t0 = rows.parse_ms("2026-01-01T00:00:00.000Z")
    assert rows.age("2026-01-01T00:00:00.000Z", t0 + 59_000) == "<1m"
    assert rows.age("2026-01-01T00:00:00.000Z", t0 + 61_000) == "1m"
    assert rows.age("2026-01-01T00:00:00.000Z", t0 + 3 * 86_400_000) == "3d"


def test_progress_from_events_and_the_bar() -> None:
    p = Progress()
    assert p.apply("step.started", {"step": "extraction"})
    assert p.apply("step.finished", {"step": "extraction"})
    assert p.apply("step.started", {"step": "summary"})
    assert p.apply("chunk.progress", {"step": "summary", "done": 3, "total": 12})
    assert not p.apply("item.transition", {"to": "READY"})
    assert p.done == 1 and p.chunks == (3, 12)
    text = rows.progress_text(_item("PROCESSING"), p)
    assert text.endswith(f"1/{TOTAL_STEPS} 3/12")
    assert bar(0.5, 4) == "▰▰▱▱"


def test_progress_from_a_get_answer() -> None:
    got = {
        "item": {"current_run_id": "R2"},
        "runs": [
            {"run_id": "R1", "steps_done": ["extraction", "summary", "score"]},
            {"run_id": "R2", "steps_done": ["extraction"], "current_step": "summary"},
        ],
        "chunks": {"summary": {"done": 2, "total": 5}},
    }
    p = from_get(got)
    assert p.done == 1 and p.step == "summary" and p.chunks == (2, 5)


def test_capture_form() -> None:
    assert capture_params(" https://example.org/x ", "learn", "#a, b") == {
        "intent": "learn",
        "url": "https://example.org/x",
        "tags": ["a", "b"],
    }
    assert capture_params("some words to keep", "why", "") == {
        "intent": "why",
        "text": "some words to keep",
    }
    with pytest.raises(FormError, match="intent"):
        capture_params("https://example.org", "  ", "")
    with pytest.raises(FormError, match="URL or"):
        capture_params("", "why", "")


def test_without_textual_the_verb_says_what_to_install(tmp_path: Path) -> None:
    probe = (
        "import sys; sys.modules['textual'] = None\n"
        "from readdod.cli import main\n"
        f"sys.exit(main(['tui', '--socket', {str(tmp_path / 'none.sock')!r}]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, env=env
    )
    assert out.returncode == EXIT_ERROR, out
    assert "pip install 'readdod[tui]'" in out.stderr and "textual" in out.stderr
