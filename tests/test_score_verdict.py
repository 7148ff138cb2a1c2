"""The score made by readdod from a model's judgements (``engines/openai/verdict.py``)."""

from __future__ import annotations

import json
import math

import pytest

from readdod.engines.openai.answers import judge, struct_schema
from readdod.engines.openai.verdict import (
    LEAD_CHARS,
    NEAR_CHARS,
    NEAR_SCAN_CHARS,
    IntentPart,
    Relevance,
    ScoreJudgement,
    combine,
    grounded,
    lead,
    lifted,
    passage,
    relevance,
    relevance_score,
)
from readdod.steps import rubric

TEXT = (
    "SQLite in WAL mode lets readers and a writer work at the same time. To enable it, run"
    " PRAGMA journal_mode=WAL once; the setting persists in the database file. With"
    " synchronous=FULL every commit is durable, even after a power loss."
)


def _j(addresses: str, evidence: str, *covered: str) -> ScoreJudgement:
    parts = [IntentPart(part=f"part {i}", covered=c) for i, c in enumerate(covered)]  # type: ignore[arg-type]
    return ScoreJudgement(parts=parts, addresses=addresses, evidence=evidence)  # type: ignore[arg-type]


QUOTE = "To enable it, run PRAGMA journal_mode=WAL once"


def test_a_matching_text_with_its_sentence_scores_high_and_is_read() -> None:
    score = combine(_j("yes", QUOTE, "yes", "yes"), TEXT, 1)
    assert score.match_score == 100
    assert (score.priority, score.recommendation) == ("P1", "read")
    assert any("journal_mode=WAL" in r for r in score.reasons)
    assert rubric.check(score) == []


def test_coverage_moves_the_score_within_its_verdict() -> None:
    full = combine(_j("yes", QUOTE, "yes", "yes"), TEXT, 1).match_score
    half = combine(_j("yes", QUOTE, "yes", "no"), TEXT, 1).match_score
    partly = combine(_j("partly", QUOTE, "partly", "no"), TEXT, 1).match_score
    assert full > half >= 60 > partly >= 35


def test_a_no_that_covers_every_part_with_a_quote_is_taken_as_partly() -> None:
    assert 40 <= combine(_j("no", QUOTE, "yes", "yes"), TEXT, 1).match_score < 60


def test_an_unrelated_intent_scores_below_the_skip_threshold() -> None:
    score = combine(_j("no", "", "no", "no"), TEXT, 1)
    assert score.match_score < 40
    assert score.recommendation == "skip"
    assert rubric.check(score) == []
    assert len(set(score.reasons)) >= 3


def test_a_verdict_without_a_sentence_from_the_text_moves_half_as_far() -> None:
    """A small model often describes instead of quoting: its verdict stands, its coverage
    counts half."""
    described = "The text tells the reader how to make their writes durable."
    invented = combine(_j("yes", described, "yes"), TEXT, 1).match_score
    backed = combine(_j("yes", QUOTE, "yes"), TEXT, 1).match_score
    assert 60 <= invented < backed
    assert combine(_j("partly", "", "yes"), TEXT, 1).match_score < 50
    assert combine(_j("no", "", "yes", "no"), TEXT, 1).match_score < 40


def test_a_yes_with_no_part_covered_is_partly_at_most() -> None:
    assert combine(_j("yes", QUOTE, "no", "no"), TEXT, 1).match_score < 60


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [(QUOTE, True), ("journal_mode", False), ("", False), ("Plant tomatoes in spring sun", False)],
)
def test_evidence_is_grounded_only_when_taken_from_the_text(evidence: str, expected: bool) -> None:
    assert grounded(evidence, TEXT) is expected


def test_the_models_answer_is_judged_as_a_judgement_not_as_a_score() -> None:
    """The score step asks for judgements: an answer with them passes, a bare number fails."""
    schema = struct_schema(ScoreJudgement)
    good = json.dumps(
        {
            "parts": [{"part": "durable writes", "covered": "yes"}],
            "addresses": "yes",
            "evidence": QUOTE,
        }
    )
    payload, problems, parsed = judge("score", ScoreJudgement, good, schema=schema)
    assert payload is not None and problems == [] and parsed
    bare = json.dumps({"match_score": 80, "priority": "P1", "reasons": ["a", "b", "c"]})
    payload, problems, parsed = judge("score", ScoreJudgement, bare, schema=schema)
    assert payload is None and problems and parsed


# --- the short relevance question (engines/openai/verdict.py: Relevance) -------------


def test_the_relevance_probability_is_read_from_the_first_tokens_whatever_their_case() -> None:
    top = [("yes", math.log(0.4)), ("Yes", math.log(0.4)), (" no", math.log(0.1)), ("No", -9.0)]
    rel = relevance(top, "yes")
    assert rel is not None and rel.graded
    assert rel.p == pytest.approx(0.8 / (0.8 + 0.1 + math.exp(-9.0)))


def test_without_probabilities_the_word_is_the_answer_and_anything_else_is_none() -> None:
    assert relevance([], "Yes.") == Relevance(p=1.0, graded=False)
    assert relevance([], "no") == Relevance(p=0.0, graded=False)
    assert relevance([("maybe", -0.1)], "Maybe") is None


def test_the_relevance_probability_sets_the_score_against_the_skip_threshold() -> None:
    """Whatever the model's judgements say, the probability decides: an intent the text is
    about is read, an unrelated one falls below the default skip threshold (40)."""
    said_yes = _j("yes", QUOTE, "yes", "yes")
    about = combine(said_yes, TEXT, 1, Relevance(p=0.9, graded=True))
    unrelated = combine(said_yes, TEXT, 1, Relevance(p=0.55, graded=True))
    assert about.match_score >= 60 > 40 > unrelated.match_score
    assert about.recommendation == "read" and unrelated.recommendation == "skip"
    assert any("90% yes" in r for r in about.reasons)
    assert rubric.check(unrelated) == []
    assert relevance_score(Relevance(p=0.0, graded=True)) == 0
    assert relevance_score(Relevance(p=1.0, graded=True)) <= 100


def test_the_lift_over_an_empty_text_sets_the_score_not_the_models_lean() -> None:
    """A small model leans to "yes" for some goals whatever the text: what counts is what
    the text adds to the odds of "yes" over the same question about an empty text."""
    said_yes = _j("yes", QUOTE, "yes", "yes")

    def score(*answers: tuple[float, float]) -> int:
        rel = lifted(
            [(Relevance(p=p, graded=True), Relevance(p=p0, graded=True)) for p, p0 in answers]
        )
        assert rel is not None and rel.lift is not None
        return combine(said_yes, TEXT, 1, rel).match_score

    # Measured with Qwen2.5 1.5B: a goal the text served (0.81 against 0.67 without it) and
    # an unrelated one the model leaned to (0.66 against 0.60).
    served, leaned = score((0.81, 0.67), (0.86, 0.60)), score((0.66, 0.60), (0.55, 0.58))
    assert served >= 60 > 40 > leaned
    # Raw, the leaning goal would have scored as "skim" and the served one only just "read".
    assert 40 <= relevance_score(Relevance(p=0.66, graded=True)) < 60
    # The lifts of the questions are averaged; the scale is monotonic and bounded.
    assert score((0.9, 0.5), (0.5, 0.5)) == score((0.75, 0.5))
    scores = [score((p, 0.6)) for p in (0.01, 0.3, 0.6, 0.7, 0.8, 0.9, 0.99)]
    assert scores == sorted(scores) and scores[0] >= 0 and scores[-1] <= 100


def test_without_an_answer_about_the_empty_text_the_probability_is_read_as_before() -> None:
    yes = Relevance(p=0.9, graded=True)
    assert lifted([(yes, None)]) == Relevance(p=0.9, graded=True)
    # A server that gives only words: the first word answers.
    word = Relevance(p=1.0, graded=False)
    assert lifted([(word, None), (Relevance(p=0.2, graded=True), yes)]) == word
    assert lifted([]) is None


def test_a_relevance_word_that_contradicts_the_verdict_leaves_the_middle() -> None:
    said_yes = _j("yes", QUOTE, "yes", "yes")
    assert combine(said_yes, TEXT, 1, Relevance(p=1.0, graded=False)).match_score == 100
    tempered = combine(said_yes, TEXT, 1, Relevance(p=0.0, graded=False)).match_score
    assert 35 <= tempered < 60


def test_the_lead_ends_on_a_sentence_and_stays_short() -> None:
    text = " ".join(f"Sentence number {i} says something about WAL." for i in range(40))
    got = lead(text)
    assert len(got) <= LEAD_CHARS and got.endswith(".")
    assert lead("Short.\n\n  Text.") == "Short. Text."


BROAD = " ".join(
    f"Part {i} of this guide covers the history of web servers and their many uses."
    for i in range(12)
)


def test_the_passage_adds_the_later_sentence_nearest_the_goal() -> None:
    """A text that opens broadly shows the lead and the one sentence that serves the goal."""
    served = "A 503 status tells the client the server is overloaded and should retry later."
    text = f"{BROAD} {served} Part 13 closes the guide."
    got = passage(text, "look up what a 503 status from the server means")
    assert got == f"{lead(text)} … {served}"


def test_the_passage_is_the_lead_when_no_later_sentence_shares_the_goals_words() -> None:
    assert passage(BROAD, "bake sourdough bread at home") == lead(BROAD)
    assert passage("Short.\n\n  Text.", "short text") == "Short. Text."


def test_the_passage_keeps_the_first_of_equally_near_sentences_and_cuts_long_ones() -> None:
    long = "Leaking kitchen taps " + "and other words " * 30 + "end."
    text = f"{BROAD} {long} Leaking kitchen taps again."
    near = passage(text, "fix a leaking kitchen tap").split(" … ", 1)[1]
    assert near.startswith("Leaking kitchen taps and other words")
    assert len(near) == NEAR_CHARS + 1 and near.endswith("…")


def test_the_passage_splits_sentences_without_spaces() -> None:
    text = "这是一个很长的开头。" * 60 + "如何修理漏水的厨房水龙头。结束。"
    got = passage(text, "修理漏水的厨房水龙头")
    assert got.endswith("… 如何修理漏水的厨房水龙头。")


def test_the_passage_searches_a_bounded_head_of_the_text() -> None:
    """A book-length text is searched only in its head: the question stays quick."""
    served = "Fix the leaking kitchen tap by replacing its worn washer."
    filler = " ".join(["Nothing to see in this sentence at all."] * (NEAR_SCAN_CHARS // 30))
    assert passage(f"{BROAD} {served} {filler}", "fix a leaking kitchen tap").endswith(served)
    assert passage(f"{BROAD} {filler} {served}", "fix a leaking kitchen tap") == lead(BROAD)
