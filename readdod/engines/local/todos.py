"""Four or five todos shaped by the text's genre and the intent."""

from __future__ import annotations

import re
from typing import Final, Literal

from readdod.engines.base import EngineInput
from readdod.engines.local.analysis import TextAnalysis, analyze
from readdod.engines.local.card import display_title
from readdod.engines.local.intent import Intent, match_intent, names, parse_intent
from readdod.engines.local.wording import join_and, quote, reading_phrase, trim
from readdod.models import Score, Summary, Todo, TodoKind, Todos

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
#: Hits per 1,000 words a genre needs before the todos are shaped for it.
GENRE_THRESHOLD: Final = 4.0


#: Genre is judged on the opening of a long text; its density does not need more.
GENRE_SAMPLE_CHARS: Final = 200_000


def detect_genre(text: str, words: int) -> Genre:
    """Tutorial, research, opinion, news or reference, by density of telltale words and of
    code, step and entry lines; "general" when nothing stands out."""
    if len(text) > GENRE_SAMPLE_CHARS:
        words = round(words * GENRE_SAMPLE_CHARS / len(text))
        text = text[:GENRE_SAMPLE_CHARS]
    scale = 1000 / max(200, words)
    scores: dict[Genre, float] = {
        "tutorial": (
            len(_TUTORIAL_RE.findall(text))
            + 3 * len(_CODE_RE.findall(text))
            + 2 * len(_STEP_RE.findall(text))
        )
        * scale,
        "research": len(_RESEARCH_RE.findall(text)) * scale,
        "opinion": (len(_OPINION_RE.findall(text)) + 0.25 * len(_FIRST_PERSON_RE.findall(text)))
        * scale,
        "news": len(_NEWS_RE.findall(text)) * scale,
        "reference": (len(_REFERENCE_RE.findall(text)) + len(_ENTRY_RE.findall(text))) * scale,
    }
    best = max(scores, key=lambda g: scores[g])
    return best if scores[best] >= GENRE_THRESHOLD else "general"


_MONTHS: Final = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
_DATE_RE: Final = re.compile(rf"\b(?:{_MONTHS})(?:\s+\d{{1,2}})?\b|\b(?:19|20)\d{{2}}\b")
_FUTURE_RE: Final = re.compile(
    r"\b(?:will|next|from|until|starts?|begins?|expected|deadline|scheduled)\b", re.IGNORECASE
)


def _next_date(an: TextAnalysis) -> str | None:
    """The first sentence that names a date and looks ahead ("work will begin in May")."""
    for s in an.sentences:
        if not s.code and _DATE_RE.search(s.text) and _FUTURE_RE.search(s.text):
            return s.text
    return None


def _focus(an: TextAnalysis, intent: Intent, n: int) -> list[str]:
    """What the text says about the intent: intent terms found (most frequent first), then
    the text's own most frequent terms."""
    found = sorted(match_intent(an, intent).found, key=lambda h: -h.count)
    labels = [h.label for h in found] + [an.surface[t] for t, _ in an.top_terms(n)]
    return list(dict.fromkeys(labels))[:n]


def _clamp_minutes(n: int) -> int:
    return max(1, min(600, n))


def plan_todos(inp: EngineInput, summary: Summary, score: Score) -> Todos:
    """Four or five todos shaped by genre, one of kind 'output': a tutorial gets "Try the
    steps", research "Write a note on the findings", an opinion piece "Decide whether you
    agree", news "Write down what changed", a reference "Write a cheat sheet".

    The first todos name the intent, so the list says what the reading is for; a page to skip
    also gets "Find a better source" naming the intent terms it never mentions.
    """
    an = analyze(inp.text)
    intent = parse_intent(inp.intent, an.lang)
    genre = detect_genre(inp.text, an.words)
    title = quote(display_title(inp, an), 60)
    topics = join_and(_focus(an, intent, 3)) or "the key points"
    goal = intent.label
    rt = summary.reading_time_min
    items: list[tuple[str, TodoKind, int]]
    if genre == "tutorial":
        has_code = any(s.code for s in an.sentences) or _CODE_RE.search(inp.text) is not None
        made = "working commands or code" if has_code else "steps"
        items = [
            (f"Try the steps from {title} yourself, aiming at {goal}", "action", rt * 3 + 10),
            (f"Write down the {made} from {title} that you will use for {goal}", "output", 15),
            (f"Look up anything unclear about {topics} before relying on it", "learn", 10),
        ]
    elif genre == "research":
        items = [
            (
                f"Write a note on the findings of {title} and what they mean for {goal}",
                "output",
                20,
            ),
            (f"Check the method and evidence behind the claims about {topics}", "learn", 15),
            (f"Save the key reference from {title} where you keep sources", "action", 5),
        ]
    elif genre == "opinion":
        items = [
            (f"Decide whether you agree with the argument of {title} for {goal}", "action", 10),
            (
                f"Write a short response: where you agree or disagree with {title}, and why",
                "output",
                15,
            ),
            (f"Find one counter-argument or independent source on {topics}", "learn", 15),
        ]
    elif genre == "news":
        when = _next_date(an)
        follow: tuple[str, TodoKind, int] = (
            (f"Put the next date in your calendar: {quote(when, 100)}", "action", 5)
            if when
            else (f"Check in a week for a follow-up on {topics}", "action", 5)
        )
        items = [
            (f"Write down what changed, per {title}, and what it means for {goal}", "output", 10),
            follow,
            (f"Find a second source on {topics} before acting on it", "learn", 15),
        ]
    elif genre == "reference":
        has_code = any(s.code for s in an.sentences)
        practice: tuple[str, TodoKind, int] = (
            (f"Try two of the examples from {title} on a real case", "action", 10)
            if has_code
            else (f"Test yourself on {topics} without looking at {title}", "learn", 10)
        )
        items = [
            (f"Write a cheat sheet of the entries in {title} you need for {goal}", "output", 15),
            practice,
            (f"Bookmark {title} where you keep references", "action", 2),
        ]
    else:
        items = [
            (f"Write three takeaways from {title} that serve {goal}", "output", 10),
            (f"Pick one idea about {topics} and act on it this week", "action", 15),
            (f"Look further into {topics}", "learn", 20),
        ]
    if score.recommendation == "read":
        items.append((f"Read {title} in full ({reading_phrase(rt)})", "read", rt))
    elif score.recommendation == "skim":
        items.append((f"Skim {title} for the parts about {topics}", "read", max(1, rt // 3)))
    else:
        missing = match_intent(an, intent).missing
        if missing:
            items.append(
                (
                    f"Find a better source for {goal}: this one never mentions {names(missing, 4)}",
                    "learn",
                    15,
                )
            )
        items.append(
            (f"Archive {title}: it matches {goal} poorly (score {score.match_score})", "action", 1)
        )
    return Todos(
        items=[
            Todo(title=trim(t, TODO_TITLE_MAX), kind=k, estimate_min=_clamp_minutes(m))
            for t, k, m in items
        ]
    )
