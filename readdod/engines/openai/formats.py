"""What a server accepts, told from its answers: the response formats and the context.

Pure. Servers differ in how they take a request for JSON: OpenAI, vLLM, LM
Studio, Ollama and llama.cpp's ``llama-server`` take ``json_schema``;
llama-cpp-python's server only ``json_object``, with an optional ``schema``
that it turns into a grammar; some take no ``response_format`` at all. A
server that does not take a format says so in its error, as a 400, 422 or
even a 500 whose message names it; readdod then steps down :data:`LADDER`.
An error that does not name the format never moves it.

A request beyond the server's context gets an answer that says so
(:func:`context_overflow`), often with the server's context size, so the
text is split again with a budget that fits.
"""

from __future__ import annotations

import re
from typing import Any, Final

from readdod.engines.openai.answers import bare_schema

#: The formats tried in order, most structured first; ``prompt`` sends no
#: ``response_format`` and relies on the schema in the prompt.
LADDER: Final[tuple[str, ...]] = ("json_schema", "json_object_schema", "json_object", "prompt")

_NAMES_FORMAT: Final = re.compile(
    r"response[_ ]?format|json[_ ]?schema|json[_ ]?object|guided[_ ]?json|grammar"
    r"|structured[_ ]?output|'text' or '|\bformat\b.*\b(?:not supported|unsupported|invalid)",
    re.I,
)
_CONTEXT: Final = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|exceeds? (?:the )?"
    r"(?:available )?context|context (?:window|size|length)|exceed_context_size"
    r"|too many tokens|prompt is too long|input is too long",
    re.I,
)
_CONTEXT_SIZE: Final = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|n_ctx\D{0,4}(\d+)"
    r"|context (?:size|length|window)(?: is| of)? \(?(\d+)",
    re.I,
)


def next_format(mode: str) -> str | None:
    """The format to try after ``mode``; None at the bottom of the ladder."""
    at = LADDER.index(mode)
    return LADDER[at + 1] if at + 1 < len(LADDER) else None


def response_format(mode: str, kind: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` of a request in ``mode``; None: leave it out."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": kind, "schema": bare_schema(schema), "strict": False},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": bare_schema(schema)}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def error_text(body: object, fallback: str = "") -> str:
    """The server's own words in an error answer, whatever shape it has."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "msg", "error"):
                value = inner.get(key)
                if isinstance(value, str) and value.strip():
                    return " ".join(value.split())
                if isinstance(value, list | dict):
                    return " ".join(str(value).split())
        elif isinstance(inner, str) and inner.strip():
            return " ".join(inner.split())
        detail = body.get("detail")
        if detail:
            return " ".join(str(detail).split())
    elif isinstance(body, str) and body.strip():
        return " ".join(body.split())
    return fallback


def error_code(body: object) -> str:
    """The ``code``/``type`` an error answer carries, lower-cased ('' when none)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return " ".join(str(inner.get(k) or "") for k in ("code", "type")).lower()
    return ""


def names_format(text: str) -> bool:
    """Whether an error message is about the response format (and not the context)."""
    return bool(_NAMES_FORMAT.search(text)) and not context_overflow(text)


def context_overflow(text: str) -> bool:
    """Whether an error message says the request does not fit the model's context."""
    return bool(_CONTEXT.search(text))


def context_size(text: str) -> int | None:
    """The server's context in tokens, when its message gives it."""
    m = _CONTEXT_SIZE.search(text)
    if not m:
        return None
    size = int(next(g for g in m.groups() if g))
    return size if size >= 256 else None
