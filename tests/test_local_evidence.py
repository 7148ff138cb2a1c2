"""The local engine's score rests on evidence: stems, weights, and three honest bands."""

from __future__ import annotations

import anyio

from readdod.engines.base import EngineInput
from readdod.engines.local import NEUTRAL_SCORE, LocalEngine
from readdod.engines.local.analysis import analyze
from readdod.engines.local.intent import match_intent, parse_intent
from readdod.engines.local.phrases import PHRASES
from readdod.evaluation.runner import load_pairs
from readdod.items.models import Card, Score


def _run(text: str, intent: str, title: str | None = None) -> tuple[Score, Card]:
    async def go() -> tuple[Score, Card]:
        engine = LocalEngine()
        inp = EngineInput(text=text, intent=intent, title=title)
        summary = (await engine.summarize(inp)).payload
        score = (await engine.score(inp, summary)).payload
        todos = (await engine.todos(inp, summary, score)).payload
        card = (await engine.card(inp, summary, score, todos)).payload
        return score, card

    return anyio.run(go)


def _pair(pid: str) -> str:
    return next(p.text for p in load_pairs() if p.case.id == pid)


def test_stems_let_inflected_intents_match() -> None:
    score, _ = _run(_pair("tomatoes-en"), "grow tomatoes in my garden")
    assert score.recommendation == "read"
    assert "“tomatoes”" in score.reasons[0] or "“Tomatoes”" in score.reasons[0]
    # A Russian page that is the very list the intent asks for is read, not skipped.
    books, _ = _run(_pair("knigi-ru"), "список книг, чтобы научиться программировать")
    assert books.recommendation == "read"


def test_common_words_count_for_little() -> None:
    text = _pair("tomatoes-en") + "\n\nThis new year we offer a new plot to every member."
    common, _ = _run(text, "new offer this year")
    rare, _ = _run(text, "tomato blight")
    assert common.match_score < rare.match_score
    assert common.recommendation != "read"
    # "new" and "year" are among the commonest words: no evidence at all; "offer" little.
    assert "“new”" not in common.reasons[0] and "“year”" not in common.reasons[0]
    assert "“offer” 1× (weight 0.40)" in common.reasons[0]


def test_a_reason_states_each_shared_word_with_its_count_and_weight() -> None:
    score, _ = _run(_pair("tomatoes-en"), "tomato blight")
    first = score.reasons[0]
    assert first.startswith("Shared words, weighted by how rare they are:")
    assert "“blight” 2× (weight 1.00)" in first


def test_no_shared_words_in_a_short_text_is_no_evidence_and_never_archived() -> None:
    text = (
        "Rehearse out loud three times with a timer. Look at three friendly faces and speak "
        "to them in turn. End with a clear request rather than a list of questions."
    )
    score, card = _run(text, "give a better conference presentation")
    assert score.match_score == NEUTRAL_SCORE >= 40  # the default skip_below
    assert score.recommendation == "skim"
    assert score.reasons[0].startswith("No shared meaning the offline engine can see")
    assert "cannot tell a paraphrase from a mismatch" in score.reasons[1]
    assert "found no words this text shares with your intent" in card.summary


def test_a_long_text_clearly_about_other_things_is_skipped_on_that_evidence() -> None:
    score, card = _run(_pair("public-speaking-en"), "choose a mortgage with a low interest rate")
    assert score.match_score < 40 and score.recommendation == "skip"
    assert score.reasons[0].startswith("No shared meaning found")
    assert "clearly about other things" in score.reasons[1] and "“audience”" in score.reasons[1]
    assert "not for lacking shared words alone" in score.reasons[2]
    assert "no words this text shares" not in card.summary


def test_an_intent_in_another_language_is_no_evidence_either_way() -> None:
    score, _ = _run(_pair("sauerteig-de"), "choose a mortgage with a low interest rate")
    assert score.match_score == NEUTRAL_SCORE
    # Said in the text's language, as every reason the engine words itself.
    assert PHRASES["de"].why_foreign.format(own="en", lang="de") in score.reasons[0]


def test_a_term_inside_a_compound_counts_half() -> None:
    text = (
        _pair("sauerteig-de")
        .replace("ein Brot,", "einen Laib,")
        .replace("Backen Sie das Brot", "Backen Sie den Laib")
    )
    text = text.replace("Das Brot ist fertig", "Der Laib ist fertig")
    an = analyze(text)
    m = match_intent(an, parse_intent("Brot", an.lang))
    assert [(h.label, h.partial) for h in m.found] == [("Brot", True)]  # in "Sauerteigbrot"
    full = match_intent(analyze(_pair("sauerteig-de")), parse_intent("Brot", "de"))
    assert full.shared == 2 * m.shared


def test_matching_intents_outrank_unrelated_ones_on_the_pairs() -> None:
    ranked = 0
    for p in load_pairs():
        match, _ = _run(p.text, p.case.intent)
        other, _ = _run(p.text, p.case.unrelated_intent)
        assert match.match_score >= 40, p.case.id  # never a false skip on the pairs
        ranked += match.match_score > other.match_score
    assert ranked >= 16
