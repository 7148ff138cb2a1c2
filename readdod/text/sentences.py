"""Paragraphs, sentences and clauses. Pure.

Sentence ends are the usual marks of Latin, CJK, Devanagari and Arabic text.
A Latin mark ends a sentence only before something that is not lowercase, and
not after a known abbreviation or an initial, so "e.g. this" and "J. Smith"
stay whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from readdod.text.scripts import is_unspaced

_BOUNDARY_RE: Final = re.compile(
    r"(?P<cjk>[。！？।؟]+[」』”’）\"')]*\s*)|(?P<latin>[.!?…]+[\"'”’»)\]]*\s+)"
)
_COMPLETE_RE: Final = re.compile(r"[.!?…。！？।؟][\"'”’»)\]」』）]*$")
_CLAUSE_RE: Final = re.compile(r"(?<=[,;:，、；：])\s*")
_PARAGRAPH_RE: Final = re.compile(r"\n\s*\n")
#: Marks after which a joined sentence needs no space.
_CLOSING_MARKS: Final = "。！？」』）"
_ABBREVIATED: Final = (
    "mr mrs ms dr prof sr jr st vs etc e.g i.e fig no vol approx cf al inc ltd co jan feb mar "
    "apr jun jul aug sep sept oct nov dec т.е т.д др см г"
)
#: Words that a full stop follows without ending the sentence.
ABBREVIATIONS: Final = frozenset(_ABBREVIATED.split())


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, stripped; empty ones dropped."""
    return [p for p in (p.strip() for p in _PARAGRAPH_RE.split(text)) if p]


def split_sentences(text: str) -> list[str]:
    """Sentences of one paragraph or line, stripped, in order."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        end = m.end()
        if m.group("latin") is not None:
            nxt = text[end : end + 1]
            if nxt.islower():
                continue
            if text[m.start()] == ".":
                cut = max(text.rfind(" ", start, m.start()), start - 1)
                prev_word = text[cut + 1 : m.start()].casefold()
                if prev_word in ABBREVIATIONS or (len(prev_word) == 1 and prev_word.isalpha()):
                    continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def split_clauses(sentence: str) -> list[str]:
    """Cut after commas, semicolons and colons (Latin and CJK); the marks stay."""
    return _CLAUSE_RE.split(sentence)


def is_complete(sentence: str) -> bool:
    """Ends like a finished sentence (not a heading, not a colon before a list)."""
    return _COMPLETE_RE.search(sentence) is not None


def join_sentences(sentences: Iterable[str]) -> str:
    """Join with a space, except after CJK text and full stops, where a space looks wrong."""
    out = ""
    for s in sentences:
        s = s.strip()
        if not s:
            continue
        if out and not is_unspaced(out[-1]) and out[-1] not in _CLOSING_MARKS:
            out += " "
        out += s
    return out
