"""How many words a text has, for reading time. Pure.

A word is a whitespace-separated token with at least one letter or digit
("—" and "..." are not words; "I/O" and "state-of-the-art" are one each).
Scripts written without spaces (Han, kana, Thai, Lao, Myanmar, Khmer) have no
tokens to count, so each of their characters counts as half a word: one rule
for all of them, rounded up over the whole text.
"""

from __future__ import annotations

import re
from itertools import filterfalse
from typing import Final

from readdod.text.scripts import HAN_KANA_RE, UNSPACED_RE

#: Characters of an unspaced script that make one word.
CHARS_PER_WORD: Final = 2

_ALNUM_RE: Final = re.compile(r"[^\W_]")
_PUNCTUATION: Final = ".,;:!?\"'()[]{}«»“”‘’…-–—/"
# The UTF-8 lead bytes of the blocks that hold the unspaced scripts (U+0800 to
# U+1FFF, U+3000 to U+9FFF, U+F000 up): a text whose encoding has none of them has
# none of their characters. Encoding and searching bytes is several times faster
# than a character-class scan, and most texts (Latin with typographic quotes, whose
# lead byte is E2) are cleared by it.
_UNSPACED_LEADS: Final = bytes((0xE0, 0xE1, *range(0xE3, 0xEA), 0xEF, 0xF0))


def word_count(text: str) -> int:
    """Words in ``text`` by the rule in the module docstring."""
    unspaced = 0
    if not text.isascii() and _may_be_unspaced(text):
        text, unspaced = UNSPACED_RE.subn(" ", text)
    tokens = text.split()
    words = len(tokens)
    # Most tokens are plain words: only the others are looked at in Python, and of
    # those most are words with punctuation stuck on, or inside ("don't", "10,000").
    for token in filterfalse(str.isalnum, tokens):
        core = token.strip(_PUNCTUATION)
        if core.isalnum() or (core and (core[0].isalnum() or core[-1].isalnum())):
            continue
        if _ALNUM_RE.search(token) is None:
            words -= 1
    return words - (-unspaced // CHARS_PER_WORD)


def _may_be_unspaced(text: str) -> bool:
    encoded = text.encode("utf-8", "surrogatepass")
    return any(lead in encoded for lead in _UNSPACED_LEADS)


def latin_length(text: str) -> int:
    """Length in Latin-letter terms: a Han or kana character carries about a word, so
    it counts as three letters. Lets one length threshold serve every script."""
    return len(text) if text.isascii() else len(text) + 2 * len(HAN_KANA_RE.findall(text))
