"""JSON read entry by entry, each with the line it starts on.

An export is one array of entries (or an object holding one under a key).
Decoding each entry on its own gives its line for a message; a file cut off
in the middle still yields the entries before the cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from readdod.capture.formats.entry import Problem

_decoder = json.JSONDecoder()
_SPACE = " \t\n\r"


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._counted = 0
        self._line = 1

    def line(self) -> int:
        """The line of :attr:`pos`, counted on from the last call (the reader only advances)."""
        self._line += self.text.count("\n", self._counted, self.pos)
        self._counted = self.pos
        return self._line

    def skip(self) -> str:
        """Skip blanks; the next character ('' at the end)."""
        while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
            self.pos += 1
        return self.text[self.pos : self.pos + 1]

    def value(self) -> Any:
        obj, self.pos = _decoder.raw_decode(self.text, self.pos)
        return obj


def _problem(exc: json.JSONDecodeError) -> Problem:
    return Problem(
        exc.lineno,
        f"not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg});"
        " the entries after it were not read",
    )


def entries(text: str, key: str | None = None) -> Iterator[tuple[int, Any] | Problem]:
    """(line, entry) for each entry of the top-level array, or of the array under ``key``
    of the top-level object; a :class:`Problem` where the file stops being JSON."""
    r = _Reader(text.lstrip("\ufeff"))
    try:
        if key is not None:
            if r.skip() != "{":
                yield Problem(r.line(), f"expected a JSON object with a {key!r} list")
                return
            r.pos += 1
            while True:
                if r.skip() == "}":
                    yield Problem(r.line(), f"the JSON object has no {key!r} list")
                    return
                name = r.value()
                if r.skip() != ":":
                    raise json.JSONDecodeError("expected ':'", r.text, r.pos)
                r.pos += 1
                r.skip()
                if name == key:
                    break
                r.value()
                if r.skip() == ",":
                    r.pos += 1
        if r.skip() != "[":
            what = f"the {key!r} member" if key else "the file"
            yield Problem(r.line(), f"expected {what} to be a JSON list of entries")
            return
        r.pos += 1
        if r.skip() == "]":
            return
        while True:
            r.skip()
            line = r.line()
            yield line, r.value()
            nxt = r.skip()
            if nxt == ",":
                r.pos += 1
                continue
            if nxt == "]":
                return
            raise json.JSONDecodeError("expected ',' or ']'", r.text, r.pos)
    except json.JSONDecodeError as exc:
        yield _problem(exc)
