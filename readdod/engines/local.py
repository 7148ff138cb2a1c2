"""The offline engine: extractive, deterministic, no model and no network.

It exists so readdod works with no AI provider at all, and so tests and the
demo get the same output every run. Every result is built from the text
itself: sentences are ranked by TF-IDF centrality plus overlap with the
intent, and scores and todos cite counts found in the text. Any script works
(unspaced CJK/Thai text is read as character pairs); a text of fewer than
:data:`MIN_WORDS` words is refused with ``AI_INPUT_TOO_SHORT`` rather than
padded into a summary.

All real work happens in the pure functions below (no I/O, no clock, no
randomness, no set-order dependence); :class:`LocalEngine` only decides
whether a text is long enough to be worth a worker thread.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeVar

import anyio.to_thread

from readdod.engines.base import EngineInput, EngineOutput
from readdod.errors import AIError, ErrorCode
from readdod.models import (
    TL_DR_MAX,
    Card,
    CardSource,
    Priority,
    Recommendation,
    RenderSpec,
    Score,
    Summary,
    Todo,
    TodoKind,
    Todos,
)

__all__ = [
    "NEUTRAL_SCORE",
    "LocalEngine",
    "TextAnalysis",
    "analyze",
    "build_card",
    "detect_genre",
    "plan_todos",
    "score_text",
    "summarize_text",
]

T = TypeVar("T")
Genre = Literal["tutorial", "research", "opinion", "news", "reference", "general"]

LINE_MAX: Final = 500
RELEVANCE_MAX: Final = 1_000
CARD_TITLE_MAX: Final = 300
TODO_TITLE_MAX: Final = 200
#: Texts longer than this are processed in a worker thread so the event loop stays responsive.
OFFLOAD_CHARS: Final = 20_000
WORDS_PER_MIN: Final = 230
#: Ideographic/syllabic scripts are read per character, roughly this fast.
CHARS_PER_MIN: Final = 500
#: Below this many words (two CJK/Thai characters count as one) a text is too short to
#: summarise: three key points and three reasons would only repeat it.
MIN_WORDS: Final = 8
#: ...and at least this many content words (not stopwords, not numbers).
MIN_TERMS: Final = 3
#: Sentences longer than this are split into clause-sized chunks before ranking.
LONG_SENTENCE: Final = 600
CHUNK_TARGET: Final = 300

# --- scripts and tokens ----------------------------------------------------

# Scripts written without spaces between words: CJK ideographs, kana, Thai, Lao,
# Myanmar, Khmer. They are tokenised into character bigrams instead of words.
_UNSPACED: Final = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
)
# Combining marks that Python's \w does not count as word characters but that sit
# inside words (Latin diacritics, Cyrillic, Hebrew, Arabic, Indic vowel signs).
_MARKS: Final = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0900-\u0dff"
_UNSPACED_RE: Final = re.compile(f"[{_UNSPACED}]+")
_WORD_CHAR: Final = f"(?:[^\\W_{_UNSPACED}]|[{_MARKS}])"
_TOKEN_RE: Final = re.compile(
    f"(?P<unspaced>[{_UNSPACED}]+)|(?P<word>{_WORD_CHAR}+(?:['’]{_WORD_CHAR}+)*)"
)
# Particles that glue CJK words together; splitting on them gives cleaner bigrams.
_CJK_PARTICLES: Final = re.compile(
    "(?:でした|ました|です|ます|から|まで|する|した|して|[的了是在和与及也就都而或着のにはをがでともへや])+"
)
_HIRAGANA: Final = re.compile("[\u3040-\u309f]")

_SCRIPTS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("kana", re.compile("[\u3040-\u30ff]")),
    ("han", re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")),
    ("hangul", re.compile("[\uac00-\ud7af\u1100-\u11ff]")),
    ("cyrillic", re.compile("[\u0400-\u04ff]")),
    ("greek", re.compile("[\u0370-\u03ff]")),
    ("arabic", re.compile("[\u0600-\u06ff]")),
    ("hebrew", re.compile("[\u0590-\u05ff]")),
    ("devanagari", re.compile("[\u0900-\u097f]")),
    ("thai", re.compile("[\u0e00-\u0e7f]")),
    ("latin", re.compile("[A-Za-z\u00c0-\u024f]")),
)
_SCRIPT_LANG: Final[Mapping[str, str]] = {
    "han": "zh",
    "hangul": "ko",
    "cyrillic": "ru",
    "greek": "el",
    "arabic": "ar",
    "hebrew": "he",
    "devanagari": "hi",
    "thai": "th",
}


def _words(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


# Small, deliberately incomplete lists: they only sharpen ranking. Any other
# language still works, its function words just count as ordinary terms.
_STOPWORDS: Final = _words(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing don't down during each either
    etc even ever every few for from further had has have having he her here hers herself him
    himself his how however i i'm if in into is it it's its itself just let's like may me might
    more most much must my myself no nor not now of off often on once one only or other our ours
    ourselves out over own per quite rather really same she should so some such than that that's
    the their theirs them themselves then there there's these they this those through to too
    under until up upon us very via was we were what when where whether which while who whom
    whose why will with within without would yet you your yours yourself yourselves
    и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее
    мне было вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был
    него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней
    для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того
    потому этого какой совсем ним здесь этом один почти мой тем чтобы нее были куда зачем всех
    никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего них
    какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя
    такой им более всегда конечно всю между это как
    el la los las un una unos unas y o del al en es con por para que se su sus lo le les mi mis
    tu esta este esto estos estas ese esa muy más pero como cuando donde también ya sobre entre
    hasta desde porque qué cómo dónde
    une des du et est sont dans qui pas sur au aux ce cette ces il elle ils elles nous vous je
    ne sa ses leur leurs mais ou avec être été
    der das den dem des ein eine einen einem einer und oder ist sind nicht mit sich auf für von
    zu im ich du er sie wir ihr auch wie aber bei nach noch nur wird werden wurde kann
    os um uma uns umas da dos das em na nos nas não mais mas muito ao
    il gli di tra fra che è ma anche più questo questa della dei delle nel nella alla
    """
)
# Words that say *that* someone wants to read, not *what* about.
_INTENT_FILLER: Final = _words(
    """
    want wants wanted need needs learn learning know knowing understand understanding read
    reading find finding get getting use using better more about how what why way ways something
    interested interest looking look figure out improve try trying some idea ideas thing things
    quickly quick somewhere started start starts got come comes mean means follow whether
    decide decided tell remember our my
    хочу хочется узнать изучить понять разобраться научиться нужно про
    quiero necesito saber aprender entender conocer busco veux voudrais besoin savoir apprendre
    comprendre möchte lernen verstehen wissen brauche quero preciso voglio imparare capire sapere
    """
)
_ABBREVIATIONS: Final = _words(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e fig no vol approx cf al inc ltd co jan feb mar "
    "apr jun jul aug sep sept oct nov dec т.е т.д др см г"
)
_LANG_HINTS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("en", _words("the and of to is that with for this are was it you")),
    ("de", _words("der die das und ist nicht mit sich auf für ein eine dem den")),
    ("fr", _words("le la les et est des une dans pour qui pas sur du au")),
    ("es", _words("el los las y es del una para por que con se su al")),
)


def _normalize_space(s: str) -> str:
    return " ".join(s.split())


@functools.lru_cache(maxsize=65_536)
def _term(word: str) -> str:
    """Normalise a spaced-script word: casefold, unify apostrophes, drop plural -s.

    Stopwords are returned unstemmed so that e.g. 'does' is not mistaken for 'doe'.
    """
    w = word.casefold().replace("’", "'")
    if w in _STOPWORDS:
        return w
    if w.endswith("'s"):
        w = w[:-2]
    if w.isascii() and w.isalpha():
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    return w


def _is_gram(term: str) -> bool:
    return len(term) == 2 and _UNSPACED_RE.fullmatch(term) is not None


def _bigrams(run: str) -> list[str]:
    """Character bigrams of an unspaced run, split at particles first."""
    out: list[str] = []
    for part in _CJK_PARTICLES.split(run):
        if len(part) == 1:
            if not _HIRAGANA.match(part):  # a lone kana is grammar, a lone ideograph is a word
                out.append(part)
        else:
            out.extend(part[i : i + 2] for i in range(len(part) - 1))
    return out


@dataclass(frozen=True, slots=True)
class _Tokens:
    terms: tuple[str, ...]
    """Content terms (stopwords, digits and 1-letter words dropped), in order."""
    surfaces: tuple[str, ...]
    """The text each term came from, for display."""
    words: int
    """Spaced-script words, digits included."""
    unspaced_chars: int
    numbers: tuple[str, ...]


def _tokenize(text: str) -> _Tokens:
    terms: list[str] = []
    surfaces: list[str] = []
    numbers: list[str] = []
    words = 0
    unspaced = 0
    for m in _TOKEN_RE.finditer(text):
        run = m.group("unspaced")
        if run is not None:
            unspaced += len(run)
            grams = _bigrams(run)
            terms.extend(grams)
            surfaces.extend(grams)
            continue
        word = m.group("word")
        words += 1
        if word.isdigit():
            numbers.append(word)
            continue
        t = _term(word)
        if len(t) < 2 or t in _STOPWORDS:
            continue
        terms.append(t)
        surfaces.append(word)
    return _Tokens(tuple(terms), tuple(surfaces), words, unspaced, tuple(numbers))


# --- sentences -------------------------------------------------------------

_BOUNDARY_RE: Final = re.compile(
    r"(?P<cjk>[。！？।؟]+[」』”’）\"')]*\s*)|(?P<latin>[.!?…]+[\"'”’»)\]]*\s+)"
)
_LIST_ITEM_RE: Final = re.compile(r"^(?:[-*•–]|\d{1,3}[.)]|step\s+\d+)\s", re.IGNORECASE)
_LINE_END_RE: Final = re.compile(r"[.!?…:;。！？।؟][\"'”’»)\]」』）]*$")
_CLAUSE_RE: Final = re.compile(r"(?<=[,;:，、；：])\s*")


@dataclass(frozen=True, slots=True)
class _Unit:
    paragraph: int
    text: str
    code: bool


_COMPLETE_RE: Final = re.compile(r"[.!?…。！？।؟][\"'”’»)\]」』）]*$")


def _is_complete(sentence: str) -> bool:
    """Ends like a finished sentence (not a heading, not a colon before a list)."""
    return _COMPLETE_RE.search(sentence) is not None


_FLAG_RE: Final = re.compile(r"(?:^|\s)--?[A-Za-z][\w-]*(?:=\S+)?(?=\s|$)")
_SHELL_RE: Final = re.compile(r"&&|\|\||\s[|<>]{1,2}\s|\d>&\d|(?:^|\s)/[\w.-]+/|\s(?:#|//)\s")
_SQL_RE: Final = re.compile(
    r"^(?:SELECT|FROM|WHERE|ORDER BY|GROUP BY|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|EXPLAIN|"
    r"WITH|JOIN|LIMIT|VALUES|ON)\b"
)
_SYMBOLS: Final = frozenset("/\\=<>{}[]()|&$*;'\"`_#~@")


def _looks_like_code(line: str) -> bool:
    """A command or a line of code pasted as plain text (no fence, no indentation).

    Only unfinished lines qualify: prose that mentions ``--delete`` ends with a full stop.
    """
    if _is_complete(line) and not line.endswith(";"):
        return False
    if _SQL_RE.match(line):
        return True
    visible = [c for c in line if not c.isspace()]
    if not visible:
        return False
    symbols = sum(1 for c in visible if c in _SYMBOLS) / len(visible)
    signals = (
        (_FLAG_RE.search(line) is not None)
        + (_SHELL_RE.search(line) is not None)
        + (symbols >= 0.12)
    )
    return signals >= 2 or symbols >= 0.25


def _units(text: str) -> list[_Unit]:
    """Cut text into paragraphs and units: hard-wrapped lines are joined, while headings,
    list items and code (indented, shell prompts, ``` fences) stay separate lines."""
    units: list[_Unit] = []
    buf: list[str] = []
    para = 0
    prev = ""
    in_fence = False

    def flush() -> None:
        if buf:
            units.append(_Unit(para, " ".join(buf), code=False))
            buf.clear()

    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("```"):
            flush()
            in_fence = not in_fence
            continue
        if not line:
            if not in_fence:
                flush()
                if units and units[-1].paragraph == para:
                    para += 1
            continue
        if (
            in_fence
            or raw.startswith(("    ", "\t"))
            or line.startswith(("$ ", ">>> "))
            or _looks_like_code(line)
        ):
            flush()
            units.append(_Unit(para, line, code=True))
            continue
        if buf and (
            len(prev) < 50
            or _LINE_END_RE.search(prev) is not None
            or _LIST_ITEM_RE.match(line) is not None
        ):
            flush()
        buf.append(line)
        prev = line
    flush()
    return units


def _split_sentences(unit: str) -> list[str]:
    """Split at sentence marks; a Latin mark ends a sentence only before a non-lowercase start."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(unit):
        end = m.end()
        if m.group("latin") is not None:
            nxt = unit[end : end + 1]
            if nxt.islower():
                continue
            if unit[m.start()] == ".":
                cut = max(unit.rfind(" ", start, m.start()), start - 1)
                prev_word = unit[cut + 1 : m.start()].casefold()
                if prev_word in _ABBREVIATIONS or (len(prev_word) == 1 and prev_word.isalpha()):
                    continue
        piece = unit[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    tail = unit[start:].strip()
    if tail:
        out.append(tail)
    return out


def _pack(parts: Iterable[str], sep: str, limit: int) -> list[str]:
    """Greedily join parts into chunks of at most about ``limit`` characters."""
    chunks: list[str] = []
    cur = ""
    for p in parts:
        if cur and len(cur) + len(sep) + len(p) > limit:
            chunks.append(cur)
            cur = p
        else:
            cur = f"{cur}{sep}{p}" if cur else p
    if cur:
        chunks.append(cur)
    return chunks


def _chunk(sentence: str) -> list[str]:
    """Break a run-on 'sentence' (no marks at all, e.g. a list or unpunctuated CJK) apart."""
    if len(sentence) <= LONG_SENTENCE:
        return [sentence]
    out: list[str] = []
    for clause in _pack(_CLAUSE_RE.split(sentence), " ", CHUNK_TARGET):
        if len(clause) <= LONG_SENTENCE:
            out.append(clause)
            continue
        for piece in _pack(clause.split(" "), " ", CHUNK_TARGET):
            if len(piece) <= LONG_SENTENCE:
                out.append(piece)
            else:
                out.extend(piece[i : i + CHUNK_TARGET] for i in range(0, len(piece), CHUNK_TARGET))
    return [c.strip() for c in out if c.strip()]


# --- analysis --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sentence:
    index: int
    paragraph: int
    text: str
    terms: tuple[str, ...]
    words: int
    unspaced_chars: int
    code: bool
    """A code or shell line: counted, but never used as a summary sentence."""


@dataclass(frozen=True, slots=True)
class TextAnalysis:
    """Everything the four steps need to know about one text. Read-only."""

    sentences: tuple[Sentence, ...]
    paragraphs: int
    chars: int
    words: int
    unspaced_chars: int
    term_counts: Mapping[str, int]
    surface: Mapping[str, str]
    numbers: tuple[str, ...]
    first_paragraph_terms: frozenset[str]
    lang: str | None
    snippet: str

    @property
    def reading_time_min(self) -> int:
        return math.ceil(self.words / WORDS_PER_MIN + self.unspaced_chars / CHARS_PER_MIN)

    def top_terms(self, n: int) -> list[tuple[str, int]]:
        """Most frequent content terms; ties broken alphabetically so order is stable.

        A CJK bigram that overlaps a better one (器学 after 学习) is a fragment, not a
        term, so it is skipped.
        """
        pool = heapq.nsmallest(n * 6, self.term_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        out: list[tuple[str, int]] = []
        for term, count in pool:
            if _is_gram(term) and any(
                _is_gram(t) and (term[1] == t[0] or term[0] == t[1]) for t, _ in out
            ):
                continue
            out.append((term, count))
            if len(out) == n:
                break
        return out


def _require_text(text: str) -> None:
    if not text.strip():
        raise AIError(
            "There is no text to work with: the article came out empty. "
            "Check the page or paste the text, then process it again.",
            code=ErrorCode.AI_INPUT_EMPTY,
            retryable=False,
        )


def _require_enough(words: int, unspaced: int, terms: int) -> None:
    size = words + unspaced // 2
    if size < MIN_WORDS or terms < MIN_TERMS:
        raise AIError(
            f"The text is too short to summarise: {_plural(size, 'word')}, "
            f"{_plural(terms, 'content word')} (at least {MIN_WORDS} words and "
            f"{MIN_TERMS} content words are needed). Capture the full article or paste more "
            "of its text, then process it again.",
            code=ErrorCode.AI_INPUT_TOO_SHORT,
            retryable=False,
        )


def _guess_lang(text: str) -> str | None:
    """Guess a language from the dominant script; Latin is told apart by function words."""
    sample = text[:20_000]
    counts = {name: len(rx.findall(sample)) for name, rx in _SCRIPTS}
    best = max(counts, key=lambda k: counts[k])  # dict order breaks ties deterministically
    if counts[best] == 0:
        return None
    if best in ("kana", "han") and counts["kana"]:
        return "ja"  # Japanese mixes kanji with kana; Chinese has no kana
    if best == "cyrillic" and len(re.findall("[іїєґІЇЄҐ]", sample)) * 100 >= counts[best]:
        return "uk"  # letters Russian does not have
    if best != "latin":
        return _SCRIPT_LANG.get(best)
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", sample)]
    votes = [(sum(1 for w in words if w in hints), lang) for lang, hints in _LANG_HINTS]
    top = max(v for v, _ in votes)
    if top > 0:
        return next(lang for v, lang in votes if v == top)
    letters = re.findall(r"[^\W\d_]", sample)
    ascii_share = sum(1 for c in letters if c.isascii()) / max(1, len(letters))
    return "en" if ascii_share >= 0.95 else None


@functools.lru_cache(maxsize=4)
def analyze(text: str) -> TextAnalysis:
    """Split, tokenise and count once; the four steps of one run share the result.

    Raises :class:`AIError` (``AI_INPUT_EMPTY`` / ``AI_INPUT_TOO_SHORT``) for a text with
    nothing, or too little, to work with.
    """
    _require_text(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    sentences: list[Sentence] = []
    term_counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    numbers: dict[str, None] = {}
    words = unspaced = 0
    first_para: int | None = None
    first_para_terms: list[str] = []
    units = _units(text)
    for unit in units:
        for raw in [unit.text] if unit.code else _split_sentences(unit.text):
            for piece in _chunk(_normalize_space(raw)):
                tok = _tokenize(piece)
                words += tok.words
                unspaced += tok.unspaced_chars
                term_counts.update(tok.terms)
                for t, s in zip(tok.terms, tok.surfaces, strict=True):
                    surface.setdefault(t, s)
                for n in tok.numbers:
                    if len(numbers) < 8:
                        numbers.setdefault(n)
                if tok.terms and not unit.code and first_para is None:
                    first_para = unit.paragraph
                if first_para == unit.paragraph and len(first_para_terms) < 150:
                    first_para_terms.extend(tok.terms)
                sentences.append(
                    Sentence(
                        index=len(sentences),
                        paragraph=unit.paragraph,
                        text=piece,
                        terms=tok.terms,
                        words=tok.words,
                        unspaced_chars=tok.unspaced_chars,
                        code=unit.code,
                    )
                )
    _require_enough(words, unspaced, sum(term_counts.values()))
    return TextAnalysis(
        sentences=tuple(sentences),
        paragraphs=units[-1].paragraph + 1 if units else 0,
        chars=len(text),
        words=words,
        unspaced_chars=unspaced,
        term_counts=MappingProxyType(dict(term_counts)),
        surface=MappingProxyType(surface),
        numbers=tuple(numbers),
        first_paragraph_terms=frozenset(first_para_terms),
        lang=_guess_lang(text),
        snippet=_trim(_normalize_space(text), 120),
    )


# --- text helpers ----------------------------------------------------------


def _trim(s: str, limit: int) -> str:
    """Cut ``s`` to ``limit`` chars at a word boundary, marking the cut with an ellipsis."""
    s = s.strip()
    if len(s) <= limit:
        return s
    cut = s[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    cut = cut.rstrip(" ,;:-–—")
    return f"{cut}…"


def _quote(s: str, limit: int = 60) -> str:
    return f"“{_trim(_normalize_space(s), limit)}”"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _join(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def _length_phrase(an: TextAnalysis) -> str:
    parts = []
    if an.words:
        parts.append(_plural(an.words, "word"))
    if an.unspaced_chars:
        parts.append(_plural(an.unspaced_chars, "CJK/Thai character"))
    if not parts:
        return f"no words, only {_plural(an.chars, 'symbol')}"
    return " and ".join(parts)


def _reading_phrase(minutes: int) -> str:
    return "under a minute to read" if minutes == 0 else f"about {minutes} min to read"


# --- intent ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Intent:
    raw: str
    terms: tuple[str, ...]
    surface: Mapping[str, str]

    @property
    def label(self) -> str:
        return _quote(self.raw) if self.raw.strip() else "your goal"


def _intent(intent: str) -> _Intent:
    """The intent's topic terms: 'I want to learn about X' is about X, not about wanting."""
    tok = _tokenize(intent)
    surface: dict[str, str] = {}
    for t, s in zip(tok.terms, tok.surfaces, strict=True):
        surface.setdefault(t, s)
    topical = [t for t in surface if t not in _INTENT_FILLER]
    return _Intent(intent, tuple(topical[:20]), MappingProxyType(surface))


# --- ranking ---------------------------------------------------------------


#: Bonus for the first prose sentences: openings state what a text is about.
_LEAD_BONUS: Final = (0.25, 0.15, 0.1)
# A sentence that leans on the one before it reads badly on its own ("If it fails, ...",
# "This is why ..."); one that names the text itself ("This guide shows ...") does not.
_DANGLING_RE: Final = re.compile(
    r"^(?:if|this|that|these|those|it|its|they|them|he|she|but|and|so|then|also|however|"
    r"such|there|here|which|thus|otherwise|instead)\b(?!\s+(?:article|guide|tutorial|post|"
    r"paper|study|page|essay|card|report|piece|review|book|section|text)\b)",
    re.IGNORECASE,
)


def _rank(an: TextAnalysis, intent: _Intent) -> list[tuple[float, Sentence]]:
    """Sentences with content, best first.

    Score = TF-IDF cosine of the sentence's distinct terms to the whole text (normalised to
    the best sentence) + 0.6 x share of intent terms in the sentence + a lead bonus for the
    first prose sentences; sentences that lean on context or carry commands count less.
    Distinct terms, so that a sentence repeating the top word ("run git bisect good; ...
    git bisect bad") does not pass for the most central one.
    """
    candidates = [s for s in an.sentences if s.terms and not s.code]
    candidates = candidates or [s for s in an.sentences if s.terms]
    if not candidates:
        return []
    df: Counter[str] = Counter()
    for s in candidates:
        df.update(dict.fromkeys(s.terms, 1))
    n = len(candidates)
    idf = {t: math.log((n + 1) / (c + 1)) + 1.0 for t, c in df.items()}
    doc = {t: an.term_counts.get(t, 0) * w for t, w in idf.items()}
    doc_norm = math.sqrt(sum(v * v for v in doc.values())) or 1.0
    wanted = dict.fromkeys(intent.terms)
    prose = [s.index for s in candidates if not s.code and _is_complete(s.text)]
    lead = dict(zip(prose, _LEAD_BONUS, strict=False))
    raw: list[tuple[float, float, Sentence]] = []
    for s in candidates:
        distinct = dict.fromkeys(s.terms)
        dot = sum(idf[t] * doc[t] for t in distinct)
        norm = math.sqrt(sum(idf[t] ** 2 for t in distinct)) or 1.0
        cos = dot / (norm * doc_norm)
        if s.words < 4 and s.unspaced_chars < 8:
            cos *= 0.5  # fragments rarely summarise anything
        elif not _is_complete(s.text):
            cos *= 0.7  # nor do headings or lines that introduce a list or code
        rel = sum(1 for t in wanted if t in distinct) / len(wanted) if wanted else 0.0
        raw.append((cos, rel, s))
    top_cos = max(c for c, _, _ in raw) or 1.0
    scored = []
    for c, r, s in raw:
        value = c / top_cos + 0.6 * r + lead.get(s.index, 0.0)
        if _DANGLING_RE.match(s.text):
            value *= 0.85
        if _FLAG_RE.search(s.text) or _SHELL_RE.search(s.text):
            value *= 0.85
        scored.append((value, s))
    scored.sort(key=lambda x: (-x[0], x[1].index))
    return scored


def _join_sentences(sentences: Iterable[str]) -> str:
    """Join with a space, except after CJK full stops, where a space would look wrong."""
    out = ""
    for s in sentences:
        s = s.strip()
        if not s:
            continue
        if out and not _UNSPACED_RE.fullmatch(out[-1]) and out[-1] not in "。！？」』）":
            out += " "
        out += s
    return out


def _dup_key(s: str) -> str:
    return s.strip().lower()


def _near_duplicate(a: Sentence, b: Sentence) -> bool:
    """Same words, or one says nothing the other does not ("Retry with backoff." after
    "Clients may retry with exponential backoff and jitter.")."""
    if _dup_key(a.text) == _dup_key(b.text):
        return True
    sa, sb = set(a.terms), set(b.terms)
    shared = len(sa & sb)
    if shared / max(1, len(sa | sb)) >= 0.8:
        return True
    smaller = min(len(sa), len(sb))
    return smaller >= 3 and shared / smaller >= 0.8


def _select(ranked: Sequence[tuple[float, Sentence]], k: int) -> list[Sentence]:
    chosen: list[Sentence] = []
    for _, s in ranked:
        if len(chosen) >= k:
            break
        if not any(_near_duplicate(s, c) for c in chosen):
            chosen.append(s)
    return chosen


# --- summary ---------------------------------------------------------------


def _fact_points(an: TextAnalysis, rt: int) -> list[str]:
    """Points that are true of any text, used when it has too few sentences of its own."""
    facts = [
        f"Length: {_length_phrase(an)}, {_reading_phrase(rt)}.",
        f"Structure: {_plural(len(an.sentences), 'sentence')} "
        f"in {_plural(an.paragraphs, 'paragraph')}.",
    ]
    top = an.top_terms(5)
    if top:
        terms = ", ".join(f"{an.surface[t]} ({c}×)" for t, c in top)
        facts.append(f"Most frequent terms: {terms}.")
    else:
        facts.append(f"No words to summarise; the text reads {_quote(an.snippet, 200)}.")
    if an.numbers:
        facts.append("Numbers mentioned: " + ", ".join(an.numbers[:6]) + ".")
    return facts


def _clause_points(sentences: Sequence[Sentence]) -> list[str]:
    out: list[str] = []
    for s in sentences:
        clauses = [c.strip(" ,;:，、；：") for c in _CLAUSE_RE.split(s.text)]
        if len(clauses) > 1:
            out.extend(c for c in clauses if len(_tokenize(c).terms) >= 2)
    return out


def _dedupe(items: Iterable[str], limit: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        key = _dup_key(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
        if len(out) == limit:
            break
    return out


@dataclass(frozen=True, slots=True)
class _Hit:
    label: str
    """What a person recognises: a word, or a CJK run rebuilt from its bigrams."""
    count: int
    term: str
    """The first term of the label, for finding where it occurs."""


def _hits(terms: Sequence[str], intent: _Intent, an: TextAnalysis) -> list[_Hit]:
    """Group intent terms for display; adjacent CJK bigrams (深度, 度学, 学习) become 深度学习.

    A rebuilt run is counted as its rarest bigram: an upper bound on the phrase count.
    """
    out: list[_Hit] = []
    prev = ""
    for t in terms:
        count = an.term_counts.get(t, 0)
        if out and _is_gram(t) and _is_gram(prev) and prev[1] == t[0]:
            last = out[-1]
            out[-1] = _Hit(last.label + t[1], min(last.count, count), last.term)
        else:
            out.append(_Hit(intent.surface[t], count, t))
        prev = t
    return out


@dataclass(frozen=True, slots=True)
class _Match:
    found: list[_Hit]
    missing: list[_Hit]
    coverage: float
    """Share of intent terms present in the text; a term met only once, in passing (not in
    the opening paragraph), counts half."""
    hits: int
    per_k: float
    """Intent-term occurrences per 1,000 words (or CJK characters)."""


def _bridge(term: str, found: Sequence[str]) -> bool:
    """A CJK bigram that straddles two words of the intent (ス転 in バス転換) is no term."""
    return _is_gram(term) and any(
        _is_gram(f) and (f[1] == term[0] or f[0] == term[1]) for f in found
    )


def _match(an: TextAnalysis, intent: _Intent) -> _Match:
    found = [t for t in intent.terms if an.term_counts.get(t)]
    missing = [t for t in intent.terms if not an.term_counts.get(t) and not _bridge(t, found)]
    found_hits = _hits(found, intent, an)
    hits = sum(h.count for h in found_hits)
    weight = sum(
        1.0 if an.term_counts[t] > 1 or t in an.first_paragraph_terms else 0.5 for t in found
    )
    return _Match(
        found=sorted(found_hits, key=lambda h: -h.count),
        missing=_hits(missing, intent, an),
        coverage=weight / (len(found) + len(missing)) if found or missing else 0.0,
        hits=hits,
        per_k=hits * 1000 / max(1, an.words + an.unspaced_chars),
    )


def _names(hits: Sequence[_Hit], n: int = 6) -> str:
    names = [_quote(h.label, 40) for h in hits[:n]]
    if len(hits) > n:
        names.append(f"{len(hits) - n} more")
    return _join(names)


def _counts(hits: Sequence[_Hit], n: int = 6) -> str:
    return ", ".join(f"“{_trim(h.label, 40)}” {h.count:,}×" for h in hits[:n])


def _intent_relevance(an: TextAnalysis, intent: _Intent, best: Sentence | None) -> str:
    """Say concretely how the text serves the intent: which terms, how often, where."""
    topics = ", ".join(an.surface[t] for t, _ in an.top_terms(3)) or "no identifiable topic"
    if not intent.terms:
        return (
            f"The intent {intent.label} names no topic to look for, so relevance cannot be "
            f"measured; the text is mainly about {topics}."
        )
    m = _match(an, intent)
    if not m.found:
        return (
            f"None of the intent terms ({_names(m.missing)}) appear in the text; it is mainly "
            f"about {topics}, so it likely does not serve {intent.label}."
        )
    total = len(m.found) + len(m.missing)
    text = f"Serves {intent.label}: mentions {len(m.found)} of {total} intent terms"
    text += f" ({_counts(m.found)})"
    if m.missing:
        text += f" but not {_names(m.missing, 4)}"
    text += "."
    if best is not None:
        text += f" Most relevant passage: {_quote(best.text, 200)}"
    return text


def _tl_dr(chosen: Sequence[Sentence]) -> tuple[str, list[Sentence]]:
    """The best sentence, plus the runner-up when both fit; always in reading order.

    Finished sentences are preferred: a heading reads badly as a summary.
    """
    complete = [
        s for s in chosen if _is_complete(s.text) and (s.words >= 4 or s.unspaced_chars >= 8)
    ]
    chosen = complete or chosen
    first = chosen[0]
    used = [first]
    if len(chosen) > 1 and len(first.text) < 140:
        second = chosen[1]
        if len(first.text) + 1 + len(second.text) <= TL_DR_MAX:
            used.append(second)
    used.sort(key=lambda s: s.index)
    return _trim(_join_sentences(s.text for s in used), TL_DR_MAX), used


def _key_points(
    an: TextAnalysis, chosen: Sequence[Sentence], used: Sequence[Sentence]
) -> list[str]:
    """3-7 distinct points: ranked sentences, then their clauses, then facts about the text."""
    k = min(6, 3 + len(an.sentences) // 15)
    rest = [s for s in chosen if s not in used]
    body = sorted(rest[:k] if len(rest) >= 3 else chosen[:k], key=lambda s: s.index)
    points = _dedupe((_trim(s.text, LINE_MAX) for s in body), 7)
    if len(points) < 3:
        clauses = (_trim(c, LINE_MAX) for c in _clause_points(chosen))
        points = _dedupe([*points, *clauses], 3)
    if len(points) < 3:
        # The facts are >= 3 mutually distinct strings, so this always reaches 3.
        points = _dedupe([*points, *_fact_points(an, an.reading_time_min)], 7)
    return points


def summarize_text(inp: EngineInput) -> Summary:
    """An extractive, intent-aware summary of ``inp.text``."""
    an = analyze(inp.text)
    intent = _intent(inp.intent)
    ranked = _rank(an, intent)
    chosen = _select(ranked, 8)
    if chosen:
        tl_dr, used = _tl_dr(chosen)
    else:
        tl_dr = _trim(
            f"A text of {_plural(an.chars, 'symbol')} without words: {_quote(an.snippet, 200)}",
            TL_DR_MAX,
        )
        used = []
    wanted = set(intent.terms)
    best = next((s for _, s in ranked if wanted.intersection(s.terms)), None)
    return Summary(
        tl_dr=tl_dr,
        key_points=_key_points(an, chosen, used),
        intent_relevance=_trim(_intent_relevance(an, intent, best), RELEVANCE_MAX),
        reading_time_min=an.reading_time_min,
        lang=inp.lang or an.lang,
    )


# --- score -----------------------------------------------------------------


def _priority(score: int) -> Priority:
    if score >= 80:
        return "P0"
    if score >= 60:
        return "P1"
    if score >= 40:
        return "P2"
    return "P3"


def _recommendation(score: int) -> Recommendation:
    if score >= 60:
        return "read"
    if score >= 40:
        return "skim"
    return "skip"


#: Score when the intent names no topic: neither a match nor a mismatch.
NEUTRAL_SCORE: Final = 40


def score_text(inp: EngineInput, summary: Summary) -> Score:
    """Match score from intent-term coverage (60%), density (25%) and prominence (15%).

    Coverage is the share of the intent's topic terms found in the text, density their
    occurrences per 1,000 words (saturating at 10), prominence the share found in the title or
    opening paragraph.
    """
    an = analyze(inp.text)
    intent = _intent(inp.intent)
    rt = summary.reading_time_min
    length_reason = f"Length: {_length_phrase(an)}, {_reading_phrase(rt)}."
    top = an.top_terms(5)
    topics = ", ".join(f"{an.surface[t]} ({c}×)" for t, c in top)
    if not intent.terms:
        reasons = [
            f"The intent {intent.label} names no topic, so the score is a neutral {NEUTRAL_SCORE}.",
            f"Most frequent terms: {topics}." if top else "The text has no words to match.",
            length_reason,
        ]
        return _make_score(NEUTRAL_SCORE, reasons)
    m = _match(an, intent)
    title_terms = set(_tokenize(inp.title or "").terms)
    prominent = [t for t in intent.terms if t in title_terms or t in an.first_paragraph_terms]
    density = min(1.0, m.per_k / 10)
    prominence = len(prominent) / len(intent.terms)
    # Intents are wordy ("...this sprint"), so missing terms cost less and less: sqrt.
    match = round(100 * (0.6 * math.sqrt(m.coverage) + 0.25 * density + 0.15 * prominence))
    if not m.found:
        reasons = [
            f"None of the intent terms ({_names(m.missing)}) appear in the text.",
            f"The text is about other things; most frequent terms: {topics}."
            if top
            else "The text has no words that could match the intent.",
            length_reason,
        ]
        return _make_score(match, reasons)
    total = len(m.found) + len(m.missing)
    coverage_reason = f"Found {len(m.found)} of {total} intent terms: {_names(m.found)}"
    coverage_reason += f"; missing {_names(m.missing)}." if m.missing else "."
    unit = "words" if an.words >= an.unspaced_chars else "characters"
    density_reason = (
        f"Intent terms occur {_plural(m.hits, 'time')} ({m.per_k:.1f} per 1,000 {unit}): "
        f"{_counts(m.found)}."
    )
    where = []
    for h in sorted(m.found, key=lambda h: -h.count)[:4]:
        spots = [
            spot
            for spot, ok in (
                ("the title", h.term in title_terms),
                ("the opening paragraph", h.term in an.first_paragraph_terms),
            )
            if ok
        ]
        first = next(s.index for s in an.sentences if h.term in s.terms) + 1
        at = _join(spots) if spots else f"sentence {first} of {len(an.sentences)}"
        where.append(f"“{_trim(h.label, 40)}” in {at}")
    where_reason = "Where: " + "; ".join(where) + "."
    return _make_score(match, [coverage_reason, density_reason, where_reason, length_reason])


def _make_score(match: int, reasons: Sequence[str]) -> Score:
    match = max(0, min(100, match))
    return Score(
        match_score=match,
        priority=_priority(match),
        reasons=_dedupe((_trim(r, LINE_MAX) for r in reasons), 10),
        recommendation=_recommendation(match),
    )


# --- todos -----------------------------------------------------------------

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


def _focus(an: TextAnalysis, intent: _Intent, n: int) -> list[str]:
    """What the text says about the intent: intent terms found (most frequent first), then
    the text's own most frequent terms."""
    found = sorted(_match(an, intent).found, key=lambda h: -h.count)
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
    intent = _intent(inp.intent)
    genre = detect_genre(inp.text, an.words)
    title = _quote(_display_title(inp, an), 60)
    topics = _join(_focus(an, intent, 3)) or "the key points"
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
            (f"Put the next date in your calendar: {_quote(when, 100)}", "action", 5)
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
        items.append((f"Read {title} in full ({_reading_phrase(rt)})", "read", rt))
    elif score.recommendation == "skim":
        items.append((f"Skim {title} for the parts about {topics}", "read", max(1, rt // 3)))
    else:
        missing = _match(an, intent).missing
        if missing:
            items.append(
                (
                    f"Find a better source for {goal}: this one never mentions "
                    f"{_names(missing, 4)}",
                    "learn",
                    15,
                )
            )
        items.append(
            (f"Archive {title}: it matches {goal} poorly (score {score.match_score})", "action", 1)
        )
    return Todos(
        items=[
            Todo(title=_trim(t, TODO_TITLE_MAX), kind=k, estimate_min=_clamp_minutes(m))
            for t, k, m in items
        ]
    )


# --- card ------------------------------------------------------------------

CARD_SECTIONS: Final = ("one_liner", "summary", "key_points", "todos", "reasons", "source")


def _display_title(inp: EngineInput, an: TextAnalysis) -> str:
    """The given title, else the first sentence, else a snippet of the text."""
    title = _normalize_space(inp.title or "")
    if title:
        return _trim(title, CARD_TITLE_MAX)
    wordy = (s for s in an.sentences if not s.code and (s.words >= 3 or s.unspaced_chars >= 6))
    first = next(wordy, an.sentences[0] if an.sentences else None)
    return _trim(first.text if first else an.snippet, 120)


def build_card(inp: EngineInput, summary: Summary, score: Score, todos: Todos) -> Card:
    """Assemble the card from the earlier payloads; only the title may come from the text."""
    an = analyze(inp.text)
    tl_dr = _normalize_space(summary.tl_dr)
    first = next(iter(_split_sentences(tl_dr)), tl_dr)
    balanced = first.count("“") == first.count("”")
    one_liner = first if len(first) >= 20 and balanced else tl_dr
    # One more point makes the summary richer, but never a statistic about the text.
    facts = {_dup_key(f) for f in _fact_points(an, an.reading_time_min)}
    extra = next(
        (p for p in summary.key_points if p.strip() not in tl_dr and _dup_key(p) not in facts),
        None,
    )
    body = _join_sentences([tl_dr, extra or ""])
    return Card(
        title=_display_title(inp, an),
        one_liner=_trim(one_liner or summary.tl_dr, TL_DR_MAX),
        summary=body,
        key_points=list(summary.key_points),
        todos=list(todos.items),
        priority=score.priority,
        match_score=score.match_score,
        tags=list(inp.tags),
        source=CardSource(url=inp.url, title=inp.title, site_name=inp.site_name),
        render_spec=RenderSpec(template="card", version="card.v1", sections=list(CARD_SECTIONS)),
    )


# --- engine ----------------------------------------------------------------


async def _run(text: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` inline for short texts, in a worker thread for long ones."""
    _require_text(text)
    if len(text) > OFFLOAD_CHARS:
        return await anyio.to_thread.run_sync(fn)
    return fn()


class LocalEngine:
    """The :class:`readdod.engines.base.Engine` that needs nothing but the text."""

    name: str = "local"
    version: str = "1"

    def circuit_state(self) -> str:
        return "closed"

    async def aclose(self) -> None:
        pass

    async def summarize(self, inp: EngineInput) -> EngineOutput[Summary]:
        payload = await _run(inp.text, functools.partial(summarize_text, inp))
        return EngineOutput(payload=payload, template_version="summary.local.v1")

    async def score(self, inp: EngineInput, summary: Summary) -> EngineOutput[Score]:
        payload = await _run(inp.text, functools.partial(score_text, inp, summary))
        return EngineOutput(payload=payload, template_version="score.local.v1")

    async def todos(self, inp: EngineInput, summary: Summary, score: Score) -> EngineOutput[Todos]:
        payload = await _run(inp.text, functools.partial(plan_todos, inp, summary, score))
        return EngineOutput(payload=payload, template_version="todos.local.v1")

    async def card(
        self, inp: EngineInput, summary: Summary, score: Score, todos: Todos
    ) -> EngineOutput[Card]:
        payload = await _run(inp.text, functools.partial(build_card, inp, summary, score, todos))
        return EngineOutput(payload=payload, template_version="card.local.v1")
