"""What the four steps share about one text: its units, sentences, terms and language.

Computed once per text by :func:`analyze` and cached, so the steps of one run
pay for it once. Raises ``AI_INPUT_EMPTY`` / ``AI_INPUT_TOO_SHORT`` for a text
with nothing, or too little, to work with.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from readdod.engines.local.wording import normalize_space, plural, trim
from readdod.errors import AIError, ErrorCode
from readdod.text import (
    Level,
    chunk,
    is_complete,
    reading_minutes,
    script_counts,
    split_clauses,
    split_sentences,
)
from readdod.text.language import detect_language
from readdod.text.scripts import HIRAGANA, MARKS, UNSPACED, UNSPACED_RUN_RE
from readdod.text.stems import stem, stemmable, weight, zipf

#: Below this many words (two CJK/Thai characters count as one) a text is too short to
#: summarise: three key points and three reasons would only repeat it.
MIN_WORDS: Final = 8
#: ...and at least this many content words (not stopwords, not numbers).
MIN_TERMS: Final = 3
#: Sentences longer than this are split into clause-sized chunks before ranking.
LONG_SENTENCE: Final = 600
CHUNK_TARGET: Final = 300


# Unspaced scripts (CJK, Thai, ...) are tokenised into character bigrams instead of words.
_WORD_CHAR: Final = f"(?:[^\\W_{UNSPACED}]|[{MARKS}])"
_TOKEN_RE: Final = re.compile(
    f"(?P<unspaced>[{UNSPACED}]+)|(?P<word>{_WORD_CHAR}+(?:['’]{_WORD_CHAR}+)*)"
)
# Particles that glue CJK words together; splitting on them gives cleaner bigrams.
_CJK_PARTICLES: Final = re.compile(
    "(?:でした|ました|です|ます|から|まで|する|した|して|[的了是在和与及也就都而或着のにはをがでともへや])+"
)
_HIRAGANA: Final = re.compile(f"[{HIRAGANA}]")


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


def word_set(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


# Small, deliberately incomplete lists: they only sharpen ranking. Any other
# language still works, its function words just count as ordinary terms.
_STOPWORDS: Final = word_set(
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


_LANG_HINTS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("en", word_set("the and of to is that with for this are was it you")),
    ("de", word_set("der die das und ist nicht mit sich auf für ein eine dem den")),
    ("fr", word_set("le la les et est des une dans pour qui pas sur du au")),
    ("es", word_set("el los las y es del una para por que con se su al")),
)


#: Stems this frequent (Zipf scale) are function words in any language: not terms at all.
FUNCTION_ZIPF: Final = 6.2


@functools.lru_cache(maxsize=65_536)
def is_stopword(word: str, lang: str | None) -> bool:
    """A casefolded word that says nothing about a topic: listed, or among the language's
    very commonest (its stem at :data:`FUNCTION_ZIPF` or above)."""
    if word in _STOPWORDS:
        return True
    if not stemmable(lang):
        return False
    z = zipf(stem(word, lang), lang)
    return z is not None and z >= FUNCTION_ZIPF


@functools.lru_cache(maxsize=65_536)
def _term(word: str, lang: str | None = None) -> str:
    """Normalise a spaced-script word: casefold, unify apostrophes, then stem it (Snowball)
    in a language that has a stemmer, else just drop a plural -s.

    Stopwords are returned unstemmed so that e.g. 'does' is not mistaken for 'doe'.
    """
    w = word.casefold().replace("’", "'")
    if is_stopword(w, lang):
        return w
    if stemmable(lang):
        return stem(w, lang)
    if w.endswith("'s"):
        w = w[:-2]
    if w.isascii() and w.isalpha():
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    return w


def is_gram(term: str) -> bool:
    return len(term) == 2 and UNSPACED_RUN_RE.fullmatch(term) is not None


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


def term_weight(term: str, lang: str | None) -> float:
    """How much sharing ``term`` says (:func:`readdod.text.stems.weight`); 1.0 for CJK pairs."""
    return 1.0 if is_gram(term) else weight(term, lang)


def tokenize(text: str, lang: str | None = None) -> _Tokens:
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
        t = _term(word, lang)
        if len(t) < 2 or is_stopword(t, lang):
            continue
        terms.append(t)
        surfaces.append(word)
    return _Tokens(tuple(terms), tuple(surfaces), words, unspaced, tuple(numbers))


_LIST_ITEM_RE: Final = re.compile(r"^(?:[-*•–]|\d{1,3}[.)]|step\s+\d+)\s", re.IGNORECASE)
_LINE_END_RE: Final = re.compile(r"[.!?…:;。！？।؟][\"'”’»)\]」』）]*$")


@dataclass(frozen=True, slots=True)
class Unit:
    paragraph: int
    text: str
    code: bool


FLAG_RE: Final = re.compile(r"(?:^|\s)--?[A-Za-z][\w-]*(?:=\S+)?(?=\s|$)")
SHELL_RE: Final = re.compile(r"&&|\|\||\s[|<>]{1,2}\s|\d>&\d|(?:^|\s)/[\w.-]+/|\s(?:#|//)\s")
_SQL_RE: Final = re.compile(
    r"^(?:SELECT|FROM|WHERE|ORDER BY|GROUP BY|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|EXPLAIN|"
    r"WITH|JOIN|LIMIT|VALUES|ON)\b"
)
_SYMBOLS: Final = frozenset("/\\=<>{}[]()|&$*;'\"`_#~@")


def _looks_like_code(line: str) -> bool:
    """A command or a line of code pasted as plain text (no fence, no indentation).

    Only unfinished lines qualify: prose that mentions ``--delete`` ends with a full stop.
    """
    if is_complete(line) and not line.endswith(";"):
        return False
    if _SQL_RE.match(line):
        return True
    visible = [c for c in line if not c.isspace()]
    if not visible:
        return False
    symbols = sum(1 for c in visible if c in _SYMBOLS) / len(visible)
    signals = (
        (FLAG_RE.search(line) is not None) + (SHELL_RE.search(line) is not None) + (symbols >= 0.12)
    )
    return signals >= 2 or symbols >= 0.25


def units(text: str) -> list[Unit]:
    """Cut text into paragraphs and units: hard-wrapped lines are joined, while headings,
    list items and code (indented, shell prompts, ``` fences) stay separate lines."""
    out: list[Unit] = []
    buf: list[str] = []
    para = 0
    prev = ""
    in_fence = False

    def flush() -> None:
        if buf:
            out.append(Unit(para, " ".join(buf), code=False))
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
                if out and out[-1].paragraph == para:
                    para += 1
            continue
        if (
            in_fence
            or raw.startswith(("    ", "\t"))
            or line.startswith(("$ ", ">>> "))
            or _looks_like_code(line)
        ):
            flush()
            out.append(Unit(para, line, code=True))
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
    return out


_RUN_ON_LEVELS: Final = (Level(split_clauses, " "), Level(lambda s: s.split(" "), " "))


def _chunk(sentence: str) -> list[str]:
    """Break a run-on 'sentence' (no marks at all, e.g. a list or unpunctuated CJK) apart:
    clause-sized chunks, then word-sized ones, then fixed slices."""
    return chunk(sentence, _RUN_ON_LEVELS, CHUNK_TARGET, limit=LONG_SENTENCE)


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
    """The text's language; terms are stems in it when it has a stemmer."""
    snippet: str
    reading_time_min: int
    """From the text's word count (:func:`readdod.text.reading_minutes`), as everywhere."""

    def weight(self, term: str) -> float:
        return term_weight(term, self.lang)

    def topics(self, n: int, *, min_weight: float = 0.5) -> list[tuple[str, int]]:
        """The text's strongest specific terms: count x weight, best first, stable order."""
        scored = [
            (t, c)
            for t, c in self.term_counts.items()
            if c > 1 and self.weight(t) >= min_weight and not t.isdigit()
        ]
        scored.sort(key=lambda tc: (-tc[1] * self.weight(tc[0]), tc[0]))
        return scored[:n]

    def top_terms(self, n: int) -> list[tuple[str, int]]:
        """Most frequent content terms; ties broken alphabetically so order is stable.

        A CJK bigram that overlaps a better one (器学 after 学习) is a fragment, not a
        term, so it is skipped.
        """
        pool = heapq.nsmallest(n * 6, self.term_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        out: list[tuple[str, int]] = []
        for term, count in pool:
            if is_gram(term) and any(
                is_gram(t) and (term[1] == t[0] or term[0] == t[1]) for t, _ in out
            ):
                continue
            out.append((term, count))
            if len(out) == n:
                break
        return out


def require_text(text: str) -> None:
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
            f"The text is too short to summarise: {plural(size, 'word')}, "
            f"{plural(terms, 'content word')} (at least {MIN_WORDS} words and "
            f"{MIN_TERMS} content words are needed). Capture the full article or paste more "
            "of its text, then process it again.",
            code=ErrorCode.AI_INPUT_TOO_SHORT,
            retryable=False,
        )


def text_language(text: str) -> str | None:
    """The text's language: from the bundled word lists where they can tell, else a guess."""
    found = detect_language(text)
    guess = _guess_lang(text)
    if found is None or (found == "ru" and guess == "uk"):
        return guess
    return found


def _guess_lang(text: str) -> str | None:
    """Guess a language from the dominant script; Latin is told apart by function words."""
    sample = text[:20_000]
    counts = script_counts(sample)
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
    require_text(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    sentences: list[Sentence] = []
    term_counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    numbers: dict[str, None] = {}
    words = unspaced = 0
    first_para: int | None = None
    first_para_terms: list[str] = []
    parts = units(text)
    lang = text_language(text)
    for unit in parts:
        for raw in [unit.text] if unit.code else split_sentences(unit.text):
            for piece in _chunk(normalize_space(raw)):
                tok = tokenize(piece, lang)
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
        paragraphs=parts[-1].paragraph + 1 if parts else 0,
        chars=len(text),
        words=words,
        unspaced_chars=unspaced,
        term_counts=MappingProxyType(dict(term_counts)),
        surface=MappingProxyType(surface),
        numbers=tuple(numbers),
        first_paragraph_terms=frozenset(first_para_terms),
        lang=lang,
        snippet=trim(normalize_space(text), 120),
        reading_time_min=reading_minutes(text),
    )
