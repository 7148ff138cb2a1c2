"""How the local engine words its output: trimming, quoting, counting nouns. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: Longest key point or score reason.
LINE_MAX: Final = 500


def normalize_space(s: str) -> str:
    return " ".join(s.split())


def trim(s: str, limit: int) -> str:
    """Cut ``s`` to ``limit`` chars at a word boundary, marking the cut with an ellipsis."""
    s = s.strip()
    if len(s) <= limit:
        return s
    cut = s[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    cut = cut.rstrip(" ,;:-–—")
    return f"{cut}…"


def quote(s: str, limit: int = 60) -> str:
    return f"“{trim(normalize_space(s), limit)}”"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def dup_key(s: str) -> str:
    return s.strip().lower()


def dedupe(items: Iterable[str], limit: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        key = dup_key(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
        if len(out) == limit:
            break
    return out
