"""Run the golden set through an engine and report (DESIGN §9).

Each page goes through extraction (:func:`readdod.extraction.extract`, as a
capture with ``html`` would), then the engine's four AI steps for its
matching intent, then summary and score again for an unrelated intent.
Nothing here knows which engine it drives: it gets one from
:func:`readdod.engines.make_engine` and the ``[ai]`` config.

``steps="score"`` asks only summary and score, for both intents: the score's
figures (ranking, false skips, unrelated intents skipped) in a third of the
requests, which is what a slow model server can answer in an hour.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import msgspec

from readdod.engines.base import Engine, EngineInput
from readdod.errors import ReaddodError
from readdod.evaluation.checks import MIN_OVERLAP, check_page
from readdod.evaluation.quality import (
    PairReport,
    QualityFigures,
    QualityGate,
    gate_problems,
    judge_pair,
    parse_marked,
    quality_figures,
)
from readdod.extraction import extract

Kind = Literal["tutorial", "news", "research", "opinion", "reference"]
Steps = Literal["all", "score"]
KINDS: Final[tuple[Kind, ...]] = ("tutorial", "news", "research", "opinion", "reference")
MANIFEST: Final = "pages.json"
PAIRS: Final = "pairs.json"


class GoldenPage(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One page of the golden set and the two intents it is judged with."""

    id: str
    file: str
    kind: Kind
    lang: str
    url: str
    intent: str
    """An intent the page serves well."""
    unrelated_intent: str
    """An intent the page does not serve at all."""
    tags: list[str] = []


class PairCase(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """A text (its first line is its title) with an intent it serves and one it does not.

    How-to texts mark the instructions they give with ``[[...]]``.
    """

    id: str
    file: str
    lang: str
    kind: str
    paraphrase: bool
    """The matching intent says it in other words than the text."""
    intent: str
    unrelated_intent: str


class Pair(msgspec.Struct, kw_only=True, frozen=True):
    case: PairCase
    text: str
    instructions: list[str]


class PageReport(msgspec.Struct, kw_only=True):
    id: str
    kind: Kind
    lang: str
    passed: bool
    problems: list[str]
    tl_dr_overlap: float | None = None
    key_point_overlap: float | None = None
    match_score: int | None = None
    unrelated_score: int | None = None
    recommendation: str | None = None
    todo_kinds: list[str] = []
    tl_dr: str | None = None
    elapsed_ms: int = 0


class GroupFigures(msgspec.Struct, kw_only=True):
    pages: int
    passed: int


class Figures(msgspec.Struct, kw_only=True):
    pages: int
    passed: int
    failed: int
    ranked: int
    """Pages whose matching intent scored above their unrelated intent."""
    ranking_rate: float
    mean_tl_dr_overlap: float
    mean_key_point_overlap: float
    mean_score_gap: float
    """Mean of (matching - unrelated) match score."""
    mean_match_score: float
    mean_unrelated_score: float
    min_overlap: float
    by_kind: dict[str, GroupFigures]
    by_lang: dict[str, GroupFigures]


class Report(msgspec.Struct, kw_only=True):
    engine: str
    engine_version: str
    steps: Steps
    """``score``: summary and score only; the todos and card were not asked."""
    figures: Figures
    pages: list[PageReport]
    quality: QualityFigures | None = None
    """Ranking, false skips and instruction recall on the held-in pairs."""
    quality_gate: QualityGate | None = None
    """The thresholds the quality figures must meet; None: reported only."""
    quality_problems: list[str] = []
    pairs: list[PairReport] = []
    unfinished: list[str] = []
    """Pages and pairs not run: the deadline passed first (``deadline_s``)."""
    deadline_s: float | None = None

    @property
    def passed(self) -> bool:
        pages_ok = self.figures.failed == 0 and self.figures.pages > 0
        gated = self.quality_gate is not None and bool(self.quality_problems)
        return pages_ok and not gated and not self.unfinished


# --- the golden set ----------------------------------------------------------


def _bundled() -> Traversable:
    return resources.files("readdod.evaluation").joinpath("golden")


def load_golden(directory: Path | None = None) -> list[tuple[GoldenPage, str]]:
    """The pages listed in ``pages.json`` (bundled, or in ``directory``) with their HTML."""
    root: Traversable | Path = directory if directory is not None else _bundled()
    try:
        raw = root.joinpath(MANIFEST).read_bytes()
        pages = msgspec.json.decode(raw, type=list[GoldenPage])
        return [(p, root.joinpath(p.file).read_text(encoding="utf-8")) for p in pages]
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ReaddodError(f"cannot load the golden set from {root}: {exc}") from exc


def load_pairs(directory: Path | None = None) -> list[Pair]:
    """The held-in pairs listed in ``pairs.json``; none when a golden set has no such file."""
    root: Traversable | Path = directory if directory is not None else _bundled()
    manifest = root.joinpath(PAIRS)
    if not manifest.is_file():
        return []
    try:
        cases = msgspec.json.decode(manifest.read_bytes(), type=list[PairCase])
        out = []
        for c in cases:
            text, instructions = parse_marked(root.joinpath(c.file).read_text(encoding="utf-8"))
            out.append(Pair(case=c, text=text, instructions=instructions))
        return out
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ReaddodError(f"cannot load the held-in pairs from {root}: {exc}") from exc


# --- running -----------------------------------------------------------------


async def _steps(engine: Engine, inp: EngineInput, *, all_steps: bool) -> dict[str, Any]:
    """Raw payloads of the AI steps, in pipeline order; stops at the first failure."""
    out: dict[str, Any] = {}
    summary = (await engine.summarize(inp)).payload
    out["summary"] = msgspec.to_builtins(summary)
    score = (await engine.score(inp, summary)).payload
    out["score"] = msgspec.to_builtins(score)
    if all_steps:
        todos = (await engine.todos(inp, summary, score)).payload
        out["todos"] = msgspec.to_builtins(todos)
        card = (await engine.card(inp, summary, score, todos)).payload
        out["card"] = msgspec.to_builtins(card)
    return out


async def run_page(engine: Engine, page: GoldenPage, html: str, steps: Steps = "all") -> PageReport:
    """One page through extraction and the engine, then judged."""
    started = time.perf_counter()
    report = PageReport(id=page.id, kind=page.kind, lang=page.lang, passed=False, problems=[])
    try:
        ext = extract(html, page.url)
    except ReaddodError as exc:
        report.problems.append(f"extraction failed: {exc.error_code}: {exc.message}")
        return report
    base = EngineInput(
        text=ext.text,
        intent=page.intent,
        title=ext.title,
        url=ext.final_url or ext.url or page.url,
        site_name=ext.site_name,
        lang=ext.lang,
        tags=tuple(page.tags),
    )
    matching: dict[str, Any] = {}
    unrelated: dict[str, Any] = {}
    for label, target, inp, all_steps in (
        ("", matching, base, steps == "all"),
        (
            "unrelated intent: ",
            unrelated,
            msgspec.structs.replace(base, intent=page.unrelated_intent),
            False,
        ),
    ):
        try:
            target.update(await _steps(engine, inp, all_steps=all_steps))
        except ReaddodError as exc:
            report.problems.append(f"{label}engine failed: {exc.error_code}: {exc.message}")
        except Exception as exc:  # a crash is a finding, not a reason to stop the whole run
            report.problems.append(f"{label}engine crashed: {type(exc).__name__}: {exc}")
    check = check_page(ext.text, matching, unrelated, todos=steps == "all")
    report.problems.extend(p for p in check.problems if p not in report.problems)
    report.tl_dr_overlap = check.tl_dr_overlap
    report.key_point_overlap = check.key_point_overlap
    report.match_score = check.match_score
    report.unrelated_score = check.unrelated_score
    if "summary" in matching and isinstance(matching["summary"], dict):
        report.tl_dr = matching["summary"].get("tl_dr")
    if "score" in matching and isinstance(matching["score"], dict):
        report.recommendation = matching["score"].get("recommendation")
    if "todos" in matching and isinstance(matching["todos"], dict):
        report.todo_kinds = [str(t.get("kind")) for t in matching["todos"].get("items", [])]
    report.passed = not report.problems
    report.elapsed_ms = round((time.perf_counter() - started) * 1000)
    return report


async def run_pair(engine: Engine, pair: Pair, steps: Steps = "all") -> PairReport:
    """One text through every AI step for its intent (summary and score only with
    ``steps="score"``), and summary and score for the other."""
    c = pair.case
    report = PairReport(id=c.id, lang=c.lang, kind=c.kind, paraphrase=c.paraphrase)
    title = pair.text.strip().split("\n", 1)[0].strip() or None
    base = EngineInput(text=pair.text, intent=c.intent, title=title, lang=c.lang)
    titles: list[str] = []
    for label, inp, all_steps in (
        ("", base, steps == "all"),
        ("unrelated intent: ", msgspec.structs.replace(base, intent=c.unrelated_intent), False),
    ):
        try:
            out = await _steps(engine, inp, all_steps=all_steps)
        except ReaddodError as exc:
            report.problems.append(f"{label}engine failed: {exc.error_code}: {exc.message}")
            continue
        except Exception as exc:  # a crash is a finding, not a reason to stop the whole run
            report.problems.append(f"{label}engine crashed: {type(exc).__name__}: {exc}")
            continue
        score = out["score"]
        if label:
            report.unrelated_score = score["match_score"]
            report.unrelated_recommendation = score["recommendation"]
        else:
            report.match_score = score["match_score"]
            report.match_recommendation = score["recommendation"]
            if "todos" in out:
                titles = [str(t["title"]) for t in out["todos"]["items"]]
    if steps != "all":
        return report
    return judge_pair(report, pair.text, pair.instructions, titles)


def _group(reports: Sequence[PageReport], key: str) -> dict[str, GroupFigures]:
    out: dict[str, GroupFigures] = {}
    for r in reports:
        g = out.setdefault(getattr(r, key), GroupFigures(pages=0, passed=0))
        g.pages += 1
        g.passed += r.passed
    return dict(sorted(out.items()))


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def figures(reports: Sequence[PageReport]) -> Figures:
    scored = [
        (r.match_score, r.unrelated_score)
        for r in reports
        if r.match_score is not None and r.unrelated_score is not None
    ]
    ranked = sum(1 for m, u in scored if m > u)
    passed = sum(1 for r in reports if r.passed)
    return Figures(
        pages=len(reports),
        passed=passed,
        failed=len(reports) - passed,
        ranked=ranked,
        ranking_rate=round(ranked / len(reports), 3) if reports else 0.0,
        mean_tl_dr_overlap=_mean([r.tl_dr_overlap for r in reports if r.tl_dr_overlap is not None]),
        mean_key_point_overlap=_mean(
            [r.key_point_overlap for r in reports if r.key_point_overlap is not None]
        ),
        mean_score_gap=_mean([float(m - u) for m, u in scored]),
        mean_match_score=_mean([float(m) for m, _ in scored]),
        mean_unrelated_score=_mean([float(u) for _, u in scored]),
        min_overlap=MIN_OVERLAP,
        by_kind=_group(reports, "kind"),
        by_lang=_group(reports, "lang"),
    )


async def evaluate(
    engine: Engine,
    pages: Sequence[tuple[GoldenPage, str]],
    pairs: Sequence[Pair] = (),
    *,
    skip_below: int = 40,
    gate: QualityGate | None = None,
    steps: Steps = "all",
    progress: Callable[[str], None] | None = None,
    deadline_s: float | None = None,
) -> Report:
    """Every page, then every pair, one after another (a model server sees one request at a
    time). ``gate`` makes the quality figures part of the verdict; without it they are
    reported only. With ``steps="score"`` the gate holds the score's figures alone.
    ``progress`` gets a line per page and pair as each ends: a slow server's run is long.
    Once ``deadline_s`` seconds have passed, what ended is reported and the rest is listed
    as unfinished: an hour of a slow server's answers is not thrown away."""
    total = len(pages) + len(pairs)
    reports: list[PageReport] = []
    pair_reports: list[PairReport] = []

    def ended(r: PageReport | PairReport, started: float) -> None:
        if progress is not None:
            done = len(reports) + len(pair_reports)
            line = _progress_line(
                done, total, r.id, r.match_score, r.unrelated_score, r.problems, started
            )
            progress(line)

    with anyio.move_on_after(deadline_s):
        for page, html in pages:
            started = time.perf_counter()
            r = await run_page(engine, page, html, steps)
            reports.append(r)
            ended(r, started)
        for pair in pairs:
            started = time.perf_counter()
            pr = await run_pair(engine, pair, steps)
            pair_reports.append(pr)
            ended(pr, started)
    unfinished = [page.id for page, _ in pages[len(reports) :]]
    unfinished += [pair.case.id for pair in pairs[len(pair_reports) :]]
    report = Report(
        engine=engine.name,
        engine_version=engine.version,
        steps=steps,
        figures=figures(reports),
        pages=reports,
        quality_gate=gate,
        pairs=pair_reports,
        unfinished=unfinished,
        deadline_s=deadline_s if unfinished else None,
    )
    if pair_reports:
        report.quality = quality_figures(report.pairs, skip_below)
        if gate is not None:
            report.quality_problems = gate_problems(report.quality, gate, todos=steps == "all")
    return report


def _progress_line(
    done: int,
    total: int,
    name: str,
    match: int | None,
    unrelated: int | None,
    problems: Sequence[str],
    started: float,
) -> str:
    took = time.perf_counter() - started
    verdict = f"{len(problems)} problem(s)" if problems else "ok"
    return (
        f"readdod eval: {done}/{total} {name}: match {_num(match, 'd')},"
        f" unrelated {_num(unrelated, 'd')}, {verdict} ({took:.0f} s)"
    ) + "".join(f"\n    - {p}" for p in problems)


async def close_engine(engine: Engine) -> None:
    """Release what an engine holds (an HTTP client), when it has anything to release."""
    await engine.aclose()


# --- output ------------------------------------------------------------------


def _num(v: float | None, fmt: str = ".2f") -> str:
    return "--" if v is None else format(v, fmt)


def format_report(report: Report) -> str:
    """The per-page table and the summary figures, for people."""
    f = report.figures
    w = max([len(r.id) for r in report.pages] + [4])
    head = (
        f"{'page':<{w}} {'kind':<10} {'lang':<4} {'tl;dr':>5} {'points':>6} "
        f"{'match':>5} {'unrel':>5} {'rec':<5} result"
    )
    lines = [f"readdod eval: engine {report.engine} {report.engine_version}"]
    if report.steps == "score":
        lines.append("steps: summary and score only (--steps score); todos and card not asked")
    lines += ["", head]
    for r in report.pages:
        lines.append(
            f"{r.id:<{w}} {r.kind:<10} {r.lang:<4} {_num(r.tl_dr_overlap):>5} "
            f"{_num(r.key_point_overlap):>6} {_num(r.match_score, 'd'):>5} "
            f"{_num(r.unrelated_score, 'd'):>5} {(r.recommendation or '--'):<5} "
            + ("PASS" if r.passed else "FAIL")
        )
        lines.extend(f"    - {p}" for p in r.problems)
    kinds = ", ".join(f"{k} {g.passed}/{g.pages}" for k, g in f.by_kind.items())
    langs = ", ".join(f"{k} {g.passed}/{g.pages}" for k, g in f.by_lang.items())
    lines += [
        "",
        f"pages passed: {f.passed}/{f.pages}",
        f"by kind: {kinds}",
        f"by language: {langs}",
        f"matching intent outscores unrelated: {f.ranked}/{f.pages} ({f.ranking_rate:.0%}),"
        f" mean score gap {f.mean_score_gap:.1f}"
        f" ({f.mean_match_score:.1f} vs {f.mean_unrelated_score:.1f})",
        f"mean tl;dr overlap with the article: {f.mean_tl_dr_overlap:.2f},"
        f" key points: {f.mean_key_point_overlap:.2f} (each needs >= {f.min_overlap:.2f})",
    ]
    if report.quality is not None:
        lines += ["", *format_quality(report)]
    if report.unfinished:
        lines += ["", unfinished_line(report)]
    lines.append("result: " + ("PASS" if report.passed else "FAIL"))
    return "\n".join(lines)


def unfinished_line(report: Report) -> str:
    """What the deadline left out, and what to do about it."""
    left = report.unfinished
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return (
        f"not run: {len(left)} of {len(report.pages) + len(report.pairs) + len(left)}"
        f" ({shown}): gave up after {report.deadline_s or 0:g} s (--deadline); the figures"
        " above are of what ended. Check that the model server answers, or give it more"
        " time with --deadline"
    )


def format_quality(report: Report) -> list[str]:
    """The pairs' table and the quality figures."""
    q = report.quality
    assert q is not None
    w = max([len(r.id) for r in report.pairs] + [4])
    lines = [
        "held-in pairs (matching vs unrelated intent; how-to instructions):",
        f"{'pair':<{w}} {'lang':<4} {'match':>5} {'unrel':>5} {'rec':<5} {'instr':>5}",
    ]
    for r in report.pairs:
        instr = f"{r.recalled}/{r.instructions}" if r.instructions else "--"
        lines.append(
            f"{r.id:<{w}} {r.lang:<4} {_num(r.match_score, 'd'):>5} "
            f"{_num(r.unrelated_score, 'd'):>5} {(r.match_recommendation or '--'):<5} {instr:>5}"
            + ("  paraphrase" if r.paraphrase else "")
        )
        lines.extend(f"    - {p}" for p in r.problems)
    lines += [
        f"ranking (matching above unrelated): {q.ranked}/{q.pairs} ({q.ranking_rate:.0%})",
        f"false skips (matching below {q.skip_below}): {q.false_skips}/{q.pairs}"
        f" ({q.false_skip_rate:.0%}); unrelated skipped: {q.unrelated_skipped}/{q.pairs}"
        f" ({q.unrelated_skip_rate:.0%})",
    ]
    if report.steps == "all":
        lines += [
            f"instruction recall: {q.recalled}/{q.instructions} ({q.instruction_recall:.0%});"
            " how-to texts with a todo from their instructions:"
            f" {q.howto_with_text_todo}/{q.howto}",
            f"todos in the text's words: {q.todos_from_text}/{q.todos};"
            f" todo titles cut short: {q.cut_titles}",
        ]
    else:
        lines.append("instruction recall and todo titles: not measured (--steps score)")
    if report.quality_gate is None:
        lines.append("quality: reported only (no thresholds for this engine)")
    else:
        lines += [f"quality: FAIL: {p}" for p in report.quality_problems] or ["quality: PASS"]
    return lines
