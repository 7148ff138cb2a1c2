"""Sortable identifiers (ULID layout: 48-bit milliseconds + 80 random bits)."""

from __future__ import annotations

import os
import threading

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def ulid(now_ms: int) -> str:
    """A new ULID; strictly increasing within this process, even in one millisecond."""
    global _last_ms, _last_rand
    with _lock:
        if now_ms <= _last_ms:
            now_ms = _last_ms
            rand = _last_rand + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1
        _last_ms, _last_rand = now_ms, rand
    return _encode(now_ms & ((1 << 48) - 1), 10) + _encode(rand & ((1 << 80) - 1), 16)
