"""The match score: how well the text serves the intent, with reasons that cite counts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import analyze, length_phrase, tokenize
from readdod.engines.local.intent import counts, match_intent, names, parse_intent
from readdod.engines.local.wording import LINE_MAX, dedupe, join_and, plural, reading_phrase, trim
from readdod.models import Priority, Recommendation, Score, Summary

# --- score -----------------------------------------------------------------


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


#: Score when the intent names no topic: neither a match nor a mismatch.
NEUTRAL_SCORE: Final = 40


def score_text(inp: EngineInput, summary: Summary) -> Score:
    """Match score from intent-term coverage (60%), density (25%) and prominence (15%).

    Coverage is the share of the intent's topic terms found in the text, density their
    occurrences per 1,000 words (saturating at 10), prominence the share found in the title or
    opening paragraph.
    """
    an = analyze(inp.text)
    intent = parse_intent(inp.intent)
    rt = summary.reading_time_min
    length_reason = f"Length: {length_phrase(an)}, {reading_phrase(rt)}."
    top = an.top_terms(5)
    topics = ", ".join(f"{an.surface[t]} ({c}×)" for t, c in top)
    if not intent.terms:
        reasons = [
            f"The intent {intent.label} names no topic, so the score is a neutral {NEUTRAL_SCORE}.",
            f"Most frequent terms: {topics}." if top else "The text has no words to match.",
            length_reason,
        ]
        return _make_score(NEUTRAL_SCORE, reasons)
    m = match_intent(an, intent)
    title_terms = set(tokenize(inp.title or "").terms)
    prominent = [t for t in intent.terms if t in title_terms or t in an.first_paragraph_terms]
    density = min(1.0, m.per_k / 10)
    prominence = len(prominent) / len(intent.terms)
    # Intents are wordy ("...this sprint"), so missing terms cost less and less: sqrt.
    match = round(100 * (0.6 * math.sqrt(m.coverage) + 0.25 * density + 0.15 * prominence))
    if not m.found:
        reasons = [
            f"None of the intent terms ({names(m.missing)}) appear in the text.",
            f"The text is about other things; most frequent terms: {topics}."
            if top
            else "The text has no words that could match the intent.",
            length_reason,
        ]
        return _make_score(match, reasons)
    total = len(m.found) + len(m.missing)
    coverage_reason = f"Found {len(m.found)} of {total} intent terms: {names(m.found)}"
    coverage_reason += f"; missing {names(m.missing)}." if m.missing else "."
    unit = "words" if an.words >= an.unspaced_chars else "characters"
    density_reason = (
        f"Intent terms occur {plural(m.hits, 'time')} ({m.per_k:.1f} per 1,000 {unit}): "
        f"{counts(m.found)}."
    )
    where = []
    for h in sorted(m.found, key=lambda h: -h.count)[:4]:
        spots = [
            spot
            for spot, ok in (
                ("the title", h.term in title_terms),
                ("the opening paragraph", h.term in an.first_paragraph_terms),
            )
            if ok
        ]
        first = next(s.index for s in an.sentences if h.term in s.terms) + 1
        at = join_and(spots) if spots else f"sentence {first} of {len(an.sentences)}"
        where.append(f"“{trim(h.label, 40)}” in {at}")
    where_reason = "Where: " + "; ".join(where) + "."
    return _make_score(match, [coverage_reason, density_reason, where_reason, length_reason])


def _make_score(match: int, reasons: Sequence[str]) -> Score:
    match = max(0, min(100, match))
    return Score(
        match_score=match,
        priority=_priority(match),
        reasons=dedupe((trim(r, LINE_MAX) for r in reasons), 10),
        recommendation=_recommendation(match),
    )
