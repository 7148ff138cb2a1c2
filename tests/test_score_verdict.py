"""The score made by readdod from a model's judgements (``engines/openai/verdict.py``)."""

from __future__ import annotations

import json

import pytest

from readdod import rubric
from readdod.engines.openai.answers import judge, struct_schema
from readdod.engines.openai.verdict import IntentPart, ScoreJudgement, combine, grounded

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
