"""The instructions a text gives, in its own words, cleaned into todo titles. Pure.

A how-to text says what to do: imperative sentences ("Water deeply at the
base", "Füttern Sie den Sauerteig", "Arrosez le soir", "Поливайте помидоры"),
numbered or bulleted steps, and advice with a modal ("you should …", "Sie
sollten …", "il faut …", "hay que …", "следует …"). Each language has its own
cues (:data:`CUES`); English, German, French, Spanish, Russian, Chinese and
Japanese are known.
A text in another language gets no instructions rather than guesses.

A sentence counts when its first word, or the first word after a short
opening clause ("If the leaves turn brown, remove …"), is an imperative, or
when it opens with a modal of advice. Listed steps and modal advice always
count; bare imperatives only in a text that gives them often (at least one
sentence in ten, and two in all), because an essay's occasional "write the
sentence" is rhetoric rather than a step. A short note (a few sentences) is
all steps or none, so one imperative there is enough.

Chinese and Japanese mark instructions with words, not endings: a request or
advice (请, 应该, 不要, 记得; ください, ましょう, なさい), or a step's sequence
word (先, 然后, 再; まず, 次に) at the start of a clause, after an opening
"before/when …" clause (骑车前, 乗る前に).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from readdod.engines.local.analysis import is_stopword, units, word_set
from readdod.engines.local.wording import dup_key, normalize_space
from readdod.text import is_complete, split_sentences, word_count
from readdod.text.scripts import UNSPACED_RE

#: Longest todo title (models.Todo); longer instructions are cut at a clause or dropped.
TITLE_MAX: Final = 200
#: Shortest cut instruction worth keeping.
MIN_CUT: Final = 40
#: Share of a text's sentences that must be imperatives for bare imperatives to count.
INSTRUCTIVE_SHARE: Final = 0.1
#: A text of at most this many sentences is a note: one bare imperative is enough there.
NOTE_SENTENCES: Final = 4
#: Words an instruction may have: fewer is a fragment, more a paragraph.
MIN_WORDS: Final = 3
MAX_WORDS: Final = 45

_MARKER_RE: Final = re.compile(
    r"^(?:[-*•–]\s+|\(?\d{1,2}[.)]\s+|"
    r"(?:step|schritt|paso|étape|etape|шаг|passo|stap)\s*\d{1,2}\s*[:.)–-]?\s+)",
    re.IGNORECASE,
)
_WORD_RE: Final = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
#: A short clause or label before the instruction: "If the leaves turn brown, remove …",
#: "Cold brew: mix …".
_LEAD_RE: Final = re.compile(r"^([^,;:]{2,80})[,:]\s+(.*)$", re.DOTALL)
_TERMINAL: Final = ".!。！"

_EN_VERBS: Final = word_set("""
    add adjust aim allow apply arrange ask attach avoid back bake begin book boil bring build
    bury buy calculate call cancel change check choose chop cite clean clear click close collect
    combine compare complete configure confirm connect consider contact cook copy count cover
    create cut decide define delete describe dig disable download drain draw drink drop eat edit
    enable end enter estimate explain feed fill find finish fix fold follow forget freeze gather
    get give go grab harvest heat help hold identify ignore include insert install invest join
    keep label launch leave let limit list listen load lock look make mark measure meet mix
    monitor move mulch name note open order organise organize pack paint pay pick pinch place
    plan plant play plug pour practise practice prepare press print protect prune pull push put
    read record reduce register rehearse relax remember remove rename repeat replace reply report
    request reserve reset rest restart review rinse rotate run save schedule search select send
    separate serve set share show sign skip sleep slice slow sort sow speak spend spray spread
    squeeze stand start stay stir stop store stretch submit swap switch take talk taste tell test
    think tidy tie tighten track train trim try turn type unplug update upload use verify visit
    wait walk wash watch water wear weigh wipe write activate deactivate export import mount
    compile deploy commit merge clone navigate scroll paste drag highlight download unpack
    extract sign plug charge fill wrap rinse season simmer knead preheat grease whisk
    """)
_EN_BLOCKERS: Final = word_set(
    "is are was were be been will would can could should may might must has have had does did "
    "do seems seem"
)
_EN_LEADS: Final = word_set(
    "always never please just simply first then next finally also now and don't"
)
#: Words that open a sentence and take an object without being verbs: "Unlike the …",
#: "Second, the …".
_EN_NOT_VERBS: Final = word_set(
    """
    second third fourth fifth lastly unlike despite inside outside behind beside besides near
    toward towards across along around beyond amid except onto upon via plus minus unless
    although though whereas since like including regarding concerning given
    """
)
_EN_MODAL_RE: Final = re.compile(
    r"^(?:you\s+(?:should|must|need\s+to|have\s+to|'ll\s+want\s+to|will\s+want\s+to)|"
    r"make\s+sure|be\s+sure\s+to|remember\s+to|don't\s+forget\s+to|do\s+not\s+forget\s+to|"
    r"it(?:'s|\s+is)\s+(?:important|best|worth\s+it)\s+to)\s+",
    re.IGNORECASE,
)
_EN_STRIP_RE: Final = re.compile(
    r"^you\s+(?:should|must|need\s+to|have\s+to|'ll\s+want\s+to|will\s+want\s+to)\s+",
    re.IGNORECASE,
)
_DE_IMPERATIVE_RE: Final = re.compile(r"^[A-ZÄÖÜ][a-zäöüß]+(?:en|ern|eln)\s+Sie\b")
_DE_MODAL_RE: Final = re.compile(
    r"^(?:Sie\s+(?:sollten|müssen)|man\s+(?:sollte|muss)|Vergessen\s+Sie\s+nicht|"
    r"Denken\s+Sie\s+daran|Achten\s+Sie\s+darauf|Es\s+ist\s+wichtig)\b",
    re.IGNORECASE,
)
_FR_NOT_VERBS: Final = word_set("chez assez nez rez rendez-vous")
_FR_IMPERATIVE_RE: Final = re.compile(
    r"^(?:n['’]|ne\s+)?[a-zàâçéèêëîïôûùüÿœ]{2,}ez(?:-(?:vous|nous|le|la|les|en|y|moi|lui))?\b",
    re.IGNORECASE,
)
_FR_MODAL_RE: Final = re.compile(
    r"^(?:vous\s+(?:devez|devriez)|il\s+faut|il\s+est\s+(?:important|conseillé|recommandé)\s+de|"
    r"pensez\s+à|n['’]oubliez\s+pas)\b",
    re.IGNORECASE,
)
_ES_IRREGULAR: Final = word_set(
    "pon sal haz ten ven di ve sé mantén sostén obtén detén retén contén propón compón dispón "
    "supón deshaz rehaz"
)
#: Sequence words before a Spanish step: "Después añade la sal".
_ES_LEADS: Final = word_set(
    "después luego primero antes finalmente también siempre ahora entonces además"
)
_ES_NEXT: Final = word_set("""
    el la los las un una unos unas tu tus su sus mi mis este esta estos estas ese esa a al de
    del en con sin por para hasta bien siempre cada todo todos toda todas lo le les me te se nos
    más menos despacio primero ya agua
    """)
_ES_CLITIC_RE: Final = re.compile(r"[áéíóú]\w*(?:lo|la|le|los|las|les|te|se|me|nos)$")
_ES_NEGATIVE_RE: Final = re.compile(r"^(?:no|nunca)\s+\w+(?:es|as|is)\b", re.IGNORECASE)
_ES_MODAL_RE: Final = re.compile(
    r"^(?:debes|debe|deberías|debería|hay\s+que|tienes\s+que|tiene\s+que|es\s+importante|"
    r"es\s+recomendable|conviene|asegúrate\s+de|no\s+olvides|procura)\b",
    re.IGNORECASE,
)
_RU_IMPERATIVE_RE: Final = re.compile(r"(?:йте|ите|ьте|йтесь|итесь|ьтесь)$")
_RU_MODAL_RE: Final = re.compile(
    r"(?:^|\s)(?:нужно|необходимо|следует|надо|рекомендуется|стоит|важно)\s+(?:\S+\s+){0,2}?"
    r"\S+(?:ть|ти|чь|ться|тись)\b",
    re.IGNORECASE,
)
_INFINITIVE_ITEM: Final = {
    "de": re.compile(r"\b[a-zäöüß]+(?:en|eln|ern)$"),
    "fr": re.compile(r"^[a-zàâçéèêëîïôûùüÿœ]+(?:er|ir|re)\b", re.IGNORECASE),
    "es": re.compile(r"^[a-záéíóúñ]+(?:ar|er|ir)\b", re.IGNORECASE),
    "ru": re.compile(r"^[а-яё]+(?:ть|ти|чь|ться)\b", re.IGNORECASE),
}


@dataclass(frozen=True, slots=True)
class _Cue:
    strong: bool
    """A modal of advice, or a step in a list: enough on its own."""


def _words(s: str) -> list[str]:
    return _WORD_RE.findall(s)


#: After a listed step's first word, these show it is a verb: "Activate it", "Create the …".
_EN_OBJECTS: Final = word_set(
    "the a an it them your this that these those all each every into up down out off back "
    # a quantity: "Steep some tea", "Add half the sugar" (not a number: "Chapter two …")
    "some several half"
)


def _en_object_follows(s: str) -> bool:
    """A verb the list lacks, known by what follows it: "Reward the puppy", "Track your
    spending". A noun opening a sentence is rarely followed by an article or a pronoun;
    plurals, participles and adverbs ("Researchers the", "Moving the") are left out."""
    words = [w.casefold() for w in _words(s)]
    while words and words[0] in _EN_LEADS:
        words = words[1:]
    if len(words) < 3 or words[1] not in _EN_OBJECTS:
        return False
    if is_stopword(words[0], "en") or words[0] in _EN_NOT_VERBS:
        return False
    first = words[0]
    return not (
        first.endswith(("ing", "ed", "ly")) or (first.endswith("s") and not first.endswith("ss"))
    )


def _en(s: str) -> _Cue | None:
    if _EN_MODAL_RE.match(s):
        return _Cue(strong=True)
    words = [w.casefold() for w in _words(s)]
    while words and words[0] in _EN_LEADS:
        words = words[1:]
        if words and words[0] == "not":
            words = words[1:]
    if words[:2] == ["do", "not"] or words[:1] == ["never"]:
        words = words[2 if words[0] == "do" else 1 :]
    if len(words) >= 2 and words[0] in _EN_VERBS and words[1] not in _EN_BLOCKERS:
        return _Cue(strong=False)
    return _Cue(strong=False) if _en_object_follows(s) else None


def _de(s: str) -> _Cue | None:
    if _DE_MODAL_RE.match(s):
        return _Cue(strong=True)
    return _Cue(strong=False) if _DE_IMPERATIVE_RE.match(s) else None


def _fr(s: str) -> _Cue | None:
    if _FR_MODAL_RE.match(s):
        return _Cue(strong=True)
    m = _FR_IMPERATIVE_RE.match(s)
    if m is None or m.group(0).casefold() in _FR_NOT_VERBS:
        return None
    return _Cue(strong=False)


def _es(s: str) -> _Cue | None:
    if _ES_MODAL_RE.match(s) or _ES_NEGATIVE_RE.match(s):
        return _Cue(strong=True)
    words = [w.casefold() for w in _words(s)]
    while len(words) > 2 and words[0] in _ES_LEADS:
        words = words[1:]
    if len(words) < 2:
        return None
    first, nxt = words[0], words[1]
    if first in _ES_IRREGULAR or _ES_CLITIC_RE.search(first):
        return _Cue(strong=False)
    if is_stopword(first, "es") or len(first) < 3 or not first.endswith(("a", "e")):
        return None
    return _Cue(strong=False) if nxt in _ES_NEXT else None


def _ru(s: str) -> _Cue | None:
    if _RU_MODAL_RE.search(s):
        return _Cue(strong=True)
    words = [w.casefold() for w in _words(s)][:3]
    if "вы" in words:
        return None
    return _Cue(strong=False) if any(_RU_IMPERATIVE_RE.search(w) for w in words) else None


#: An opening "before / after / when …" clause of a Chinese instruction (骑车前,
#: 刹车不灵时), or a subject "you" (你/您). Japanese puts its cue at the end instead.
_ZH_LEAD: Final = (
    r"(?:[^，。！？；,]{1,10}?(?:之前|以前|之后|以后|的时候|前|后|时)[，,]?\s*)?(?:你|您)?"
)
_ZH_STRONG_RE: Final = re.compile(
    _ZH_LEAD + r"(?:请|应该|应当|必须|务必|一定要|千万|记得|记住|不要|别|最好|要先|得先)"
)
_ZH_STEP_RE: Final = re.compile(
    _ZH_LEAD
    + r"(?:先|首先|然后|再|接着|之后|最后|马上|立刻|立即|随时|每[天日周月晚次]|把|"
    + r"[^，。！？；,]{1,6}?(?<![主重只想])(?:要|需要)(?![是有求的点]))"
)
#: "Before / after / when …" and straight to a verb, no subject: "睡前喝一杯温牛奶". Not a
#: time and a statement ("十年前这里是农田", "出门时他已经走了").
_ZH_WHEN_DO_RE: Final = re.compile(
    r"[^，。！？；,]{1,8}?(?:之前|之后|以后|前|后|的时候|时)[，,]?(?![是有的这那我你他她它人都也已曾就才还会在被])"
    r"[\u4e00-\u9fff]"
)
#: A Chinese or Japanese sentence's clauses: a cue may open any of them
#: ("米饭想好吃，先把米洗三遍", "味噌汁を作るときは、まず出汁を取ります").
_CJK_CLAUSE_RE: Final = re.compile(r"[，,、；;：:]\s*")
_JA_STRONG_RE: Final = re.compile(
    r"(?:[てで]ください|ましょう|なさい|(?:する|の)こと|べき(?:です|だ)?|"
    r"(?:ほう|方)が(?:いい|よい)(?:です|でしょう)?|ようにし(?:ましょう|てください))[。！!]?$"
)
_JA_STEP_RE: Final = re.compile(r"^(?:まず|最初に|次に|それから|そして|最後に|その後)")


def _zh(s: str) -> _Cue | None:
    clauses = _CJK_CLAUSE_RE.split(s)
    if any(_ZH_STRONG_RE.match(c) for c in clauses):
        return _Cue(strong=True)
    weak = any(_ZH_STEP_RE.match(c) for c in clauses) or _ZH_WHEN_DO_RE.match(s)
    return _Cue(strong=False) if weak else None


def _ja(s: str) -> _Cue | None:
    if _JA_STRONG_RE.search(s):
        return _Cue(strong=True)
    steps = any(_JA_STEP_RE.match(c) for c in _CJK_CLAUSE_RE.split(s))
    return _Cue(strong=False) if steps else None


#: The cue finder of each language that has one.
CUES: Final[dict[str, Callable[[str], _Cue | None]]] = {
    "en": _en,
    "de": _de,
    "fr": _fr,
    "es": _es,
    "ru": _ru,
    "zh": _zh,
    "ja": _ja,
}


def _cue(sentence: str, lang: str, listed: bool) -> _Cue | None:
    """The cue in ``sentence`` itself or after a short opening clause."""
    find = CUES[lang]
    found = find(sentence)
    if found is None:
        lead = _LEAD_RE.match(sentence)
        if lead is not None and len(_words(lead.group(1))) <= 8:
            found = find(lead.group(2))
    if found is None and listed:
        infinitive = _INFINITIVE_ITEM.get(lang)
        if infinitive is not None and infinitive.search(sentence.rstrip(".!").strip()):
            return _Cue(strong=True)
    if found is not None and listed:
        return _Cue(strong=True)
    return found


def _upper_first(s: str) -> str:
    return s[:1].upper() + s[1:]


def clean(sentence: str, lang: str) -> str | None:
    """A todo title in the sentence's own words.

    The list marker and "you should" go; it gets a capital first letter and a full stop
    (also a step that ends in a colon before its command). Longer than
    :data:`TITLE_MAX`, it is cut at a clause; None when no clause of at least
    :data:`MIN_CUT` characters fits.
    """
    s = normalize_space(_MARKER_RE.sub("", sentence.strip()))
    if lang == "en":
        s = _EN_STRIP_RE.sub("", s)
    s = s.strip(" \"'“”«»")
    if not s or s.endswith(("?", "？")):
        return None
    s = s.removesuffix(":")  # "Install the module:" before its command is the step itself
    if s[-1] not in _TERMINAL:
        s = s.rstrip(",;–-，、；") + ("。" if UNSPACED_RE.match(s[-1]) else ".")
    if len(s) > TITLE_MAX:
        head = s[: TITLE_MAX - 1]
        cut = max(head.rfind(", "), head.rfind("; "), head.rfind(" – "))
        if cut < MIN_CUT:
            return None
        s = head[:cut].rstrip(" ,;–-") + "."
    return _upper_first(s)


def _size(sentence: str) -> int:
    """Words in a sentence; in an unspaced script, two characters make a word."""
    if UNSPACED_RE.search(sentence) is None:
        return len(_words(sentence))
    return word_count(sentence)


def find_instructions(text: str, lang: str | None, limit: int) -> list[str]:
    """Up to ``limit`` instructions from ``text``, in reading order, as todo titles.

    Listed steps and modal advice always count. Bare imperatives count in an
    instructive text, where they make at least :data:`INSTRUCTIVE_SHARE` of its
    sentences, or in a note of at most :data:`NOTE_SENTENCES` sentences: in an
    essay, a lone "Until then, write the sentence." is rhetoric, not a step to take.
    A sentence of several imperatives ("Wipe the chain, oil it and spin the pedals")
    is one step: its parts are done together.
    """
    if lang not in CUES:
        return []
    assert lang is not None
    found: list[tuple[str, bool]] = []
    sentences = 0
    for unit in units(text):
        if unit.code:
            continue
        listed = _MARKER_RE.match(unit.text) is not None
        body = _MARKER_RE.sub("", unit.text)
        for i, sentence in enumerate(split_sentences(body)):
            n = _size(sentence)
            sentences += n >= MIN_WORDS
            if not MIN_WORDS <= n <= MAX_WORDS or sentence.rstrip().endswith(("?", "？")):
                continue
            if not listed and not is_complete(sentence) and not sentence.endswith(":"):
                continue  # a heading
            cue = _cue(sentence, lang, listed and i == 0)
            if cue is not None:
                found.append((sentence, cue.strong))
    needed = 1 if sentences <= NOTE_SENTENCES else max(2, INSTRUCTIVE_SHARE * sentences)
    if len(found) < needed:
        found = [(sentence, strong) for sentence, strong in found if strong]
    out: list[str] = []
    seen: set[str] = set()
    for sentence, _ in found:
        title = clean(sentence, lang)
        if title is None or dup_key(title) in seen:
            continue
        seen.add(dup_key(title))
        out.append(title)
        if len(out) == limit:
            break
    return out
