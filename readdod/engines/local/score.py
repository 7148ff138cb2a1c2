"""The match score: how well the text serves the intent, and the evidence it rests on.

A word-matching engine sees shared stems, not shared meaning: "give a better
conference talk" and a text on public speaking may share no word at all. So
the score has three bands, and its reasons say which one applies and why:

- **shared evidence** (45-100): intent stems found in the text, weighted by how
  rare they are in the language (sharing "new" or "year" proves little);
- **no evidence either way** (:data:`NEUTRAL_SCORE`, 40, at the default skip
  threshold, so never archived): nothing shared, but nothing shows the text is
  about something else either; the card says a person should judge;
- **evidence of another topic** (10-35, skipped): nothing of weight shared, and the
  text is long and clearly about other things (:func:`focused_elsewhere`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import TextAnalysis, analyze, tokenize
from readdod.engines.local.intent import (
    FULL_INTENT,
    Intent,
    Match,
    evidence,
    match_intent,
    names,
    parse_intent,
)
from readdod.engines.local.phrases import Noun, Phrases, phrases_for
from readdod.engines.local.wording import LINE_MAX, dedupe, trim
from readdod.items.models import Priority, Recommendation, Score, Summary


def _priority(score: int) -> Priority:
    if score >= 80:
        return "P0"
    if score >= 60:
        return "P1"
    if score >= 40:
        return "P2"
    return "P3"


def _recommendation(score: int) -> Recommendation:
    if score >= 60:
        return "read"
    if score >= 40:
        return "skim"
    return "skip"


#: Score when the engine has no evidence either way: neither a match nor a mismatch.
NEUTRAL_SCORE: Final = 40
#: Lowest score with shared evidence: above neutral, so any real match outranks "unknown".
RELATED_FLOOR: Final = 45
#: Shared weight below this is no evidence: a common word or two in passing.
MIN_SHARED: Final = 0.25
#: Weighted intent-term occurrences per 1,000 words at which density counts fully.
DENSE_PER_K: Final = 20.0
#: Words (or twice as many CJK characters) a text needs before it can be "about" something.
FOCUS_WORDS: Final = 120
#: Specific terms (weight >= 0.5) recurring at least :data:`FOCUS_REPEATS` times that make a
#: text clearly about its own topics.
FOCUS_TOPICS: Final = 4
FOCUS_REPEATS: Final = 2
#: The intent must name at least this much (summed term weight) for its absence to say anything.
MIN_SPECIFIC: Final = 0.8


def focused_elsewhere(an: TextAnalysis, m: Match) -> list[tuple[str, int]]:
    """The text's own strong topics when they show it is about something else; else [].

    Evidence needs all of: a text long enough to have topics, at least
    :data:`FOCUS_TOPICS` specific terms that recur, an intent that names something
    specific (not only common words), and no shared term of weight.
    """
    if m.shared >= MIN_SHARED or m.specific < MIN_SPECIFIC:
        return []
    if an.words + an.unspaced_chars // 2 < FOCUS_WORDS:
        return []
    topics = [(t, c) for t, c in an.topics(8) if c >= FOCUS_REPEATS]
    return topics if len(topics) >= FOCUS_TOPICS else []


Band = Literal["related", "unknown", "unrelated", "no_topic"]


def band(an: TextAnalysis, intent: Intent) -> tuple[Band, Match | None]:
    """Which of the score's bands the evidence puts the text in (module docstring)."""
    if not intent.terms:
        return "no_topic", None
    m = match_intent(an, intent)
    if m.shared >= MIN_SHARED:
        return "related", m
    if not intent.foreign and focused_elsewhere(an, m):
        return "unrelated", m
    return "unknown", m


def _topic_list(an: TextAnalysis, topics: Sequence[tuple[str, int]], ph: Phrases) -> str:
    return ", ".join(f"{ph.quoted(an.surface[t])} {c}×" for t, c in topics[:5])


def score_text(inp: EngineInput, summary: Summary) -> Score:
    """The score in one of three bands (module docstring); reasons state its evidence, in
    the text's language (:mod:`.phrases`)."""
    an = analyze(inp.text)
    ph = phrases_for(an.lang or inp.lang)
    intent = parse_intent(inp.intent, an.lang)
    rt = summary.reading_time_min
    length_reason = ph.length.format(
        length=ph.length_of(an.words, an.unspaced_chars, an.chars), reading=ph.reading(rt)
    )
    top = an.topics(5) or an.top_terms(5)
    frequent = (
        ph.frequent_terms.format(terms=_topic_list(an, top, ph)) if top else ph.no_words_to_match
    )
    kind, m = band(an, intent)
    if m is None:
        reasons = [
            ph.no_topic_reason.format(goal=ph.goal(intent.raw), n=NEUTRAL_SCORE),
            frequent,
            length_reason,
        ]
        return _make_score(NEUTRAL_SCORE, reasons)
    if kind == "related":
        return _related(inp, an, intent, m, length_reason, ph)
    if kind == "unrelated":
        elsewhere = focused_elsewhere(an, m)
        weak = ph.weak_in_passing.format(evidence=evidence(m.found, ph=ph)) if m.found else ""
        match = round(15 + 20 * min(1.0, m.shared / MIN_SHARED))
        reasons = [
            ph.unrelated_reason.format(missing=names(m.missing, ph=ph), weak=weak),
            ph.elsewhere_reason.format(topics=_topic_list(an, elsewhere, ph)),
            ph.skipped_reason.format(words=ph.count(an.words, "word")),
            length_reason,
        ]
        return _make_score(match, reasons)
    why = (
        ph.why_foreign.format(own=intent.own_lang, lang=an.lang)
        if intent.foreign
        else ph.why_absent.format(missing=names(m.missing, ph=ph))
    )
    reasons = [
        ph.unknown_reason.format(why=why),
        ph.neutral_reason.format(n=NEUTRAL_SCORE),
        frequent,
        length_reason,
    ]
    return _make_score(NEUTRAL_SCORE, reasons)


def _related(
    inp: EngineInput, an: TextAnalysis, intent: Intent, m: Match, length_reason: str, ph: Phrases
) -> Score:
    """Shared evidence: coverage (60%), density (25%) and prominence (15%) of the weighted
    intent terms, mapped onto :data:`RELATED_FLOOR`-100."""
    title_terms = set(tokenize(inp.title or "", an.lang).terms)
    weights = {t: an.weight(t) for t in intent.terms}
    prominent = sum(
        weights[t] for t in intent.terms if t in title_terms or t in an.first_paragraph_terms
    )
    density = min(1.0, m.weighted_per_k / DENSE_PER_K)
    prominence = prominent / max(m.specific, FULL_INTENT)
    # Intents are wordy ("...this sprint"), so missing terms cost less and less.
    quality = 0.6 * min(1.0, m.coverage) ** 0.75 + 0.25 * density + 0.15 * prominence
    match = round(RELATED_FLOOR + (100 - RELATED_FLOOR) * quality)
    total = len(m.found) + len(m.missing)
    coverage_reason = ph.coverage_reason.format(
        evidence=evidence(m.found, ph=ph), found=len(m.found), total=total
    )
    if m.missing:
        coverage_reason += ph.coverage_missing.format(missing=names(m.missing, ph=ph))
    coverage_reason += "."
    unit: Noun = "word" if an.words >= an.unspaced_chars else "char"
    density_reason = ph.density_reason.format(
        times=ph.count(m.hits, "time"), per_k=ph.decimal_of(m.per_k, 1), unit=ph.nouns[unit][-1]
    )
    where = []
    for h in m.found[:4]:
        spots = [
            spot
            for spot, ok in (
                (ph.at_title, h.term in title_terms),
                (ph.at_opening, h.term in an.first_paragraph_terms),
            )
            if ok
        ]
        first = next((s.index for s in an.sentences if h.term in s.terms), None)
        if spots:
            at = ph.join_and(spots)
        elif first is not None:
            at = ph.at_sentence.format(i=first + 1, n=len(an.sentences))
        else:
            at = ph.at_inside
        where.append(ph.spot.format(label=ph.quoted(trim(h.label, 40)), at=at))
    where_reason = ph.where_reason.format(spots="; ".join(where))
    return _make_score(match, [coverage_reason, density_reason, where_reason, length_reason])


def _make_score(match: int, reasons: Sequence[str]) -> Score:
    match = max(0, min(100, match))
    return Score(
        match_score=match,
        priority=_priority(match),
        reasons=dedupe((trim(r, LINE_MAX) for r in reasons), 10),
        recommendation=_recommendation(match),
    )
