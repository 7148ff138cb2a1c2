"""The score from judgements a small model makes reliably. Pure: no I/O.

Asked for a number from 0 to 100, a small model (0.5-1.5B parameters) writes
back the number its prompt shows as an example, for a matching intent and an
unrelated one alike. So the model is asked only what it can judge: whether
the text addresses the intent (``yes``, ``partly`` or ``no``), with the
sentence of the text that shows it, and which parts of the intent the text
covers. :func:`combine` turns those judgements into the ``Score`` a card
shows: ``match_score``, priority, recommendation and reasons.

The evidence is checked against the text: a sentence that is not in it (a
model's invention, or an echo of the intent) does not count, and the
coverage then moves the score half as far within the verdict's band.

With the article in its context, a small model says ``yes`` to almost any
intent (a running plan "addresses" choosing a database). So a second, short
question is asked without the article: the text's title and lead (with the
one later sentence nearest the goal, :func:`passage`), the reader's goal,
and "is the text about the subject of the goal?", answered with one word
whose probability the server reports (``logprobs``). That probability
(:class:`Relevance`) ranks intents far more reliably than the word itself;
the judgements above give the reasons. A server that gives no probabilities
gives the word, which confirms or tempers the verdict.

A small model also says ``yes`` more readily to some goals than to others,
whatever the text: for "fix a leaking kitchen tap" beside a text on sleep
and memory, Qwen2.5 1.5B said yes at 0.66, above some texts that did serve
their goal. So each question is asked twice, about the text and about an
empty one ("N/A"); what the text adds, the log-odds of ``yes`` with it less
those without it (the *lift*), is what counts. Two questions are asked ("is
it about the goal's subject?", "would it help with the goal?") and their
lifts averaged, which halves the spread of one question's noise. The lift
sets ``match_score`` through :data:`LIFT_SCALE`.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Final, Literal

import msgspec

from readdod.items.models import Priority, Recommendation, Score
from readdod.text import is_unspaced

Judgement = Literal["yes", "partly", "no"]

#: How much each judgement counts towards covering the intent.
WEIGHT: Final[dict[str, float]] = {"yes": 1.0, "partly": 0.5, "no": 0.0}
#: The share of the evidence's words that must occur in the text for it to count.
GROUNDED: Final = 0.6
#: ``match_score`` = floor + span * coverage, per verdict: a ``yes`` scores 60-100 (read),
#: a ``partly`` 35-59, a ``no`` 0-25, below the default skip threshold (40).
BANDS: Final[dict[str, tuple[int, int]]] = {"yes": (60, 40), "partly": (35, 24), "no": (0, 25)}
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
#: ``match_score`` = 50 + (p - centre) * slope from the relevance probability p: with
#: Qwen2.5 1.5B, texts about the goal's subject gave p >= 0.76 and unrelated texts
#: p <= 0.66 on the pairs of ``bench/data/score_pairs.json``; the centre lies between.
RELEVANCE_SCALE: Final = (0.70, 125.0)
#: ``match_score`` = 100 * sigmoid(slope * (lift - centre)) from the lift (log-odds): with
#: Qwen2.5 1.5B and the passage of :func:`passage`, the texts of
#: ``bench/data/score_pairs.json`` and the golden pairs lifted the goals they serve by 0.71
#: or more and unrelated goals by 0.51 or less; the centre lies between, and the slope puts
#: both sides of it past the read (60) and skip (40) marks.
LIFT_SCALE: Final = (0.61, 4.5)
#: How sure a probability may be, so that a certain answer has finite log-odds.
_SURE: Final = 1e-4
#: Characters of the text's lead the relevance question shows.
LEAD_CHARS: Final = 400
#: Characters of the one later sentence nearest the goal it shows beside the lead.
NEAR_CHARS: Final = 250
#: Characters of the text searched for that sentence: about 10,000 words, a long article,
#: searched in tens of milliseconds; a book-length text would hold the event loop.
NEAR_SCAN_CHARS: Final = 60_000
_YES: Final = frozenset({"yes"})
_NO: Final = frozenset({"no"})


class Relevance(msgspec.Struct, frozen=True):
    """The answer to the short questions: ``p``, the probability of ``yes``; ``graded``
    is False when the server gave only the word (p is then 1 or 0); ``lift``, the
    log-odds the text adds to ``yes`` (:func:`lifted`), when the questions were also
    asked without it."""

    p: float
    graded: bool
    lift: float | None = None


def log_odds(p: float) -> float:
    p = min(max(p, _SURE), 1.0 - _SURE)
    return math.log(p / (1.0 - p))


def lifted(answers: list[tuple[Relevance, Relevance | None]]) -> Relevance | None:
    """The questions' answers about the text, each with its answer about an empty text,
    as one: the mean probability, and the mean lift where every answer has both
    probabilities. The first answer alone when a server gave only words."""
    if not answers:
        return None
    if not all(said.graded for said, _ in answers):
        return answers[0][0]
    p = sum(said.p for said, _ in answers) / len(answers)
    priors = [prior for _, prior in answers if prior is not None and prior.graded]
    if len(priors) < len(answers):
        return Relevance(p=p, graded=True)
    lift = sum(
        log_odds(said.p) - log_odds(prior.p)
        for (said, _), prior in zip(answers, priors, strict=True)
    )
    return Relevance(p=p, graded=True, lift=lift / len(answers))


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The text's first sentences, up to ``limit`` characters: what the relevance question
    shows of it."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("。"), cut.rfind("! "), cut.rfind("? "))
    return cut[: end + 1] if end > limit // 3 else cut.rstrip() + "…"


def passage(text: str, goal: str) -> str:
    """What the short questions show of the text: its lead and, after it, the one later
    sentence that shares the most of the goal's words (:func:`_terms`), so a
    text whose opening is about something broader still shows the part that serves the
    goal. The lead alone when no later sentence shares a word. Only the text's first
    :data:`NEAR_SCAN_CHARS` characters are searched."""
    text = " ".join(text[:NEAR_SCAN_CHARS].split())
    opening = lead(text)
    terms = _terms(goal)
    rest = text[len(opening.rstrip("…")) :]
    best, shared = "", 0
    for sentence in _SENTENCE_END.split(rest):
        hits = len(terms & _terms(sentence))
        if hits > shared:
            best, shared = sentence.strip(), hits
    if not best:
        return opening
    near = best if len(best) <= NEAR_CHARS else best[:NEAR_CHARS].rstrip() + "…"
    return f"{opening} … {near}"


def relevance(first_tokens: list[tuple[str, float]], word: str) -> Relevance | None:
    """The probability of ``yes`` from the answer's likeliest first tokens (against ``no``);
    from the answer's word alone when the server gave none; None when neither says."""
    yes = sum(math.exp(lp) for t, lp in first_tokens if t.strip().casefold() in _YES)
    no = sum(math.exp(lp) for t, lp in first_tokens if t.strip().casefold() in _NO)
    if yes + no > 0:
        return Relevance(p=yes / (yes + no), graded=True)
    said = (_WORD.findall(word.casefold()) or [""])[0]
    if said in _YES:
        return Relevance(p=1.0, graded=False)
    if said in _NO:
        return Relevance(p=0.0, graded=False)
    return None


def relevance_score(rel: Relevance) -> int:
    """``match_score`` from the lift; from the probability alone when the questions could
    not be asked without the text."""
    if rel.lift is not None:
        centre, slope = LIFT_SCALE
        return round(100.0 / (1.0 + math.exp(-slope * (rel.lift - centre))))
    centre, slope = RELEVANCE_SCALE
    return max(0, min(100, round(50 + (rel.p - centre) * slope)))


class IntentPart(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One part of the intent and whether the text covers it."""

    part: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    covered: Judgement


class ScoreJudgement(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the model is asked for in the score step; readdod computes the rest.

    The fields are in the order a model writes them: the intent taken apart
    first, then the verdict, then the sentence that shows it.
    """

    parts: Annotated[list[IntentPart], msgspec.Meta(min_length=1, max_length=5)]
    addresses: Judgement
    evidence: Annotated[str, msgspec.Meta(max_length=600)] = ""


def _terms(text: str) -> set[str]:
    """Words of 4+ characters, and character pairs of scripts written without spaces."""
    out: set[str] = set()
    for token in _WORD.findall(text.casefold()):
        if any(is_unspaced(ch) for ch in token):
            out.update(token[i : i + 2] for i in range(len(token) - 1))
        elif len(token) >= 4:
            out.add(token)
    return out


def grounded(evidence: str, text: str) -> bool:
    """Whether ``evidence`` is taken from ``text``: most of its words occur there."""
    words = _terms(evidence)
    if len(words) < 2:
        return False
    return len(words & _terms(text)) / len(words) >= GROUNDED


def coverage(parts: list[IntentPart]) -> float:
    """The share of the intent the text covers, 0 to 1."""
    return sum(WEIGHT[p.covered] for p in parts) / len(parts) if parts else 0.0


def verdict(j: ScoreJudgement, text: str) -> Judgement:
    """The model's verdict, checked against its own parts: a ``yes`` with no part of the
    intent covered is a ``partly``; a ``no`` with every part covered and a sentence from
    the text to show it is a ``partly`` too (the model contradicts itself: the middle is
    kept)."""
    v: Judgement = j.addresses
    if v == "yes" and coverage(j.parts) == 0.0:
        v = "partly"
    if v == "no" and grounded(j.evidence, text) and all(p.covered == "yes" for p in j.parts):
        v = "partly"
    return v


def match_score(j: ScoreJudgement, text: str, rel: Relevance | None = None) -> int:
    """From the relevance probability when the server gave one; otherwise the verdict's
    band, moved within it by the intent's coverage (a verdict without a sentence from the
    text to show it gets half the coverage's share: small models often describe rather than
    quote, so the verdict itself is kept). A relevance word that contradicts the verdict
    leaves the middle band."""
    if rel is not None and rel.graded:
        return relevance_score(rel)
    v = verdict(j, text)
    if rel is not None and (v == "yes") != (rel.p >= 0.5):
        v = "partly"
    floor, span = BANDS[v]
    share = coverage(j.parts) * (1.0 if grounded(j.evidence, text) else 0.5)
    return floor + round(span * share)


def priority_for(score: int) -> Priority:
    return "P1" if score >= 80 else "P2" if score >= 60 else "P3"


def recommendation_for(score: int) -> Recommendation:
    return "read" if score >= 60 else "skim" if score >= 40 else "skip"


_SAID: Final[dict[str, str]] = {
    "yes": "The text addresses the intent",
    "partly": "The text addresses the intent in part",
    "no": "The text does not address the intent",
}
_COVERED: Final[dict[str, str]] = {
    "yes": "Covered",
    "partly": "Partly covered",
    "no": "Not covered",
}


def reasons(
    j: ScoreJudgement, text: str, reading_min: int, rel: Relevance | None = None
) -> list[str]:
    """At least three distinct reasons, each a judgement the score was made from."""
    v = verdict(j, text)
    evidence = " ".join(j.evidence.split())
    first = _SAID[v]
    if evidence and grounded(evidence, text):
        first += f": “{evidence[:400]}”"
    elif j.addresses != v:
        first += f" (the model said {j.addresses!r}, against its own parts)"
    out = [first]
    if rel is not None:
        said = f"{rel.p:.0%} yes" if rel.graded else ("yes" if rel.p >= 0.5 else "no")
        if rel.lift is not None:
            said += f", {rel.lift:+.2f} log-odds over the same questions without the text"
        out.append(f"Asked whether the text is about the intent's subject: {said}")
    for p in j.parts:
        out.append(f"{_COVERED[p.covered]}: {' '.join(p.part.split())}")
    n = sum(1 for p in j.parts if p.covered != "no")
    out.append(f"{n} of {len(j.parts)} parts of the intent covered")
    out.append(f"About {max(reading_min, 1)} min to read")
    seen: set[str] = set()
    unique = []
    for r in out:
        key = r.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            unique.append(r[:500])
    return unique[:10]


def combine(j: ScoreJudgement, text: str, reading_min: int, rel: Relevance | None = None) -> Score:
    """The score step's payload from the model's judgements."""
    score = match_score(j, text, rel)
    return Score(
        match_score=score,
        priority=priority_for(score),
        reasons=reasons(j, text, reading_min, rel),
        recommendation=recommendation_for(score),
    )
