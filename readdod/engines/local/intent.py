"""The intent's topic terms and how they meet the text.

"I want to learn about X" is about X, not about wanting: filler words are
dropped, and the rest is matched against the analysis of the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from readdod.engines.local.analysis import TextAnalysis, is_gram, tokenize, word_set
from readdod.engines.local.wording import join_and, quote, trim

# Words that say *that* someone wants to read, not *what* about.
_INTENT_FILLER: Final = word_set(
    """
    want wants wanted need needs learn learning know knowing understand understanding read
    reading find finding get getting use using better more about how what why way ways something
    interested interest looking look figure out improve try trying some idea ideas thing things
    quickly quick somewhere started start starts got come comes mean means follow whether
    decide decided tell remember our my
    хочу хочется узнать изучить понять разобраться научиться нужно про
    quiero necesito saber aprender entender conocer busco veux voudrais besoin savoir apprendre
    comprendre möchte lernen verstehen wissen brauche quero preciso voglio imparare capire sapere
    """
)


@dataclass(frozen=True, slots=True)
class Intent:
    raw: str
    terms: tuple[str, ...]
    surface: Mapping[str, str]

    @property
    def label(self) -> str:
        return quote(self.raw) if self.raw.strip() else "your goal"


def parse_intent(intent: str) -> Intent:
    """The intent's topic terms: 'I want to learn about X' is about X, not about wanting."""
    tok = tokenize(intent)
    surface: dict[str, str] = {}
    for t, s in zip(tok.terms, tok.surfaces, strict=True):
        surface.setdefault(t, s)
    topical = [t for t in surface if t not in _INTENT_FILLER]
    return Intent(intent, tuple(topical[:20]), MappingProxyType(surface))


@dataclass(frozen=True, slots=True)
class Hit:
    label: str
    """What a person recognises: a word, or a CJK run rebuilt from its bigrams."""
    count: int
    term: str
    """The first term of the label, for finding where it occurs."""


def _hits(terms: Sequence[str], intent: Intent, an: TextAnalysis) -> list[Hit]:
    """Group intent terms for display; adjacent CJK bigrams (深度, 度学, 学习) become 深度学习.

    A rebuilt run is counted as its rarest bigram: an upper bound on the phrase count.
    """
    out: list[Hit] = []
    prev = ""
    for t in terms:
        count = an.term_counts.get(t, 0)
        if out and is_gram(t) and is_gram(prev) and prev[1] == t[0]:
            last = out[-1]
            out[-1] = Hit(last.label + t[1], min(last.count, count), last.term)
        else:
            out.append(Hit(intent.surface[t], count, t))
        prev = t
    return out


@dataclass(frozen=True, slots=True)
class Match:
    found: list[Hit]
    missing: list[Hit]
    coverage: float
    """Share of intent terms present in the text; a term met only once, in passing (not in
    the opening paragraph), counts half."""
    hits: int
    per_k: float
    """Intent-term occurrences per 1,000 words (or CJK characters)."""


def _bridge(term: str, found: Sequence[str]) -> bool:
    """A CJK bigram that straddles two words of the intent (ス転 in バス転換) is no term."""
    return is_gram(term) and any(is_gram(f) and (f[1] == term[0] or f[0] == term[1]) for f in found)


def match_intent(an: TextAnalysis, intent: Intent) -> Match:
    found = [t for t in intent.terms if an.term_counts.get(t)]
    missing = [t for t in intent.terms if not an.term_counts.get(t) and not _bridge(t, found)]
    found_hits = _hits(found, intent, an)
    hits = sum(h.count for h in found_hits)
    weight = sum(
        1.0 if an.term_counts[t] > 1 or t in an.first_paragraph_terms else 0.5 for t in found
    )
    return Match(
        found=sorted(found_hits, key=lambda h: -h.count),
        missing=_hits(missing, intent, an),
        coverage=weight / (len(found) + len(missing)) if found or missing else 0.0,
        hits=hits,
        per_k=hits * 1000 / max(1, an.words + an.unspaced_chars),
    )


def names(hits: Sequence[Hit], n: int = 6) -> str:
    names = [quote(h.label, 40) for h in hits[:n]]
    if len(hits) > n:
        names.append(f"{len(hits) - n} more")
    return join_and(names)


def counts(hits: Sequence[Hit], n: int = 6) -> str:
    return ", ".join(f"“{trim(h.label, 40)}” {h.count:,}×" for h in hits[:n])
