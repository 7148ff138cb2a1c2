"""How useful an engine's cards are, beyond valid: ranking, false skips, instructions. Pure.

The held-in pairs (``golden/pairs.json``) give each text an intent it serves and
one it does not; how-to texts mark the instructions they give with ``[[...]]``.
From an engine's payloads this module measures:

- ranking: the matching intent scores strictly above the unrelated one;
- false skips: the matching intent scores below the skip threshold, so the
  daemon would archive an item its reader wanted (SYSTEM_SKIP);
- instruction recall: the share of marked instructions that a todo restates
  (at least :data:`MIN_RECALL_OVERLAP` of the instruction's words);
- todos in the text's words, and titles stored cut short (holding a "…").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import msgspec

from readdod.evaluation.checks import tokens

#: Share of an instruction's words a todo must contain to count as restating it.
MIN_RECALL_OVERLAP: Final = 0.6
#: Share of a todo's words found in the text for it to count as taken from the text.
FROM_TEXT_OVERLAP: Final = 0.8
_MARK_RE: Final = re.compile(r"\[\[(.+?)\]\]", re.DOTALL)


def parse_marked(marked: str) -> tuple[str, list[str]]:
    """The text without its ``[[...]]`` marks, and the marked instructions in order."""
    instructions = [" ".join(m.split()) for m in _MARK_RE.findall(marked)]
    return _MARK_RE.sub(lambda m: m.group(1), marked), instructions


def restates(todo: str, instruction: str) -> bool:
    """Whether ``todo`` carries at least :data:`MIN_RECALL_OVERLAP` of the instruction's words."""
    wanted = tokens(instruction)
    if not wanted:
        return False
    have = set(tokens(todo))
    return sum(1 for t in wanted if t in have) / len(wanted) >= MIN_RECALL_OVERLAP


def from_text(todo: str, source: frozenset[str]) -> bool:
    toks = tokens(todo)
    return bool(toks) and sum(1 for t in toks if t in source) / len(toks) >= FROM_TEXT_OVERLAP


class PairReport(msgspec.Struct, kw_only=True):
    """One text judged with its two intents."""

    id: str
    lang: str
    kind: str
    paraphrase: bool
    match_score: int | None = None
    unrelated_score: int | None = None
    match_recommendation: str | None = None
    unrelated_recommendation: str | None = None
    instructions: int = 0
    recalled: int = 0
    missed: list[str] = []
    todos: list[str] = []
    todos_from_text: int = 0
    cut_titles: int = 0
    problems: list[str] = []


def judge_pair(
    report: PairReport,
    text: str,
    instructions: Sequence[str],
    todo_titles: Sequence[str],
) -> PairReport:
    """Fill in what the todos say about the text (recall, words, cut titles)."""
    report.todos = list(todo_titles)
    report.instructions = len(instructions)
    report.missed = [i for i in instructions if not any(restates(t, i) for t in todo_titles)]
    report.recalled = len(instructions) - len(report.missed)
    source = frozenset(tokens(text))
    report.todos_from_text = sum(1 for t in todo_titles if from_text(t, source))
    report.cut_titles = sum(1 for t in todo_titles if "…" in t)
    return report


class QualityFigures(msgspec.Struct, kw_only=True):
    pairs: int
    skip_below: int
    """Scores below this are archived by the daemon (``daemon.skip_below``)."""
    ranked: int
    ranking_rate: float
    false_skips: int
    false_skip_rate: float
    """Matching intents scored below ``skip_below``: items the reader wanted, archived."""
    unrelated_skipped: int
    unrelated_skip_rate: float
    """Unrelated intents scored below ``skip_below``: what skipping is for."""
    howto: int
    howto_with_text_todo: int
    """How-to texts with at least one todo restating one of their instructions."""
    instructions: int
    recalled: int
    instruction_recall: float
    todos: int
    todos_from_text: int
    cut_titles: int


def _rate(n: int, of: int) -> float:
    return round(n / of, 3) if of else 0.0


def quality_figures(reports: Sequence[PairReport], skip_below: int) -> QualityFigures:
    scored = [r for r in reports if r.match_score is not None and r.unrelated_score is not None]
    ranked = sum(1 for r in scored if (r.match_score or 0) > (r.unrelated_score or 0))
    false_skips = sum(
        1 for r in reports if r.match_score is not None and r.match_score < skip_below
    )
    skipped = sum(
        1 for r in reports if r.unrelated_score is not None and r.unrelated_score < skip_below
    )
    howto = [r for r in reports if r.instructions]
    instructions = sum(r.instructions for r in reports)
    recalled = sum(r.recalled for r in reports)
    return QualityFigures(
        pairs=len(reports),
        skip_below=skip_below,
        ranked=ranked,
        ranking_rate=_rate(ranked, len(reports)),
        false_skips=false_skips,
        false_skip_rate=_rate(false_skips, len(reports)),
        unrelated_skipped=skipped,
        unrelated_skip_rate=_rate(skipped, len(reports)),
        howto=len(howto),
        howto_with_text_todo=sum(1 for r in howto if r.recalled),
        instructions=instructions,
        recalled=recalled,
        instruction_recall=_rate(recalled, instructions),
        todos=sum(len(r.todos) for r in reports),
        todos_from_text=sum(r.todos_from_text for r in reports),
        cut_titles=sum(r.cut_titles for r in reports),
    )


class QualityGate(msgspec.Struct, kw_only=True, frozen=True):
    """The least a card engine must achieve on the pairs for `readdod eval` to pass."""

    min_ranking: float = 0.8
    max_false_skip: float = 0.1
    min_instruction_recall: float = 0.6
    max_cut_titles: int = 0


def gate_problems(f: QualityFigures, gate: QualityGate, *, todos: bool = True) -> list[str]:
    """What falls short of ``gate``; without ``todos`` (none were asked) the score's
    figures alone."""
    problems = []
    if f.ranking_rate < gate.min_ranking:
        problems.append(
            f"ranking {f.ranking_rate:.0%} is below {gate.min_ranking:.0%}: too few matching "
            "intents score above the unrelated ones"
        )
    if f.false_skip_rate > gate.max_false_skip:
        problems.append(
            f"false skips {f.false_skip_rate:.0%} exceed {gate.max_false_skip:.0%}: items the "
            f"reader wanted would be archived (score below {f.skip_below})"
        )
    if not todos:
        return problems
    if f.instruction_recall < gate.min_instruction_recall:
        problems.append(
            f"instruction recall {f.instruction_recall:.0%} is below "
            f"{gate.min_instruction_recall:.0%}: todos miss what the how-to texts say to do"
        )
    if f.cut_titles > gate.max_cut_titles:
        problems.append(f"{f.cut_titles} todo titles are stored cut short (with …)")
    return problems
