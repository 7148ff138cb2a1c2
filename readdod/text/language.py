"""Which language a text is written in, from its script and its most common words. Pure.

Scripts settle most languages (Han, kana, hangul, Thai, ...). Latin and Cyrillic
texts are told apart by counting each candidate language's most common words
(:mod:`readdod.text.wordlists`): function words make up a third or more of any
running text, so a few sentences decide it. Too few hits and the answer is None
rather than a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final

from readdod.text.scripts import script_counts
from readdod.text.wordlists import STEMMED, wordlist

_SCRIPT_LANG: Final[Mapping[str, str]] = {
    "kana": "ja",
    "han": "zh",
    "hangul": "ko",
    "greek": "el",
    "arabic": "ar",
    "hebrew": "he",
    "devanagari": "hi",
    "thai": "th",
}
#: The languages :func:`detect_language` names, in English: how a prompt names them.
NAMES: Final[Mapping[str, str]] = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "ru": "Russian",
    "pt": "Portuguese", "it": "Italian", "nl": "Dutch", "sv": "Swedish", "ja": "Japanese",
    "zh": "Chinese", "ko": "Korean", "el": "Greek", "ar": "Arabic", "he": "Hebrew",
    "hi": "Hindi", "th": "Thai",
}  # fmt: skip
_WORD_RE: Final = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
#: Words looked at: the opening of a text says which language it is in.
SAMPLE_WORDS: Final = 400
#: Hits on a language's common words needed before it is named.
MIN_HITS: Final = 2


@functools.lru_cache(maxsize=1_024)
def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None when the text does not say clearly enough."""
    counts = script_counts(text[:20_000])
    script = max(counts, key=lambda s: counts[s])
    if counts[script] == 0:
        return None
    if counts["kana"] and script in ("han", "kana"):
        return "ja"
    if script in _SCRIPT_LANG:
        return _SCRIPT_LANG[script]
    words = [w.casefold() for w in _WORD_RE.findall(text[:20_000])][:SAMPLE_WORDS]
    cyrillic = script == "cyrillic"
    best: tuple[int, str] | None = None
    for lang in STEMMED:
        if (lang == "ru") != cyrillic:
            continue
        wl = wordlist(lang)
        assert wl is not None
        hits = sum(1 for w in words if w in wl.common)
        if best is None or hits > best[0]:
            best = (hits, lang)
    if best is None or best[0] < (1 if len(words) < 10 else MIN_HITS):
        return None
    return best[1]
