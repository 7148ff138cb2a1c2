"""What `readdod eval` checks on one page's outputs. Pure: no I/O.

Schema and rubric come from :func:`readdod.steps.rubric.validate` (the same check the
READY gate runs); the quality checks added here are engine-neutral:

- grounding: the tl;dr and the key points are made of the article's words
  (share of their tokens found in the article, at least :data:`MIN_OVERLAP`);
- ranking: the page's matching intent scores strictly higher than an
  unrelated intent for the same page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from readdod.steps import GATED, rubric
from readdod.text.scripts import HANGUL, UNSPACED

#: Minimum share of a tl;dr's (or the key points' mean) tokens that occur in the article.
MIN_OVERLAP: Final = 0.6

# Scripts written without spaces count per character, and so does hangul: a Korean word
# carries its particle (서울은, 서울에), so its syllables match where whole words would not.
_BY_CHARACTER: Final = UNSPACED + HANGUL
_TOKEN_RE: Final = re.compile(f"[{_BY_CHARACTER}]|[^\\W_{_BY_CHARACTER}]+")
# Words so common that sharing them proves nothing; other languages count every word.
_COMMON: Final = frozenset(
    {
        *("the", "and", "for", "with", "that", "this", "from", "are", "was", "were"),
        *("you", "your", "our", "not", "but", "have", "has", "had", "its"),
    }
)


def tokens(text: str) -> list[str]:
    """Casefolded words (CJK, kana, hangul, Thai: characters), minus one-letter and common words."""
    out = []
    for tok in _TOKEN_RE.findall(text.casefold()):
        if len(tok) == 1 and not re.fullmatch(f"[{_BY_CHARACTER}]", tok):
            continue
        if tok in _COMMON:
            continue
        out.append(tok)
    return out


def overlap(part: str, source: frozenset[str]) -> float:
    """Share of ``part``'s tokens that occur in ``source``; 0.0 for a part without tokens."""
    toks = tokens(part)
    if not toks:
        return 0.0
    return sum(1 for t in toks if t in source) / len(toks)


class PageCheck(msgspec.Struct, kw_only=True):
    """The verdict on one page: problems (empty when it passes) and the figures behind it."""

    problems: list[str]
    tl_dr_overlap: float | None = None
    key_point_overlap: float | None = None
    match_score: int | None = None
    unrelated_score: int | None = None

    @property
    def passed(self) -> bool:
        return not self.problems


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def check_page(
    article: str,
    matching: Mapping[str, Any],
    unrelated: Mapping[str, Any],
    *,
    min_overlap: float = MIN_OVERLAP,
    todos: bool = True,
) -> PageCheck:
    """Judge one page.

    ``matching`` maps each AI step to its raw payload (builtins or JSON) for
    the page's own intent; ``unrelated`` holds at least ``summary`` and
    ``score`` for an intent the page does not serve. A missing step is a
    problem, not an exception: the engine failing is what eval is there to see.
    Without ``todos`` the matching intent needs only summary and score too.
    """
    problems: list[str] = []
    decoded: dict[str, Any] = {}
    for label, outputs, steps in (
        ("", matching, GATED if todos else ("summary", "score")),
        ("unrelated intent: ", unrelated, ("summary", "score")),
    ):
        for step in steps:
            if step not in outputs:
                problems.append(f"{label}{step} is missing")
                continue
            payload, found = rubric.validate(step, outputs[step])
            problems.extend(f"{label}{p}" for p in found)
            if payload is not None:
                decoded[label + step] = payload

    check = PageCheck(problems=problems)
    source = frozenset(tokens(article))
    summary = decoded.get("summary")
    if summary is not None:
        check.tl_dr_overlap = round(overlap(summary.tl_dr, source), 3)
        check.key_point_overlap = round(_mean(overlap(k, source) for k in summary.key_points), 3)
        if check.tl_dr_overlap < min_overlap:
            problems.append(
                f"tl_dr is not from the text: {check.tl_dr_overlap:.0%} of its words occur in "
                f"the article (need {min_overlap:.0%})"
            )
        if check.key_point_overlap < min_overlap:
            problems.append(
                f"key points are not from the text: {check.key_point_overlap:.0%} of their words "
                f"occur in the article on average (need {min_overlap:.0%})"
            )
    score = decoded.get("score")
    other = decoded.get("unrelated intent: score")
    if score is not None:
        check.match_score = score.match_score
    if other is not None:
        check.unrelated_score = other.match_score
    if score is not None and other is not None and score.match_score <= other.match_score:
        problems.append(
            f"the matching intent scores {score.match_score}, not above the unrelated "
            f"intent's {other.match_score}"
        )
    return check
