"""Word stems and how much a shared stem says. Pure.

A stem (Snowball, through PyStemmer) lets "tomatoes" meet "tomato" and
"помидоры" meet "помидор". A weight from the stem's frequency in the language
(:mod:`readdod.text.wordlists`) says how much sharing it proves: "new", "year"
or "offer" occur in any text, "tomato" does not. Languages without a stemmer
keep their words whole and weigh every word alike.
"""

from __future__ import annotations

import threading
from typing import Final

import Stemmer

from readdod.text.wordlists import STEMMED, wordlist

#: Zipf frequency at or below which a stem counts fully (weight 1.0)...
SPECIFIC_ZIPF: Final = 4.0
#: ...and at or above which it counts for almost nothing (weight :data:`MIN_WEIGHT`).
COMMON_ZIPF: Final = 6.5
MIN_WEIGHT: Final = 0.05


# A Snowball stemmer keeps state between calls and must not be shared by threads (the
# engine stems long texts in worker threads): each thread gets its own.
_per_thread = threading.local()


def _stemmer(lang: str) -> Stemmer.Stemmer | None:
    algorithm = STEMMED.get(lang)
    if algorithm is None:
        return None
    mine: dict[str, Stemmer.Stemmer] | None = getattr(_per_thread, "stemmers", None)
    if mine is None:
        mine = _per_thread.stemmers = {}
    found = mine.get(lang)
    if found is None:
        found = mine[lang] = Stemmer.Stemmer(algorithm, 10_000)
    return found


def stemmable(lang: str | None) -> bool:
    """Whether ``lang`` has a stemmer and a frequency list."""
    return lang is not None and lang in STEMMED


def stem(word: str, lang: str | None) -> str:
    """The stem of a casefolded ``word`` in ``lang``; the word itself without a stemmer."""
    s = _stemmer(lang) if lang else None
    return s.stemWord(word) if s is not None else word


def weight(stem_: str, lang: str | None) -> float:
    """How much a shared ``stem_`` says, from 0.05 (the commonest words) to 1.0 (rare).

    Linear in the stem's Zipf frequency between :data:`SPECIFIC_ZIPF` and
    :data:`COMMON_ZIPF`; 1.0 for any stem in a language without a list.
    """
    wl = wordlist(lang) if lang else None
    if wl is None:
        return 1.0
    z = wl.zipf.get(stem_)
    if z is None:
        return 1.0
    span = COMMON_ZIPF - SPECIFIC_ZIPF
    return round(max(MIN_WEIGHT, min(1.0, (COMMON_ZIPF - z) / span)), 3)


def zipf(stem_: str, lang: str | None) -> float | None:
    """The stem's Zipf frequency when it is listed (a common stem); None otherwise."""
    wl = wordlist(lang) if lang else None
    return None if wl is None else wl.zipf.get(stem_)
