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
from readdod.engines.local.analysis import TextAnalysis, analyze, length_phrase, tokenize
from readdod.engines.local.intent import (
    FULL_INTENT,
    Intent,
    Match,
    evidence,
    match_intent,
    names,
    parse_intent,
)
from readdod.engines.local.wording import LINE_MAX, dedupe, join_and, plural, reading_phrase, trim
from readdod.models import Priority, Recommendation, Score, Summary


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


def _topic_list(an: TextAnalysis, topics: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"“{an.surface[t]}” {c}×" for t, c in topics[:5])


def score_text(inp: EngineInput, summary: Summary) -> Score:
    """The score in one of three bands (module docstring); reasons state its evidence."""
    an = analyze(inp.text)
    intent = parse_intent(inp.intent, an.lang)
    rt = summary.reading_time_min
    length_reason = f"Length: {length_phrase(an)}, {reading_phrase(rt)}."
    top = an.topics(5) or an.top_terms(5)
    topics = _topic_list(an, top)
    kind, m = band(an, intent)
    if m is None:
        reasons = [
            f"The intent {intent.label} names no topic, so the score is a neutral {NEUTRAL_SCORE}.",
            f"Most frequent terms: {topics}." if top else "The text has no words to match.",
            length_reason,
        ]
        return _make_score(NEUTRAL_SCORE, reasons)
    if kind == "related":
        return _related(inp, an, intent, m, length_reason)
    if kind == "unrelated":
        elsewhere = focused_elsewhere(an, m)
        weak = f" (only common words in passing: {evidence(m.found)})" if m.found else ""
        match = round(15 + 20 * min(1.0, m.shared / MIN_SHARED))
        reasons = [
            f"No shared meaning found: none of the intent's words ({names(m.missing)}) occur "
            f"in the text{weak}.",
            f"The text is clearly about other things: {_topic_list(an, elsewhere)}.",
            "Skipped on that evidence, not for lacking shared words alone: a text of "
            f"{plural(an.words, 'word')} that keeps returning to other topics and never names "
            "the intent's is unlikely to serve it.",
            length_reason,
        ]
        return _make_score(match, reasons)
    why = (
        f"the intent looks written in another language ({intent.own_lang}) than the text "
        f"({an.lang})"
        if intent.foreign
        else f"none of the intent's words ({names(m.missing)}) occur in the text"
    )
    reasons = [
        f"No shared meaning the offline engine can see: {why}.",
        f"It matches words, not meaning, so it cannot tell a paraphrase from a mismatch: "
        f"scored a neutral {NEUTRAL_SCORE} and not archived. Judge it yourself, or use a model "
        "server (ai.engine = openai).",
        f"Most frequent terms: {topics}." if top else "The text has no words to match.",
        length_reason,
    ]
    return _make_score(NEUTRAL_SCORE, reasons)


def _related(
    inp: EngineInput, an: TextAnalysis, intent: Intent, m: Match, length_reason: str
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
    coverage_reason = (
        f"Shared words, weighted by how rare they are: {evidence(m.found)}; "
        f"{len(m.found)} of {total} intent terms found"
    )
    coverage_reason += f", missing {names(m.missing)}." if m.missing else "."
    unit = "words" if an.words >= an.unspaced_chars else "characters"
    density_reason = (
        f"Intent terms occur {plural(m.hits, 'time')} ({m.per_k:.1f} per 1,000 {unit})."
    )
    where = []
    for h in m.found[:4]:
        spots = [
            spot
            for spot, ok in (
                ("the title", h.term in title_terms),
                ("the opening paragraph", h.term in an.first_paragraph_terms),
            )
            if ok
        ]
        first = next((s.index for s in an.sentences if h.term in s.terms), None)
        if spots:
            at = join_and(spots)
        elif first is not None:
            at = f"sentence {first + 1} of {len(an.sentences)}"
        else:
            at = "inside longer words"
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
