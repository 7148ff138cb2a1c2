"""What a commit's notes become on the wire between daemons (pure: no daemon, no store)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from readdod.fleet.notices import FIELD_MAX_CHARS, pack, unpack
from readdod.status.roster import members
from readdod.store.rows import DaemonRow

LIMIT = 7900

fields = st.dictionaries(
    st.sampled_from(["item_id", "run_id", "to", "from", "message", "step", "n"]),
    st.one_of(st.text(max_size=3000), st.integers(), st.none(), st.booleans()),
    max_size=6,
)
notes = st.lists(st.tuples(st.sampled_from(["item.transition", "step.finished"]), fields))


@given(notes, st.text(min_size=1, max_size=40))
def test_notices_keep_every_note_in_order_within_the_limit(
    batch: list[tuple[str, dict[str, Any]]], origin: str
) -> None:
    payloads = pack(origin, batch, LIMIT)
    assert all(len(p.encode()) <= LIMIT for p in payloads)
    decoded = [unpack(p) for p in payloads]
    assert all(n is not None and n.origin == origin for n in decoded)
    got = [note for n in decoded if n is not None for note in n.notes]
    assert [event for event, _ in got] == [event for event, _ in batch]
    for (_, sent), (_, came) in zip(batch, got, strict=True):
        if "truncated" not in came:
            assert came == sent


def test_a_note_too_big_for_a_notice_loses_its_long_strings_first_then_all_but_its_core() -> None:
    long = "é" * 9000
    (payload,) = pack("d1", [("item.transition", {"item_id": "x", "message": long})], LIMIT)
    notice = unpack(payload)
    assert notice is not None
    ((_, fields),) = notice.notes
    assert fields["item_id"] == "x" and fields["truncated"] is True
    assert fields["message"] == "é" * FIELD_MAX_CHARS + "…"

    many = {f"k{i}": "y" * 400 for i in range(40)}
    (payload,) = pack("d1", [("step.finished", {"item_id": "x", "step": "card", **many})], LIMIT)
    notice = unpack(payload)
    assert notice is not None
    assert notice.notes == [("step.finished", {"item_id": "x", "step": "card", "truncated": True})]


def test_anything_else_on_the_channel_is_not_a_notice() -> None:
    for payload in ("", "hello", "[1, 2]", '{"origin": "x"}', '["x", [["e"]]]'):
        assert unpack(payload) is None


def test_a_daemon_is_alive_while_it_beat_within_three_intervals() -> None:
    def row(daemon_id: str, beat: int) -> DaemonRow:
        return DaemonRow(
            daemon_id=daemon_id, host="h", pid=1, version="v", started_at=0, heartbeat_at=beat
        )

    shown = members(
        [row("fresh", 9_000), row("edge", 7_000), row("gone", 6_999)],
        now_ms=10_000,
        beat_ms=1_000,
        me="edge",
    )
    assert [(m.daemon_id, m.alive, m.this, m.silent_s) for m in shown] == [
        ("fresh", True, False, 1.0),
        ("edge", True, True, 3.0),
        ("gone", False, False, 3.001),
    ]
