"""The bundled word lists: per language, stem frequencies and the most common words.

Data, not I/O: the files ship inside the package (``text/wordlists/*.txt``, derived
from wordfreq, CC BY-SA 4.0, see its NOTICE) and are read once, on first use, the
way a module reads its constants. Nothing is fetched at run time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Final

#: Languages with a list, and the Snowball algorithm that stems them.
STEMMED: Final = MappingProxyType(
    {
        "en": "english",
        "de": "german",
        "fr": "french",
        "es": "spanish",
        "ru": "russian",
        "pt": "portuguese",
        "it": "italian",
        "nl": "dutch",
        "sv": "swedish",
    }
)


@dataclass(frozen=True, slots=True)
class WordList:
    lang: str
    common: frozenset[str]
    """The language's most frequent words, casefolded: mostly function words."""
    zipf: MappingProxyType[str, float]
    """Stem -> Zipf frequency (log10 of occurrences per billion words); only stems at
    or above 4.0 are listed: every rarer stem is equally specific."""


@functools.cache
def wordlist(lang: str) -> WordList | None:
    """The list for ``lang`` (an ISO 639-1 code), or None for a language without one."""
    if lang not in STEMMED:
        return None
    raw = resources.files("readdod.text").joinpath("wordlists", f"{lang}.txt").read_text("utf-8")
    common: frozenset[str] = frozenset()
    zipf: dict[str, float] = {}
    for line in raw.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("@common "):
            common = frozenset(line.split()[1:])
            continue
        stem, _, value = line.rpartition(" ")
        zipf[stem] = int(value) / 10
    return WordList(lang, common, MappingProxyType(zipf))
