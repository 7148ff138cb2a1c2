"""What one daemon's commit told, packed into notices for the others (pure).

A notice is ``[origin, [[event, fields], ...]]`` in JSON, at most the store's
notice size: the notes of a busy moment share notices, and a note too big for
one (a long failure message) loses its long strings first, then all but the
fields that say which item moved where.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

#: Strings longer than this are cut when a note does not fit a notice whole.
FIELD_MAX_CHARS: Final = 500
#: What a note keeps when even its cut strings do not fit.
ESSENTIAL: Final = frozenset({"item_id", "run_id", "from", "to", "trigger", "step", "reason"})

_enc = msgspec.json.Encoder()


class Notice(msgspec.Struct, array_like=True, frozen=True):
    origin: str
    notes: list[tuple[str, dict[str, Any]]]


def _encoded(event: str, fields: Mapping[str, Any], room: int) -> bytes | None:
    try:
        whole = _enc.encode((event, fields))
    except (TypeError, ValueError, OverflowError):
        return None
    if len(whole) <= room:
        return whole
    cut = {
        k: (v[:FIELD_MAX_CHARS] + "…" if isinstance(v, str) and len(v) > FIELD_MAX_CHARS else v)
        for k, v in fields.items()
    }
    cut["truncated"] = True
    shorter = _enc.encode((event, cut))
    if len(shorter) <= room:
        return shorter
    bare = {k: v for k, v in cut.items() if k in ESSENTIAL and not isinstance(v, dict | list)}
    bare["truncated"] = True
    smallest = _enc.encode((event, bare))
    return smallest if len(smallest) <= room else None


def pack(origin: str, notes: Iterable[tuple[str, Mapping[str, Any]]], limit: int) -> list[str]:
    """The notices that carry ``notes`` in order, each at most ``limit`` bytes of UTF-8."""
    head = b'["' + _enc.encode(origin)[1:-1] + b'",['
    room = limit - len(head) - 2
    if room <= 16:
        raise ValueError(f"a notice of {limit} bytes has no room for notes")
    out: list[str] = []
    batch: list[bytes] = []
    size = 0
    for event, fields in notes:
        one = _encoded(event, fields, room)
        if one is None:
            continue
        if batch and size + 1 + len(one) > room:
            out.append((head + b",".join(batch) + b"]]").decode())
            batch, size = [], 0
        batch.append(one)
        size += len(one) + (1 if size else 0)
    if batch:
        out.append((head + b",".join(batch) + b"]]").decode())
    return out


def unpack(payload: str) -> Notice | None:
    """The notice in ``payload``, or None for anything else on the channel."""
    try:
        return msgspec.json.decode(payload, type=Notice)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
