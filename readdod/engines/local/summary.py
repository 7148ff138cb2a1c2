"""The extractive, intent-aware summary.

Sentences are ranked by TF-IDF centrality plus overlap with the intent; the
tl;dr and key points are the best of them, never text the article lacks.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import (
    FLAG_RE,
    SHELL_RE,
    Sentence,
    TextAnalysis,
    analyze,
    tokenize,
)
from readdod.engines.local.intent import Intent, evidence, names, parse_intent
from readdod.engines.local.phrases import ENGLISH, Phrases, phrases_for
from readdod.engines.local.score import band
from readdod.engines.local.wording import (
    LINE_MAX,
    dedupe,
    dup_key,
    normalize_space,
    plural,
    quote,
    trim,
)
from readdod.items.models import TL_DR_MAX, Summary
from readdod.text import is_complete, join_sentences, split_clauses

RELEVANCE_MAX: Final = 1_000
#: Below this weighted coverage, shared words are a hint, not a sign the text serves the intent.
WEAK_COVERAGE: Final = 0.34


#: Bonus for the first prose sentences: openings state what a text is about.
_LEAD_BONUS: Final = (0.25, 0.15, 0.1)
# A sentence that leans on the one before it reads badly on its own ("If it fails, ...",
# "This is why ..."); one that names the text itself ("This guide shows ...") does not.
_DANGLING_RE: Final = re.compile(
    r"^(?:if|this|that|these|those|it|its|they|them|he|she|but|and|so|then|also|however|"
    r"such|there|here|which|thus|otherwise|instead)\b(?!\s+(?:article|guide|tutorial|post|"
    r"paper|study|page|essay|card|report|piece|review|book|section|text)\b)",
    re.IGNORECASE,
)


# Page furniture that extraction can leave in: bylines, datelines and image captions.
_BYLINE_RE: Final = re.compile(
    r"^(?:by|von|par|por|автор|written by|posted by|posted on|published|updated|last updated|"
    r"veröffentlicht|aktualisiert|stand|publié|mis à jour|publicado|actualizado|опубликовано|"
    r"обновлено)\b",
    re.IGNORECASE,
)
_CAPTION_RE: Final = re.compile(
    r"^(?:photo|image|picture|illustration|figure|fig\.|foto|bild|abbildung|imagen|фото|"
    r"source|quelle|credit|caption)\b|\((?:photo|foto|image|bild)\b|getty images|©|"
    r"\b(?:ap|afp|reuters|dpa) photo\b",
    re.IGNORECASE,
)


def is_furniture(text: str) -> bool:
    """A byline, dateline or caption: true of the page, not what the text says."""
    return _BYLINE_RE.match(text) is not None or _CAPTION_RE.search(text) is not None


def _is_point(s: Sentence) -> bool:
    """A sentence that can stand as a key point: finished, long enough, not a heading."""
    return is_complete(s.text) and (s.words >= 4 or s.unspaced_chars >= 8)


def _rank(an: TextAnalysis, intent: Intent) -> list[tuple[float, Sentence]]:
    """Sentences with content, best first.

    Score = TF-IDF cosine of the sentence's distinct terms to the whole text (normalised to
    the best sentence) + 0.6 x share of intent terms in the sentence + a lead bonus for the
    first prose sentences; sentences that lean on context or carry commands count less.
    Distinct terms, so that a sentence repeating the top word ("run git bisect good; ...
    git bisect bad") does not pass for the most central one.
    """
    candidates = [s for s in an.sentences if s.terms and not s.code and not is_furniture(s.text)]
    candidates = candidates or [s for s in an.sentences if s.terms]
    if not candidates:
        return []
    df: Counter[str] = Counter()
    for s in candidates:
        df.update(dict.fromkeys(s.terms, 1))
    n = len(candidates)
    idf = {t: math.log((n + 1) / (c + 1)) + 1.0 for t, c in df.items()}
    doc = {t: an.term_counts.get(t, 0) * w for t, w in idf.items()}
    doc_norm = math.sqrt(sum(v * v for v in doc.values())) or 1.0
    wanted = dict.fromkeys(intent.terms)
    prose = [s.index for s in candidates if not s.code and is_complete(s.text)]
    lead = dict(zip(prose, _LEAD_BONUS, strict=False))
    raw: list[tuple[float, float, Sentence]] = []
    for s in candidates:
        distinct = dict.fromkeys(s.terms)
        dot = sum(idf[t] * doc[t] for t in distinct)
        norm = math.sqrt(sum(idf[t] ** 2 for t in distinct)) or 1.0
        cos = dot / (norm * doc_norm)
        if s.words < 4 and s.unspaced_chars < 8:
            cos *= 0.5  # fragments rarely summarise anything
        elif not is_complete(s.text):
            cos *= 0.7  # nor do headings or lines that introduce a list or code
        rel = sum(1 for t in wanted if t in distinct) / len(wanted) if wanted else 0.0
        raw.append((cos, rel, s))
    top_cos = max(c for c, _, _ in raw) or 1.0
    scored = []
    for c, r, s in raw:
        value = c / top_cos + 0.6 * r + lead.get(s.index, 0.0)
        if _DANGLING_RE.match(s.text):
            value *= 0.85
        if FLAG_RE.search(s.text) or SHELL_RE.search(s.text):
            value *= 0.85
        scored.append((value, s))
    scored.sort(key=lambda x: (-x[0], x[1].index))
    return scored


def _near_duplicate(a: Sentence, b: Sentence) -> bool:
    """Same words, or one says nothing the other does not ("Retry with backoff." after
    "Clients may retry with exponential backoff and jitter.")."""
    if dup_key(a.text) == dup_key(b.text):
        return True
    sa, sb = set(a.terms), set(b.terms)
    shared = len(sa & sb)
    if shared / max(1, len(sa | sb)) >= 0.8:
        return True
    smaller = min(len(sa), len(sb))
    return smaller >= 3 and shared / smaller >= 0.8


def _select(ranked: Sequence[tuple[float, Sentence]], k: int) -> list[Sentence]:
    chosen: list[Sentence] = []
    for _, s in ranked:
        if len(chosen) >= k:
            break
        if not any(_near_duplicate(s, c) for c in chosen):
            chosen.append(s)
    return chosen


def fact_points(an: TextAnalysis, rt: int, ph: Phrases = ENGLISH) -> list[str]:
    """Points that are true of any text, used when it has too few sentences of its own;
    worded in ``ph``'s language."""
    facts = [
        ph.length.format(
            length=ph.length_of(an.words, an.unspaced_chars, an.chars), reading=ph.reading(rt)
        ),
        ph.structure.format(
            sentences=ph.count(len(an.sentences), "sentence"),
            paragraphs=ph.count(an.paragraphs, "paragraph"),
        ),
    ]
    top = an.top_terms(5)
    if top:
        terms = ", ".join(f"{an.surface[t]} ({c}×)" for t, c in top)
        facts.append(ph.frequent_terms.format(terms=terms))
    else:
        facts.append(ph.no_words.format(snippet=quote(an.snippet, 200)))
    return facts


def _clause_points(sentences: Sequence[Sentence], s_lang: str | None) -> list[str]:
    out: list[str] = []
    for s in sentences:
        clauses = [c.strip(" ,;:，、；：") for c in split_clauses(s.text)]
        if len(clauses) > 1:
            out.extend(c for c in clauses if len(tokenize(c, s_lang).terms) >= 2)
    return out


def _intent_relevance(an: TextAnalysis, intent: Intent, best: Sentence | None, ph: Phrases) -> str:
    """Say concretely how the text serves the intent: which terms, how often, where."""
    topics = (
        ", ".join(an.surface[t] for t, _ in (an.topics(3) or an.top_terms(3)))
        or ph.no_identifiable_topic
    )
    goal = ph.goal(intent.raw)
    if not intent.terms:
        return ph.rel_no_topic.format(goal=goal, topics=topics)
    kind, m = band(an, intent)
    assert m is not None
    if kind == "unrelated":
        return ph.rel_unrelated.format(missing=names(m.missing, ph=ph), topics=topics, goal=goal)
    if kind != "related":
        return ph.rel_unknown.format(goal=goal, missing=names(m.missing, ph=ph), topics=topics)
    verdict = ph.rel_serves if m.coverage >= WEAK_COVERAGE else ph.rel_shares_little
    text = verdict.format(
        goal=goal,
        found=len(m.found),
        total=len(m.found) + len(m.missing),
        evidence=evidence(m.found, ph=ph),
    )
    if m.missing:
        text += ph.rel_but_not.format(missing=names(m.missing, 4, ph))
    text += "."
    if best is not None:
        text += ph.rel_passage.format(passage=ph.quoted(trim(normalize_space(best.text), 200)))
    return text


def _tl_dr(chosen: Sequence[Sentence]) -> tuple[str, list[Sentence]]:
    """The best sentence, plus the runner-up when both fit; always in reading order.

    Finished sentences are preferred: a heading reads badly as a summary.
    """
    complete = [
        s for s in chosen if is_complete(s.text) and (s.words >= 4 or s.unspaced_chars >= 8)
    ]
    chosen = complete or chosen
    first = chosen[0]
    used = [first]
    if len(chosen) > 1 and len(first.text) < 140:
        second = chosen[1]
        if len(first.text) + 1 + len(second.text) <= TL_DR_MAX:
            used.append(second)
    used.sort(key=lambda s: s.index)
    return trim(join_sentences(s.text for s in used), TL_DR_MAX), used


def _key_points(
    an: TextAnalysis,
    lang: str | None,
    ranked: Sequence[tuple[float, Sentence]],
    chosen: Sequence[Sentence],
    used: Sequence[Sentence],
) -> list[str]:
    """3-7 distinct points: finished sentences (no headings, bylines or captions) by rank,
    then their clauses, then the tl;dr's own sentences, then headings, and only for a text
    too short for any of that, facts about the text."""
    k = min(6, 3 + len(an.sentences) // 15)
    good = [s for s in chosen if _is_point(s)]
    if len(good) < k:
        more = _select([(v, s) for v, s in ranked if _is_point(s) and s not in good], 2 * k)
        good += [s for s in more if not any(_near_duplicate(s, g) for g in good)]
    rest = [s for s in good if s not in used]
    body = sorted(rest[:k] if len(rest) >= 3 else good[:k], key=lambda s: s.index)
    points = dedupe((trim(s.text, LINE_MAX) for s in body), 7)
    if len(points) < 3:
        clauses = (trim(c, LINE_MAX) for c in _clause_points(good, an.lang))
        points = dedupe([*points, *clauses], 3)
    if len(points) < 3:
        headings = (trim(s.text, LINE_MAX) for s in chosen if s.words >= 3)
        points = dedupe([*points, *headings], 3)
    if len(points) < 3:
        # The facts are >= 3 mutually distinct strings, so this always reaches 3.
        ph = phrases_for(an.lang or lang)
        points = dedupe([*points, *fact_points(an, an.reading_time_min, ph)], 7)
    return points


def summarize_text(inp: EngineInput) -> Summary:
    """An extractive, intent-aware summary of ``inp.text``."""
    an = analyze(inp.text)
    intent = parse_intent(inp.intent, an.lang)
    ranked = _rank(an, intent)
    chosen = _select(ranked, 8)
    if chosen:
        tl_dr, used = _tl_dr(chosen)
    else:
        tl_dr = trim(
            f"A text of {plural(an.chars, 'symbol')} without words: {quote(an.snippet, 200)}",
            TL_DR_MAX,
        )
        used = []
    wanted = set(intent.terms)
    best = next((s for _, s in ranked if wanted.intersection(s.terms)), None)
    return Summary(
        tl_dr=tl_dr,
        key_points=_key_points(an, inp.lang, ranked, chosen, used),
        intent_relevance=trim(
            _intent_relevance(an, intent, best, phrases_for(an.lang or inp.lang)), RELEVANCE_MAX
        ),
        reading_time_min=an.reading_time_min,
        lang=inp.lang or an.lang,
    )
