"""The context budget in tokens, estimated without a tokenizer.

Pure. Estimates are deliberately generous (about 3 UTF-8 bytes a token), so
a text judged to fit does fit whatever tokenizer the server uses; chunking
itself is :func:`readdod.text.chunk`, the one chunker of readdod.
"""

from __future__ import annotations

import math
from typing import Final

from readdod.text import Level, chunk, paragraphs, split_sentences

#: Tokens kept free in the context for the prompt template, the schema and the answer.
RESERVED_TOKENS: Final = 2_048
#: Tokens assumed for an answer when reserving from ``ai.tpm``.
ANSWER_TOKENS: Final = 512


def estimate_tokens(text: str) -> int:
    """A deliberately generous guess (about 3 UTF-8 bytes a token): no tokenizer needed."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def fit_tokens(text: str, budget_tokens: int) -> int:
    """Characters of the longest prefix of ``text`` within ``budget_tokens``."""
    return len(text.encode("utf-8")[: budget_tokens * 3].decode("utf-8", "ignore"))


_CHUNK_LEVELS: Final = (Level(paragraphs, "\n\n"), Level(split_sentences, " "))


def split_paragraphs(text: str, budget_tokens: int) -> list[str]:
    """Split ``text`` into chunks of at most ``budget_tokens``, on paragraph boundaries.

    A paragraph larger than the budget is cut at sentence ends, and a
    sentence larger than that at the budget itself.
    """
    return chunk(text, _CHUNK_LEVELS, budget_tokens, size=estimate_tokens, fit=fit_tokens)


def clip_tokens(text: str, budget_tokens: int) -> str:
    if estimate_tokens(text) <= budget_tokens:
        return text
    head = text.encode("utf-8")[: budget_tokens * 3].decode("utf-8", "ignore")
    return head.rsplit("\n\n", 1)[0] if "\n\n" in head else head
