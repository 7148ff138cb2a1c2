"""The item state machine (DESIGN §3), as data.

Pure: no I/O. The core's unit of work (:mod:`readdod.core.unit`) consults
this table before every status change; anything not in :data:`TRANSITIONS`
is refused.
"""

from __future__ import annotations

import enum
from typing import Final

from readdod.errors import IllegalTransition


class Status(enum.StrEnum):
    CAPTURED = "CAPTURED"
    QUEUED = "QUEUED"
    PROCESSING = "PROCESSING"
    READY = "READY"
    FAILED_EXTRACTION = "FAILED_EXTRACTION"
    FAILED_AI = "FAILED_AI"
    FAILED_EXPORT = "FAILED_EXPORT"
    SHIPPED = "SHIPPED"
    ARCHIVED = "ARCHIVED"


class Trigger(enum.StrEnum):
    SYSTEM = "system"
    USER = "user"


S = Status
_SYS: Final = frozenset({Trigger.SYSTEM})
_USER: Final = frozenset({Trigger.USER})
_BOTH: Final = frozenset({Trigger.SYSTEM, Trigger.USER})

#: (from, to) -> who may cause it. The reconciled union of seed 000 §3 and §4.
TRANSITIONS: Final[dict[tuple[Status, Status], frozenset[Trigger]]] = {
    (S.CAPTURED, S.QUEUED): _BOTH,
    (S.CAPTURED, S.ARCHIVED): _USER,
    (S.QUEUED, S.PROCESSING): _SYS,
    (S.QUEUED, S.ARCHIVED): _USER,
    (S.PROCESSING, S.READY): _SYS,
    (S.PROCESSING, S.FAILED_EXTRACTION): _SYS,
    (S.PROCESSING, S.FAILED_AI): _SYS,
    (S.PROCESSING, S.QUEUED): _SYS,
    (S.READY, S.SHIPPED): _BOTH,
    (S.READY, S.FAILED_EXPORT): _SYS,
    (S.READY, S.ARCHIVED): _BOTH,
    (S.READY, S.QUEUED): _USER,
    (S.FAILED_EXTRACTION, S.QUEUED): _BOTH,
    (S.FAILED_AI, S.QUEUED): _BOTH,
    (S.FAILED_EXTRACTION, S.ARCHIVED): _USER,
    (S.FAILED_AI, S.ARCHIVED): _USER,
    (S.FAILED_EXPORT, S.SHIPPED): _BOTH,
    (S.FAILED_EXPORT, S.FAILED_EXPORT): _BOTH,
    (S.FAILED_EXPORT, S.QUEUED): _USER,
    (S.FAILED_EXPORT, S.ARCHIVED): _USER,
    (S.SHIPPED, S.SHIPPED): _BOTH,
    (S.SHIPPED, S.ARCHIVED): _USER,
    (S.ARCHIVED, S.READY): _USER,
    (S.ARCHIVED, S.QUEUED): _USER,
}

FAILED: Final = frozenset({S.FAILED_EXTRACTION, S.FAILED_AI, S.FAILED_EXPORT})
#: States from which a user's `process` (re)queues the item.
PROCESSABLE: Final = frozenset(
    {S.CAPTURED, S.FAILED_EXTRACTION, S.FAILED_AI, S.FAILED_EXPORT, S.READY, S.ARCHIVED}
)


def allowed(src: Status, dst: Status, trigger: Trigger) -> bool:
    """Whether ``trigger`` may move an item from ``src`` to ``dst``."""
    return trigger in TRANSITIONS.get((src, dst), frozenset())


def require(src: Status, dst: Status, trigger: Trigger) -> None:
    """Refuse a move readdod makes by itself that the table forbids (a bug, never a request)."""
    if not allowed(src, dst, trigger):
        raise IllegalTransition(f"readdod tried to move an item from {src} to {dst} ({trigger})")


def refusal_code(src: Status) -> str:
    """The error code for a refused transition out of ``src``.

    A PROCESSING item is busy rather than in the wrong place, and the user
    needs to know the difference (wait, or ``archive --cancel``).
    """
    return "PROCESSING_IN_PROGRESS" if src is S.PROCESSING else "INVALID_TRANSITION"
