"""The offline engine through the real daemon: the capture time reaches the todos, and
an item without evidence either way is kept while one clearly about other things is not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readdod.evaluation.runner import load_pairs
from tests.daemon_proc import DaemonProc

HOW_TO = """Repotting a fiddle-leaf fig

A fiddle-leaf fig outgrows its pot every two years or so. Roots circling the bottom of the \
pot are the sign.

1. Water the plant the day before, so the root ball holds together.
2. Choose a pot no more than five centimetres wider than the old one.
3. Loosen the circling roots gently with your fingers.
4. Keep the plant out of direct sun for a week after repotting.

The garden centre on Mill Road holds its spring plant fair on 4 May 2099, with a repotting \
corner. Its first fair was held on 6 May 2001.
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_path)  # the default config: the local engine, skip_below = 40
    d.start()
    yield d
    d.close()


def _final(d: DaemonProc, item_id: str, status: str) -> dict[str, Any]:
    d.wait_log(
        lambda e: (
            e["event"] == "item.transition" and e.get("item_id") == item_id and e["to"] == status
        )
    )
    got: dict[str, Any] = d.call("get", {"id": item_id})
    assert got["item"]["status"] == status
    return got


def test_todos_quote_the_texts_steps_and_only_coming_dates(daemon: DaemonProc) -> None:
    item = daemon.call("capture", {"text": HOW_TO, "intent": "repot my fig tree"})["item"]
    got = _final(daemon, item["id"], "READY")
    titles = [t["title"] for t in got["artifacts"]["todos"]["payload"]["items"]]
    assert "Water the plant the day before, so the root ball holds together." in titles
    assert "Loosen the circling roots gently with your fingers." in titles
    calendar = [t for t in titles if "calendar" in t]
    assert len(calendar) == 1 and "4 May 2099" in calendar[0] and "2001" not in calendar[0]


def test_no_evidence_is_kept_and_evidence_of_another_topic_is_skipped(
    daemon: DaemonProc,
) -> None:
    short = (
        "Rehearse out loud three times with a timer. Look at three friendly faces and speak "
        "to them in turn. End with a clear request rather than a list of questions."
    )
    kept = daemon.call("capture", {"text": short, "intent": "give a better conference pitch"})
    got = _final(daemon, kept["item"]["id"], "READY")
    assert got["item"]["match_score"] == 40
    assert "found no words this text shares" in got["artifacts"]["card"]["payload"]["summary"]

    text = next(p.text for p in load_pairs() if p.case.id == "public-speaking-en")
    other = daemon.call("capture", {"text": text, "intent": "choose a mortgage with a low rate"})
    skipped = _final(daemon, other["item"]["id"], "ARCHIVED")
    assert skipped["item"]["archive_reason"] == "SYSTEM_SKIP"
    reasons = skipped["artifacts"]["score"]["payload"]["reasons"]
    assert reasons[0].startswith("No shared meaning found")
