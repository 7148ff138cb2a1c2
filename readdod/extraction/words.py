"""Word counts and script-aware lengths of article text.

How many words a text holds, and how long it reads, depend on how its script
writes words (CJK has no spaces between them), not on markup. The extractor's
few rules of that kind live here together, apart from the DOM code, so that
they can be read, tested and replaced as one piece.
"""

from __future__ import annotations

import math
import re
from itertools import filterfalse
from typing import Final

_ALNUM_RE: Final = re.compile(r"[^\W_]")
_PUNCTUATION: Final = ".,;:!?\"'()[]{}«»“”‘’…-–—/"
CJK_RE: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]"
)


def word_count(text: str) -> int:
    """Words for reading-time estimates.

    Whitespace-separated tokens with a letter or digit; CJK scripts have no
    spaces, so each two of their characters count as one word.
    """
    cjk = 0
    if not text.isascii():
        text, cjk = CJK_RE.subn(" ", text)
    tokens = text.split()
    words = len(tokens)
    # Most tokens are plain words: only the others are looked at in Python, and of
    # those most are words with punctuation stuck on.
    for token in filterfalse(str.isalnum, tokens):
        if not token.strip(_PUNCTUATION).isalnum() and _ALNUM_RE.search(token) is None:
            words -= 1
    return words + math.ceil(cjk / 2)


def visual_len(text: str) -> int:
    """Length in Latin-letter terms: a CJK character carries about a word."""
    return len(text) if text.isascii() else len(text) + 2 * len(CJK_RE.findall(text))
