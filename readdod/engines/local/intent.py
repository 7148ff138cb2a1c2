"""The intent's topic terms and how they meet the text.

"I want to learn about X" is about X, not about wanting: filler words are
dropped, and the rest is stemmed in the text's language and matched against
the analysis of the text. Each term carries a weight (how rare its stem is in
the language), so sharing "tomato" says much and sharing "new" or "year" says
almost nothing. In languages that build compounds (German, Dutch, Swedish) a
term found inside a longer word ("Brot" in "Sauerteigbrot") counts half.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from readdod.engines.local.analysis import TextAnalysis, is_gram, term_weight, tokenize, word_set
from readdod.engines.local.phrases import ENGLISH, Phrases
from readdod.engines.local.wording import trim
from readdod.text.language import detect_language

# Words that say *that* someone wants to read, not *what* about.
_INTENT_FILLER: Final = word_set(
    """
    want wants wanted need needs learn learning know knowing understand understanding read
    reading find finding get getting use using better more about how what why way ways something
    interested interest looking look figure out improve try trying some idea ideas thing things
    quickly quick somewhere started start starts got come comes mean means follow whether
    decide decided tell remember our my
    хочу хочется узнать изучить понять разобраться научиться нужно про лучше как мне мой моя
    quiero necesito saber aprender entender conocer busco mejor mi mis cómo
    veux voudrais besoin savoir apprendre comprendre mieux mon ma mes comment
    möchte lernen verstehen wissen brauche besser mein meine meinen wie
    quero preciso voglio imparare capire sapere
    """
)
#: Languages whose words join into compounds, where a term inside a longer word counts.
COMPOUNDING: Final = frozenset({"de", "nl", "sv"})
#: Shortest term looked for inside longer words.
MIN_PART: Final = 4
#: The least weight an intent is measured against: one fully specific term.
FULL_INTENT: Final = 1.0
#: Weight of a term found only inside a longer word, relative to an exact find.
PART_FACTOR: Final = 0.5


@dataclass(frozen=True, slots=True)
class Intent:
    raw: str
    terms: tuple[str, ...]
    surface: Mapping[str, str]
    lang: str | None
    """The language the terms were stemmed in: the text's."""
    own_lang: str | None
    """The language the intent itself appears to be written in, when it can tell."""

    @property
    def label(self) -> str:
        """The intent in quotes, whole; "your goal" when it is blank or too long to quote."""
        raw = " ".join(self.raw.split())
        return f"“{raw}”" if raw and len(raw) <= 80 else "your goal"

    @property
    def foreign(self) -> bool:
        """Written in another language than the text: words cannot be compared."""
        return self.own_lang is not None and self.lang is not None and self.own_lang != self.lang


@functools.lru_cache(maxsize=256)
def parse_intent(intent: str, lang: str | None = None) -> Intent:
    """The intent's topic terms, stemmed in ``lang`` (the text's language)."""
    tok = tokenize(intent, lang)
    surface: dict[str, str] = {}
    for t, s in zip(tok.terms, tok.surfaces, strict=True):
        if s.casefold() not in _INTENT_FILLER and t not in _INTENT_FILLER:
            surface.setdefault(t, s)
    own = detect_language(intent) if len(intent.split()) >= 3 else None
    return Intent(intent, tuple(list(surface)[:20]), MappingProxyType(surface), lang, own)


@dataclass(frozen=True, slots=True)
class Hit:
    label: str
    """What a person recognises: a word, or a CJK run rebuilt from its bigrams."""
    count: int
    term: str
    """The first term of the label, for finding where it occurs."""
    weight: float = 1.0
    """How much the term says (0.05-1.0): rare stems say much, common ones little."""
    partial: bool = False
    """Found only inside longer words (a compound)."""


def _hits(
    terms: Sequence[str],
    intent: Intent,
    an: TextAnalysis,
    counts: Mapping[str, int],
    partial: frozenset[str] = frozenset(),
) -> list[Hit]:
    """Group intent terms for display; adjacent CJK bigrams (深度, 度学, 学习) become 深度学习.

    A rebuilt run is counted as its rarest bigram: an upper bound on the phrase count.
    """
    out: list[Hit] = []
    prev = ""
    for t in terms:
        count = counts.get(t, 0)
        if out and is_gram(t) and is_gram(prev) and prev[1] == t[0]:
            last = out[-1]
            out[-1] = Hit(last.label + t[1], min(last.count, count), last.term, last.weight)
        else:
            out.append(Hit(intent.surface[t], count, t, an.weight(t), t in partial))
        prev = t
    return out


@dataclass(frozen=True, slots=True)
class Match:
    found: list[Hit]
    missing: list[Hit]
    coverage: float
    """Weighted share of the intent's terms present in the text: each term counts by its
    weight, half when met only once in passing or only inside a longer word. An intent of
    common words only ("new offer this year") is measured against :data:`FULL_INTENT`, so
    matching all of it is still little evidence."""
    hits: int
    per_k: float
    """Intent-term occurrences per 1,000 words (or CJK characters)."""
    weighted_per_k: float
    """The same, each occurrence counted by its term's weight."""
    shared: float
    """The summed weight of the terms found: the evidence of shared meaning."""
    specific: float
    """The summed weight of all the intent's terms: how much it names a topic at all."""


def _bridge(term: str, found: Sequence[str]) -> bool:
    """A CJK bigram that straddles two words of the intent (ス転 in バス転換) is no term."""
    return is_gram(term) and any(is_gram(f) and (f[1] == term[0] or f[0] == term[1]) for f in found)


def _inside(term: str, an: TextAnalysis) -> int:
    """Occurrences of ``term`` inside longer words of the text, or of the text's words
    inside ``term`` (a compound intent such as "Fahrradkette" against "Kette")."""
    if an.lang not in COMPOUNDING or len(term) < MIN_PART:
        return 0
    n = 0
    for t, c in an.term_counts.items():
        if t == term or is_gram(t):
            continue
        if term in t or (len(t) >= MIN_PART + 1 and t in term and an.weight(t) >= 0.5):
            n += c
    return n


def match_intent(an: TextAnalysis, intent: Intent) -> Match:
    counts = {t: an.term_counts.get(t, 0) for t in intent.terms}
    partial = set()
    for t in intent.terms:
        if not counts[t]:
            inside = _inside(t, an)
            if inside:
                counts[t] = inside
                partial.add(t)
    found = [t for t in intent.terms if counts[t]]
    missing = [t for t in intent.terms if not counts[t] and not _bridge(t, found)]
    found_hits = _hits(found, intent, an, counts, frozenset(partial))
    hits = sum(h.count for h in found_hits)
    weighted_hits = sum(
        h.count * h.weight * (PART_FACTOR if h.partial else 1.0) for h in found_hits
    )
    weights = {t: term_weight(t, an.lang) for t in intent.terms}
    shared = sum(weights[t] * (PART_FACTOR if t in partial else 1.0) for t in found)
    considered = found + missing
    specific = sum(weights[t] for t in considered)
    weighted = sum(
        weights[t]
        * (PART_FACTOR if t in partial else 1.0)
        * (1.0 if counts[t] > 1 or t in an.first_paragraph_terms else 0.5)
        for t in found
    )
    return Match(
        found=sorted(found_hits, key=lambda h: (-h.count * h.weight, h.label)),
        missing=_hits(missing, intent, an, counts),
        coverage=weighted / max(specific, FULL_INTENT),
        hits=hits,
        per_k=hits * 1000 / max(1, an.words + an.unspaced_chars),
        weighted_per_k=1000 * weighted_hits / max(1, an.words + an.unspaced_chars),
        shared=round(shared, 3),
        specific=round(specific, 3),
    )


def names(hits: Sequence[Hit], n: int = 6, ph: Phrases = ENGLISH) -> str:
    shown = [ph.quoted(trim(h.label, 40)) for h in hits[:n]]
    if len(hits) > n:
        shown.append(ph.more.format(n=len(hits) - n))
    return ph.join_and(shown)


def evidence(hits: Sequence[Hit], n: int = 6, ph: Phrases = ENGLISH) -> str:
    """Each shared term with its count and weight: what the score rests on."""
    return "; ".join(
        ph.evidence_item.format(
            label=ph.quoted(trim(h.label, 40)),
            count=ph.number(h.count),
            weight=ph.decimal_of(h.weight, 2),
            inside=ph.inside_note if h.partial else "",
        )
        for h in hits[:n]
    )
