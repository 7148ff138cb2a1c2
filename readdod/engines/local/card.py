"""The card, assembled from the earlier payloads; only its title may come from the text."""

from __future__ import annotations

from typing import Final

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import TextAnalysis, analyze
from readdod.engines.local.summary import fact_points
from readdod.engines.local.wording import dup_key, normalize_space, trim
from readdod.models import TL_DR_MAX, Card, CardSource, RenderSpec, Score, Summary, Todos
from readdod.text import join_sentences, split_sentences

CARD_TITLE_MAX: Final = 300
CARD_SECTIONS: Final = ("one_liner", "summary", "key_points", "todos", "reasons", "source")


def display_title(inp: EngineInput, an: TextAnalysis) -> str:
    """The given title, else the first sentence, else a snippet of the text."""
    title = normalize_space(inp.title or "")
    if title:
        return trim(title, CARD_TITLE_MAX)
    wordy = (s for s in an.sentences if not s.code and (s.words >= 3 or s.unspaced_chars >= 6))
    first = next(wordy, an.sentences[0] if an.sentences else None)
    return trim(first.text if first else an.snippet, 120)


def build_card(inp: EngineInput, summary: Summary, score: Score, todos: Todos) -> Card:
    """Assemble the card from the earlier payloads; only the title may come from the text."""
    an = analyze(inp.text)
    tl_dr = normalize_space(summary.tl_dr)
    first = next(iter(split_sentences(tl_dr)), tl_dr)
    balanced = first.count("“") == first.count("”")
    one_liner = first if len(first) >= 20 and balanced else tl_dr
    # One more point makes the summary richer, but never a statistic about the text.
    facts = {dup_key(f) for f in fact_points(an, an.reading_time_min)}
    extra = next(
        (p for p in summary.key_points if p.strip() not in tl_dr and dup_key(p) not in facts),
        None,
    )
    body = join_sentences([tl_dr, extra or ""])
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
