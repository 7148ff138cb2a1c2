"""Cut a text into chunks of a bounded size. Pure.

One algorithm serves every caller, each with its own levels and measure: the
OpenAI engine cuts a long article into paragraphs, then sentences, measured
in estimated tokens, to fit its context; the local engine cuts a run-on
sentence into clauses, then words, measured in characters, to rank it.

At each level the parts are packed greedily, in order, into chunks of at
most ``target``; a chunk still larger than ``limit`` (a single oversized
part) is cut at the next level, and past the last level into slices of
``target``. Chunks are stripped and never empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

Size = Callable[[str], int]
#: ``fit(text, budget)``: the length of the longest prefix of ``text`` within ``budget``.
Fit = Callable[[str, int], int]


@dataclass(frozen=True, slots=True)
class Level:
    """One way of cutting a text, and the separator its pieces are rejoined with."""

    split: Callable[[str], list[str]]
    sep: str


def fit_chars(text: str, budget: int) -> int:
    """The :data:`Fit` for a size measured in characters."""
    return min(len(text), budget)


def pack(parts: Iterable[str], target: int, *, sep: str = " ", size: Size = len) -> list[str]:
    """Greedily join ``parts`` with ``sep`` into chunks of at most ``target``.

    A part larger than ``target`` becomes a chunk of its own; empty parts are skipped.
    """
    chunks: list[str] = []
    cur = ""
    for part in parts:
        if not part:
            continue
        if cur and size(f"{cur}{sep}{part}") > target:
            chunks.append(cur)
            cur = part
        else:
            cur = f"{cur}{sep}{part}" if cur else part
    if cur:
        chunks.append(cur)
    return chunks


def chunk(
    text: str,
    levels: Sequence[Level],
    target: int,
    *,
    limit: int | None = None,
    size: Size = len,
    fit: Fit = fit_chars,
) -> list[str]:
    """Cut ``text`` into chunks of about ``target`` and at most ``limit`` (default: ``target``).

    A text within ``limit`` is one chunk. A ``target`` below 1 counts as 1, so a
    budget gone to zero or below cuts small instead of looping.
    """
    target = max(1, target)
    most = target if limit is None else max(1, limit)

    def cut(piece: str) -> list[str]:
        out: list[str] = []
        while size(piece) > target:
            n = max(1, fit(piece, target))
            out.append(piece[:n])
            piece = piece[n:]
        out.append(piece)
        return out

    def split(piece: str, depth: int) -> list[str]:
        if depth == len(levels):
            return cut(piece)
        level = levels[depth]
        out: list[str] = []
        for packed in pack(level.split(piece), target, sep=level.sep, size=size):
            out.extend([packed] if size(packed) <= most else split(packed, depth + 1))
        return out

    pieces = [text] if size(text) <= most else split(text, 0)
    return [s for s in (p.strip() for p in pieces) if s]
