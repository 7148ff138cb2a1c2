"""The card, assembled from the earlier payloads; only its title may come from the text."""

from __future__ import annotations

from typing import Final

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import TextAnalysis, analyze
from readdod.engines.local.intent import parse_intent
from readdod.engines.local.phrases import ENGLISH, phrases_for
from readdod.engines.local.score import band
from readdod.engines.local.summary import fact_points
from readdod.engines.local.wording import dup_key, normalize_space, trim
from readdod.items.models import TL_DR_MAX, Card, CardSource, RenderSpec, Score, Summary, Todos
from readdod.text import join_sentences, split_clauses, split_sentences

CARD_TITLE_MAX: Final = 300
#: Said on the card when the engine can see no shared meaning either way (in English; each
#: language's own is in :mod:`.phrases`).
UNKNOWN_NOTE: Final = ENGLISH.unknown_note
CARD_SECTIONS: Final = ("one_liner", "summary", "key_points", "todos", "reasons", "source")


#: Longest title made from the text itself.
TEXT_TITLE_MAX: Final = 120


def _shorten(s: str, limit: int) -> str:
    """``s`` within ``limit``: its first clause when that fits, else whole words; never an
    ellipsis, which would store a title that looks cut."""
    s = normalize_space(s).removesuffix("…")
    if len(s) <= limit:
        return s
    clause = split_clauses(s)[0].rstrip(" ,;:")
    if 20 <= len(clause) <= limit:
        return clause
    head = s[: limit + 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else s[:limit]).rstrip(" ,;:-–—")


def display_title(inp: EngineInput, an: TextAnalysis) -> str:
    """The given title, else the first sentence, else the opening of the text."""
    title = normalize_space(inp.title or "")
    if title and normalize_space(inp.text).startswith(title):
        # A note's opening taken for its title: its first sentence, never the whole note.
        title = next(iter(split_sentences(title)), title)
    if title:
        return _shorten(title, CARD_TITLE_MAX)
    wordy = (s for s in an.sentences if not s.code and (s.words >= 3 or s.unspaced_chars >= 6))
    first = next(wordy, an.sentences[0] if an.sentences else None)
    return _shorten(first.text if first else an.snippet, TEXT_TITLE_MAX)


def build_card(inp: EngineInput, summary: Summary, score: Score, todos: Todos) -> Card:
    """Assemble the card from the earlier payloads; only the title may come from the text."""
    an = analyze(inp.text)
    ph = phrases_for(an.lang or inp.lang)
    tl_dr = normalize_space(summary.tl_dr)
    first = next(iter(split_sentences(tl_dr)), tl_dr)
    balanced = first.count("“") == first.count("”")
    one_liner = first if len(first) >= 20 and balanced else tl_dr
    # One more point makes the summary richer, but never a statistic about the text.
    facts = {dup_key(f) for f in fact_points(an, an.reading_time_min, ph)}
    extra = next(
        (p for p in summary.key_points if p.strip() not in tl_dr and dup_key(p) not in facts),
        None,
    )
    body = join_sentences([tl_dr, extra or ""])
    if band(an, parse_intent(inp.intent, an.lang))[0] == "unknown":
        body = join_sentences([body, ph.unknown_note])
    return Card(
        title=display_title(inp, an),
        one_liner=trim(one_liner or summary.tl_dr, TL_DR_MAX),
        summary=body,
        key_points=list(summary.key_points),
        todos=list(todos.items),
        priority=score.priority,
        match_score=score.match_score,
        tags=list(inp.tags),
        source=CardSource(url=inp.url, title=inp.title, site_name=inp.site_name),
        render_spec=RenderSpec(template="card", version="card.v1", sections=list(CARD_SECTIONS)),
    )
