"""Todos from the text's own instructions, else a few honest ones shaped by its genre.

A how-to text's instructions (:mod:`.instructions`) become todos in its own
words. A text that gives none gets fewer, plainer todos: read it, note what it
means for the intent, decide; one more fitting its genre (check a study's
method, weigh an argument, put a coming date in the calendar). Titles never
paste lists of terms, never quote a title cut short, and name a date only
when it is still ahead of the capture. What the engine words itself comes in
the text's language (:mod:`.phrases`).
"""

from __future__ import annotations

import re
from typing import Final, Literal

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import TextAnalysis, analyze
from readdod.engines.local.instructions import find_instructions
from readdod.engines.local.phrases import ENGLISH, Phrases, phrases_for
from readdod.engines.local.wording import normalize_space
from readdod.items.models import Score, Summary, Todo, TodoKind, Todos
from readdod.text import is_complete, split_sentences
from readdod.text.dates import find_dates
from readdod.text.words import latin_length

Genre = Literal["tutorial", "research", "opinion", "news", "reference", "general"]

TODO_TITLE_MAX: Final = 200

_TUTORIAL_RE: Final = re.compile(
    r"\b(?:install(?:ing|ation)?|step|steps|tutorial|how to|guide|walkthrough|configure|set ?up|"
    r"prerequisites|you'll need|run the|command)\b|"
    r"установ|шаг|руководств|настро|安装|步骤|教程|インストール|手順|anleitung|schritt|"
    r"\b(?:paso|instalar|étape|installer)\b",
    re.IGNORECASE,
)
_CODE_RE: Final = re.compile(r"^(?:```|\$ |>>> |#!|pip install|npm |cargo )", re.MULTILINE)
_STEP_RE: Final = re.compile(r"^\s*(?:step\s+)?\d{1,2}[.):]\s+\S", re.MULTILINE | re.IGNORECASE)
_RESEARCH_RE: Final = re.compile(
    r"\b(?:abstract|study|studies|paper|experiments?|dataset|results|methods?|methodology|"
    r"hypothes[ie]s|participants|et al|arxiv|doi|findings|we propose|statistically|"
    r"peer[- ]reviewed|researchers|sample)\b|исследован|эксперимент|研究|论文|实验|論文|実験",
    re.IGNORECASE,
)
_OPINION_RE: Final = re.compile(
    r"\b(?:i think|i believe|in my (?:view|opinion)|i argue|i'm convinced|we should|we must|"
    r"should|ought to|frankly|overrated|underrated|the problem is|mistake|wrong|i suspect|"
    r"i(?:'d| would) rather|the point is|the truth is|it is time|my advice|you may disagree)\b|"
    r"я думаю|я считаю|по-моему|мнени|我认为|我觉得|观点|と思う|"
    r"\b(?:ich glaube|ich finde|meiner meinung|kommentar|sollten|müssen|creo que|je pense)\b",
    re.IGNORECASE,
)
_NEWS_RE: Final = re.compile(
    r"\b(?:said|says|told|announced|according to|spokes(?:person|man|woman)|officials?|"
    r"reported|confirmed|council|agency|on (?:monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|yesterday|this week|last week|is expected to|will begin|"
    r"analysts?)\b|"
    r"сообщил|заявил|по данным|объявил|据|表示|宣布|报道|発表|によると|明らかにした|予定だ|"
    r"\b(?:sagte|erklärte|teilte mit|laut|según|anunció)\b",
    re.IGNORECASE,
)
_REFERENCE_RE: Final = re.compile(
    r"\b(?:reference|options?|flags?|syntax|parameters?|arguments?|defaults?|returns?|usage|"
    r"see also|cheat ?sheet|look up|table|headers?|specification|rfc|lists?|"
    r"extensions?|formats?)\b|справочник|параметр|参考|リファレンス",
    re.IGNORECASE,
)
# A line that only names an entry ("429 Too Many Requests", "-C DIR") before its description.
_ENTRY_RE: Final = re.compile(r"^(?:\d{3}|--?[A-Za-z])[^\n.!?]{0,50}$", re.MULTILINE)
# First-person singular: essays argue from "I", tutorials say "you", papers say "we".
_FIRST_PERSON_RE: Final = re.compile(r"\b(?:I|I'm|I've|I'd|[Mm]y|[Mm]e|[Ii]ch|[Mm]eine?)\b")
#: Hits per 1,000 words a genre needs before the todos are shaped for it...
GENRE_THRESHOLD: Final = 4.0
#: ...and hits in all: in a short note one "study" or "results" is no evidence of a paper.
MIN_GENRE_HITS: Final = 2


#: Genre is judged on the opening of a long text; its density does not need more.
GENRE_SAMPLE_CHARS: Final = 200_000


def detect_genre(text: str, words: int) -> Genre:
    """Tutorial, research, opinion, news or reference, by density of telltale words and of
    code, step and entry lines; "general" when nothing stands out, or when the evidence is
    a single word (:data:`MIN_GENRE_HITS`)."""
    if len(text) > GENRE_SAMPLE_CHARS:
        words = round(words * GENRE_SAMPLE_CHARS / len(text))
        text = text[:GENRE_SAMPLE_CHARS]
    scale = 1000 / max(200, words)
    hits: dict[Genre, float] = {
        "tutorial": (
            len(_TUTORIAL_RE.findall(text))
            + 3 * len(_CODE_RE.findall(text))
            + 2 * len(_STEP_RE.findall(text))
        ),
        "research": len(_RESEARCH_RE.findall(text)),
        "opinion": len(_OPINION_RE.findall(text)) + 0.25 * len(_FIRST_PERSON_RE.findall(text)),
        "news": len(_NEWS_RE.findall(text)),
        "reference": len(_REFERENCE_RE.findall(text)) + len(_ENTRY_RE.findall(text)),
    }
    best = max(hits, key=lambda g: hits[g])
    if hits[best] < MIN_GENRE_HITS or hits[best] * scale < GENRE_THRESHOLD:
        return "general"
    return best


#: The rubric's minimum (models.Todos).
MIN_TODOS: Final = 3
#: Most todos taken from the text: the list also needs a note (kind output) and room to read.
MAX_STEPS: Final = 5
#: A title longer than this (in Latin letters: a Han or kana character counts as three) is
#: referred to as "this text" rather than quoted.
TITLE_QUOTE_MAX: Final = 70
#: A date's sentence longer than this is not quoted in a todo.
DATE_SENTENCE_MAX: Final = 150

Item = tuple[str, TodoKind, int]


def _ref(inp: EngineInput, ph: Phrases) -> tuple[str, str]:
    """The text by its title when it has a short one to quote, else "this text", in the
    text's language: (as object, as subject)."""
    title = normalize_space(inp.title or "")
    if (
        not title
        or latin_length(title) > TITLE_QUOTE_MAX
        or title.endswith(("…", "..."))
        or len(split_sentences(title)) > 1  # a note's opening pasted as its title
        # A note titled by its own first sentence: "Read “The tap drips.” in full" reads
        # as if that sentence were all there is.
        or (is_complete(title) and normalize_space(inp.text).startswith(title))
    ):
        return ph.ref(None)
    return ph.ref(title)


def coming_date(an: TextAnalysis, captured_at: int | None, ph: Phrases = ENGLISH) -> Item | None:
    """A todo for the first date in the text still ahead of the capture; None without one
    (or without a capture time to compare with)."""
    if captured_at is None:
        return None
    for s in an.sentences:
        if s.code:
            continue
        ahead = [d for d in find_dates(s.text) if d.ahead_of(captured_at)]
        if not ahead:
            continue
        if len(s.text) <= DATE_SENTENCE_MAX and "…" not in s.text:
            return (ph.calendar_sentence.format(sentence=s.text), "action", 5)
        return (ph.calendar_date.format(date=ahead[0].text), "action", 5)
    return None


def _step_minutes(title: str) -> int:
    return max(5, min(30, len(title.split()) // 2))


def _generic(rec: str, ph: Phrases, ref: tuple[str, str], goal: str, rt: int) -> list[Item]:
    """Read, note, decide: what any text asks of its reader, sized by the recommendation."""
    obj, subj = ref
    if rec == "read":
        return [
            (ph.read_full.format(ref=obj, reading=ph.reading(rt)), "read", rt),
            (ph.note_meaning.format(ref_subj=subj, goal=goal), "output", 10),
            (ph.decide_after, "action", 5),
        ]
    if rec == "skim":
        return [
            (ph.skim_parts.format(ref=obj, goal=goal), "read", max(1, rt // 3)),
            (ph.note_one_point.format(ref=obj), "output", 5),
            (ph.decide_full_read, "action", 2),
        ]
    return [
        (ph.glance_opening.format(ref=obj, goal=goal), "read", 1),
        (ph.note_elsewhere.format(goal=goal), "output", 5),
        (ph.archive_if.format(ref=obj, goal=goal), "action", 1),
    ]


def _genre_todo(genre: Genre, ph: Phrases, ref: tuple[str, str], rt: int) -> Item | None:
    obj, subj = ref
    if genre == "research":
        return (ph.check_study, "learn", 15)
    if genre == "opinion":
        return (ph.decide_agree, "action", 10)
    if genre == "reference":
        return (ph.bookmark.format(ref=obj), "action", 2)
    if genre == "tutorial":
        return (ph.try_case.format(ref=obj, ref_subj=subj), "action", rt * 2 + 10)
    return None


def _clamp_minutes(n: int) -> int:
    return max(1, min(600, n))


def plan_todos(inp: EngineInput, summary: Summary, score: Score) -> Todos:
    """3-7 todos: the text's own instructions when it gives some (plus a note of kind
    'output' and, for a text worth reading, reading it), else read / note / decide and at
    most one fitting the genre or a coming date."""
    an = analyze(inp.text)
    genre = detect_genre(inp.text, an.words)
    ph = phrases_for(an.lang or inp.lang)
    rt = summary.reading_time_min
    rec = score.recommendation
    steps = find_instructions(inp.text, an.lang, MAX_STEPS) if rec != "skip" else []
    date = coming_date(an, inp.captured_at, ph) if rec != "skip" else None

    def compose(ref: tuple[str, str], goal: str) -> list[Item]:
        items: list[Item]
        if steps:
            items = [(s, "action", _step_minutes(s)) for s in steps]
            items.append((ph.note_steps, "output", 5))
            if rec == "read":
                items.append((ph.read_full.format(ref=ref[0], reading=ph.reading(rt)), "read", rt))
            # One step and a note are too few: the reading todo and a decision fill the minimum.
            items += _generic(rec, ph, ref, goal, rt)[::2][: max(0, MIN_TODOS - len(items))]
        else:
            items = _generic(rec, ph, ref, goal, rt)
            extra = _genre_todo(genre, ph, ref, rt) if rec != "skip" else None
            if extra is not None and extra[0] == ph.decide_agree:
                items[2] = extra  # one decision is enough: the argument's
            elif extra is not None:
                items.append(extra)
        if date is not None and len(items) < 7:
            items.append(date)
        return items

    # A long title and a long intent together can outgrow a todo: name them less fully.
    tries = (
        (_ref(inp, ph), ph.goal(inp.intent)),
        (ph.ref(None), ph.goal(inp.intent)),
        (ph.ref(None), ph.your_goal),
    )
    for ref, goal in tries:
        items = compose(ref, goal)
        if all(len(t) <= TODO_TITLE_MAX for t, _, _ in items[len(steps) :]):
            break
    todos: list[Todo] = []
    seen: set[str] = set()
    for raw, kind, minutes in items:
        title = raw[:1].upper() + raw[1:]  # "{ref} ganz lesen" starts with "den Text"
        if len(title) > TODO_TITLE_MAX or title.casefold() in seen:
            continue
        seen.add(title.casefold())
        todos.append(Todo(title=title, kind=kind, estimate_min=_clamp_minutes(minutes)))
    return Todos(items=todos[:7])
