"""Text toolkit shared by extraction, the engines and evaluation. Pure: no I/O.

- :mod:`~readdod.text.scripts`: character classes (Han, kana, hangul, Thai, ...).
- :mod:`~readdod.text.words`: the word count every part reports.
- :mod:`~readdod.text.reading`: reading time from that word count.
- :mod:`~readdod.text.sentences`: paragraphs, sentences and clauses.
- :mod:`~readdod.text.chunks`: one chunker for every size budget.
"""

from readdod.text.chunks import Level, chunk, fit_chars, pack
from readdod.text.reading import WORDS_PER_MINUTE, minutes_for, reading_minutes
from readdod.text.scripts import is_unspaced, script_counts
from readdod.text.sentences import (
    is_complete,
    join_sentences,
    paragraphs,
    split_clauses,
    split_sentences,
)
from readdod.text.words import CHARS_PER_WORD, latin_length, word_count

__all__ = [
    "CHARS_PER_WORD",
    "WORDS_PER_MINUTE",
    "Level",
    "chunk",
    "fit_chars",
    "is_complete",
    "is_unspaced",
    "join_sentences",
    "latin_length",
    "minutes_for",
    "pack",
    "paragraphs",
    "reading_minutes",
    "script_counts",
    "split_clauses",
    "split_sentences",
    "word_count",
]
