"""What a person may do with an item from the TUI, read off the transition table.

Pure. Every key the TUI offers on an item is one :class:`Operation`; whether it
is offered is decided from :data:`readdod.items.states.TRANSITIONS`, so a change to
the state machine changes the keys, and a test holds every user transition to
having a key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from readdod.items.states import FAILED, TRANSITIONS, Status, Trigger, allowed

S = Status


def _user(src: Status, dst: Status) -> bool:
    return allowed(src, dst, Trigger.USER)


@dataclass(frozen=True)
class Operation:
    """One key on an item: the method it asks the daemon, with which params."""

    name: str
    key: str
    label: str
    #: Whether an item offers it: (its status, whether it has a card) -> bool.
    offered: Callable[[Status, bool], bool] = field(repr=False)
    #: The wire method and its extra params, by the item's state (None: a local action).
    request: Callable[[Status], tuple[str, dict[str, Any]] | None] = field(repr=False)
    #: The user transitions this operation makes happen, for the coverage check.
    moves: Callable[[Status], tuple[tuple[Status, Status], ...]] = field(repr=False)


def _fixed(method: str, **params: Any) -> Callable[[Status], tuple[str, dict[str, Any]]]:
    return lambda _src: (method, dict(params))


def _cancel_offered(src: Status, _card: bool) -> bool:
    """A PROCESSING item can be stopped: the system puts it back in the queue, then archives."""
    return (
        src is S.PROCESSING
        and allowed(S.PROCESSING, S.QUEUED, Trigger.SYSTEM)
        and _user(S.QUEUED, S.ARCHIVED)
    )


def _regenerate_offered(src: Status, _card: bool) -> bool:
    """New versions of a settled card: a READY item is queued again, an archived one too."""
    return src not in FAILED and src is not S.CAPTURED and _user(src, S.QUEUED)


def _regenerate_request(src: Status) -> tuple[str, dict[str, Any]]:
    if src is S.ARCHIVED:
        return ("unarchive", {"regenerate": True})
    return ("process", {"regenerate": True})


def _retry_offered(src: Status, _card: bool) -> bool:
    """A failed (or never queued) item is queued again from where it stopped."""
    return (src in FAILED or src is S.CAPTURED) and _user(src, S.QUEUED)


OPERATIONS: Final[tuple[Operation, ...]] = (
    Operation(
        "retry",
        "r",
        "retry",
        _retry_offered,
        _fixed("process"),
        lambda src: ((src, S.QUEUED),),
    ),
    Operation(
        "export",
        "e",
        "export",
        lambda src, _card: _user(src, S.SHIPPED),
        _fixed("export"),
        lambda src: ((src, S.SHIPPED), (src, S.FAILED_EXPORT)),
    ),
    Operation(
        "ship",
        "s",
        "ship",
        # Shipping a SHIPPED item again would change nothing; exporting it again would.
        lambda src, _card: _user(src, S.SHIPPED) and src is not S.SHIPPED,
        _fixed("ship"),
        lambda src: ((src, S.SHIPPED),),
    ),
    Operation(
        "edit",
        "E",
        "edit card",
        lambda src, card: src is S.READY and card,
        lambda _src: None,
        lambda _src: (),
    ),
    Operation(
        "regenerate",
        "g",
        "regenerate",
        _regenerate_offered,
        _regenerate_request,
        lambda src: ((src, S.QUEUED),),
    ),
    Operation(
        "unarchive",
        "u",
        "unarchive",
        lambda src, _card: _user(src, S.READY),
        _fixed("unarchive"),
        lambda src: ((src, S.READY),),
    ),
    Operation(
        "archive",
        "a",
        "archive",
        lambda src, _card: _user(src, S.ARCHIVED),
        _fixed("archive"),
        lambda src: ((src, S.ARCHIVED),),
    ),
    Operation(
        "cancel",
        "C",
        "cancel+archive",
        _cancel_offered,
        _fixed("archive", cancel=True),
        lambda _src: (),
    ),
)

BY_NAME: Final[Mapping[str, Operation]] = {op.name: op for op in OPERATIONS}


def offered(status: str, *, has_card: bool) -> list[Operation]:
    """The operations an item in ``status`` offers, in the order the keys are shown."""
    src = Status(status)
    return [op for op in OPERATIONS if op.offered(src, has_card)]


def is_offered(name: str, status: str, *, has_card: bool) -> bool:
    op = BY_NAME.get(name)
    return op is not None and op.offered(Status(status), has_card)


def request(name: str, status: str, item_id: str) -> tuple[str, dict[str, Any]] | None:
    """The method and params that carry out ``name`` on an item (None: done here, locally)."""
    req = BY_NAME[name].request(Status(status))
    if req is None:
        return None
    method, params = req
    return method, {"id": item_id, **params}


def uncovered_user_moves() -> list[tuple[Status, Status]]:
    """User transitions no operation makes happen (a new one in the table needs a key)."""
    covered = {
        move
        for op in OPERATIONS
        for src in Status
        if op.offered(src, True)
        for move in op.moves(src)
    }
    return sorted(
        (
            move
            for move, triggers in TRANSITIONS.items()
            if Trigger.USER in triggers and move not in covered and move[0] != move[1]
        ),
        key=str,
    )
