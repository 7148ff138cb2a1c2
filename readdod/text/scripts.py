"""Which script a text is written in: one definition of each character class.

Pure. Classes are regular-expression character-class bodies (no brackets), so
callers can combine them; the compiled patterns are built here once.

Han and kana are dense: one character carries about a word and no spaces sit
between words. Thai, Lao, Myanmar and Khmer are alphabetic but written without
spaces between words too. Hangul is written with spaces, so Korean counts as a
spaced script.
"""

from __future__ import annotations

import re
from typing import Final

HAN: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
HIRAGANA: Final = "\u3040-\u309f"
#: Full-width katakana and the half-width forms.
KATAKANA: Final = "\u30a0-\u30ff\uff66-\uff9f"
KANA: Final = HIRAGANA + KATAKANA
HANGUL: Final = "\uac00-\ud7af\u1100-\u11ff"
THAI: Final = "\u0e00-\u0e7f"
#: Thai, Lao, Myanmar and Khmer.
SOUTHEAST_ASIAN: Final = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
#: Chinese and Japanese writing: a character carries about as much as a short word.
HAN_KANA: Final = HAN + KANA
#: Scripts written without spaces between words.
UNSPACED: Final = HAN_KANA + SOUTHEAST_ASIAN
#: Combining marks that Python's ``\w`` does not count but that sit inside words
#: (Latin diacritics, Cyrillic, Hebrew, Arabic, Indic vowel signs).
MARKS: Final = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0900-\u0dff"

HAN_KANA_RE: Final = re.compile(f"[{HAN_KANA}]")
UNSPACED_RE: Final = re.compile(f"[{UNSPACED}]")
UNSPACED_RUN_RE: Final = re.compile(f"[{UNSPACED}]+")

#: Scripts told apart when guessing a language, in tie-breaking order.
SCRIPTS: Final[tuple[tuple[str, str], ...]] = (
    ("kana", KANA),
    ("han", HAN),
    ("hangul", HANGUL),
    ("cyrillic", "\u0400-\u04ff"),
    ("greek", "\u0370-\u03ff"),
    ("arabic", "\u0600-\u06ff"),
    ("hebrew", "\u0590-\u05ff"),
    ("devanagari", "\u0900-\u097f"),
    ("thai", THAI),
    ("latin", "A-Za-z\u00c0-\u024f"),
)
_SCRIPT_RES: Final = tuple((name, re.compile(f"[{cls}]")) for name, cls in SCRIPTS)


def script_counts(text: str) -> dict[str, int]:
    """Characters of each script in :data:`SCRIPTS`, in that order (ties keep the order)."""
    return {name: len(rx.findall(text)) for name, rx in _SCRIPT_RES}


def is_unspaced(char: str) -> bool:
    """A character of a script written without spaces between words."""
    return UNSPACED_RE.fullmatch(char) is not None
