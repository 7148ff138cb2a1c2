"""What a person can do with an item now, read off the transition table.

Pure: a new user transition in :mod:`readdod.items.states` needs a command here,
and a test holds every one of them to that.
"""

from __future__ import annotations

from typing import Any

from readdod.items.states import TRANSITIONS, Status, Trigger, allowed

S = Status
#: Non-transition actions and user transitions, as (order, command, what it does).
_Action = tuple[int, str, str]


def _moves(src: Status, dst: Status, item_id: str) -> list[_Action]:
    """The commands that make a person's ``src -> dst`` transition happen."""
    if dst is S.ARCHIVED:
        return [(90, f"readdod archive {item_id}", "put it away (`unarchive` brings it back)")]
    if dst is S.READY:  # ARCHIVED -> READY
        return [(50, f"readdod unarchive {item_id}", "bring it back (queued if it has no card)")]
    if dst in (S.SHIPPED, S.FAILED_EXPORT):
        again = " again" if src in (S.SHIPPED, S.FAILED_EXPORT) else ""
        out = [(20, f"readdod export {item_id}", f"write the card as a file{again}")]
        if src is not S.SHIPPED:
            out.append((80, f"readdod ship {item_id}", "mark it done without writing a file"))
        return out
    if dst is S.QUEUED:
        if src is S.CAPTURED:
            return [(10, f"readdod process {item_id}", "process it")]
        if src is S.READY:
            return [(40, f"readdod process {item_id} --regenerate", "make new versions")]
        if src is S.ARCHIVED:
            return [(55, f"readdod unarchive {item_id} --regenerate", "bring it back, made anew")]
        if src is S.FAILED_EXPORT:
            return [(40, f"readdod process {item_id}", "make the card again")]
        return [(10, f"readdod process {item_id}", "retry (from the step that failed)")]
    return []


def next_actions(item: dict[str, Any], *, has_card: bool) -> list[tuple[str, str]]:
    """What a person can do with the item now, as (command to type, what it does).

    Taken from the transition table: every move a user may make from the
    item's state, plus waiting while the daemon works on it, cancelling a
    PROCESSING item (it goes back to QUEUED first) and editing a READY card.
    """
    src = Status(item["status"])
    item_id = str(item["id"])
    found: list[_Action] = []
    for (frm, dst), triggers in TRANSITIONS.items():
        if frm is src and Trigger.USER in triggers:
            found.extend(_moves(src, dst, item_id))
    works = allowed(src, S.PROCESSING, Trigger.SYSTEM) or src is S.PROCESSING
    if works:
        found.append((5, f"readdod watch {item_id}", "wait: follow it until it settles"))
    if (
        src is S.PROCESSING
        and allowed(S.PROCESSING, S.QUEUED, Trigger.SYSTEM)
        and allowed(S.QUEUED, S.ARCHIVED, Trigger.USER)
    ):
        found.append((90, f"readdod archive {item_id} --cancel", "stop it and put it away"))
    if src is S.READY and has_card:
        found.append((30, f"readdod edit {item_id} card", "change the card (your version wins)"))
    seen: set[str] = set()
    out = []
    for _, cmd, what in sorted(found, key=lambda a: a[0]):
        if cmd not in seen:
            seen.add(cmd)
            out.append((cmd, what))
    return out
