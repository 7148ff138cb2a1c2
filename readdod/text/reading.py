"""Reading time from the word count. Pure.

One speed for every language: an unspaced script's words are already
normalised by :func:`readdod.text.words.word_count` (two characters a word).
"""

from __future__ import annotations

from typing import Final

from readdod.text.words import word_count

WORDS_PER_MINUTE: Final = 230


def minutes_for(words: int) -> int:
    """Whole minutes, rounded up: 0 only for a text without words."""
    return -(-words // WORDS_PER_MINUTE)


def reading_minutes(text: str) -> int:
    """Minutes a person needs to read ``text``."""
    return minutes_for(word_count(text))
