"""The transition table, checked pair by pair against DESIGN §3."""

from __future__ import annotations

import itertools

import pytest

from readdod.items import states
from readdod.items.states import Status, Trigger

# DESIGN §3, copied as text so a change to states.py must be made on purpose.
DESIGN_TABLE = """
CAPTURED          QUEUED            system,user
CAPTURED          ARCHIVED          user
QUEUED            PROCESSING        system
QUEUED            ARCHIVED          user
PROCESSING        READY             system
PROCESSING        FAILED_EXTRACTION system
PROCESSING        FAILED_AI         system
PROCESSING        QUEUED            system
READY             SHIPPED           system,user
READY             FAILED_EXPORT     system
READY             ARCHIVED          system,user
READY             QUEUED            user
FAILED_EXTRACTION QUEUED            system,user
FAILED_AI         QUEUED            system,user
FAILED_EXTRACTION ARCHIVED          user
FAILED_AI         ARCHIVED          user
FAILED_EXPORT     SHIPPED           system,user
FAILED_EXPORT     FAILED_EXPORT     system,user
FAILED_EXPORT     QUEUED            user
FAILED_EXPORT     ARCHIVED          user
SHIPPED           SHIPPED           system,user
SHIPPED           ARCHIVED          user
ARCHIVED          READY             user
ARCHIVED          QUEUED            user
"""


def _expected() -> dict[tuple[Status, Status], set[Trigger]]:
    table: dict[tuple[Status, Status], set[Trigger]] = {}
    for line in DESIGN_TABLE.strip().splitlines():
        src, dst, who = line.split()
        table[(Status(src), Status(dst))] = {Trigger(w) for w in who.split(",")}
    return table


EXPECTED = _expected()
PAIRS = list(itertools.product(Status, Status, Trigger))


@pytest.mark.parametrize(("src", "dst", "trigger"), PAIRS)
def test_every_pair(src: Status, dst: Status, trigger: Trigger) -> None:
    want = trigger in EXPECTED.get((src, dst), set())
    assert states.allowed(src, dst, trigger) is want


def test_table_has_no_extra_entries() -> None:
    assert set(states.TRANSITIONS) == set(EXPECTED)


def test_refusal_codes() -> None:
    assert states.refusal_code(Status.PROCESSING) == "PROCESSING_IN_PROGRESS"
    for s in Status:
        if s is not Status.PROCESSING:
            assert states.refusal_code(s) == "INVALID_TRANSITION"


def test_pair_count() -> None:
    assert len(PAIRS) == 9 * 9 * 2
    assert sum(states.allowed(*p) for p in PAIRS) == sum(len(v) for v in EXPECTED.values())
