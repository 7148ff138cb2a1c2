"""Full-text search on PostgreSQL: an item's words as a ``tsvector``, a person's as a ``tsquery``.

Pure: no driver, no I/O. The words are cut here, in Python, with the rules
the SQLite store's FTS5 ``unicode61 remove_diacritics 2`` tokenizer follows
(runs of letters and digits, lower-cased, diacritics removed), and handed to
PostgreSQL as lexemes with positions. PostgreSQL's own parser would read
``example.org/giraffe-facts`` as one host token and never find ``giraffe``;
lexemes made here keep ``list --query`` the same on every backend.

The title, url and intent are one vector (``search_head``), the extracted
text another (``search_body``); the GIN index covers ``search_head ||
search_body``. Each column starts one position past the end of the one
before, so a phrase never matches across two columns.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from readdod.errors import ValidationFailed

#: Most words of a search: every one must match, as a prefix.
SEARCH_WORDS_MAX = 32
#: PostgreSQL keeps positions up to this; later ones count as this one.
MAX_POSITION = 16_383
#: PostgreSQL refuses a lexeme of 2 KB or more; such a run of letters is no word anyway.
MAX_LEXEME_BYTES = 2_047
#: A tsvector must stay under 1 MB: words past this budget (in bytes of the literal) are
#: left out of the index, the way a search engine caps what it reads of a huge page.
MAX_VECTOR_CHARS = 900_000

_WORD = re.compile(r"[^\W_]+")
#: The same runs for a text all in ASCII, found faster.
_ASCII_WORD = re.compile(r"[^\W_]+", re.ASCII)


def tokens(text: str) -> list[str]:
    """Runs of letters and digits, lower-cased, diacritics removed."""
    low = text.lower()
    if low.isascii():
        found = _ASCII_WORD.findall(low)
    else:
        low = "".join(c for c in unicodedata.normalize("NFD", low) if not unicodedata.combining(c))
        found = _WORD.findall(low)
    if len(low) > MAX_LEXEME_BYTES // 4:  # only then can a token be too long
        found = [t for t in found if len(t.encode()) <= MAX_LEXEME_BYTES]
    return found


def vector(columns: Iterable[str | None], *, start: int = 1) -> str:
    """The ``tsvector`` literal of ``columns``: each token at its position, a gap of one
    position between two columns. ``start``: the first position (2 for a vector that
    follows another through ``||``)."""
    parts: list[str] = []
    size = 0
    pos = start
    for text in columns:
        found = tokens(text or "")
        end = pos + len(found)
        positions = range(pos, end) if end <= MAX_POSITION else _capped(pos, end)
        made = list(map("'{}':{}".format, found, positions))
        grown = size + sum(map(len, made)) + len(made)
        if grown > MAX_VECTOR_CHARS:
            for part in made:
                size += len(part) + 1
                if size > MAX_VECTOR_CHARS:
                    break
                parts.append(part)
            return " ".join(parts)
        parts += made
        size = grown
        pos += len(found) + 1
    return " ".join(parts)


def _capped(start: int, end: int) -> list[int]:
    return [min(at, MAX_POSITION) for at in range(start, end)]


def head_vector(title: str | None, url: str | None, intent: str | None) -> str:
    """What an item's own fields say: title, url, intent."""
    return vector((title, url, intent))


def body_vector(text: str | None) -> str:
    """The extracted text an item shows; it follows the head in the index."""
    return vector((text,), start=2)


def query(text: str) -> str | None:
    """A person's words as a ``tsquery`` literal: every word must be found, as a phrase
    whose last token is a prefix, in one column. None when no word has a token (nothing
    can match); ValidationFailed when ``text`` has no word at all."""
    words = re.findall(r"\w+", text)
    if not words:
        raise ValidationFailed("query needs at least one word to search for")
    phrases = []
    for word in words[:SEARCH_WORDS_MAX]:
        found = tokens(word)
        if not found:
            continue
        *whole, last = found
        phrases.append("(" + " <-> ".join([*(f"'{t}'" for t in whole), f"'{last}':*"]) + ")")
    if not phrases:
        return None
    return " & ".join(phrases)
