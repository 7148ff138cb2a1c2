"""JSON read entry by entry from a stream, each with the line it starts on.

An export is one array of entries (or an object holding one under a key).
Decoding each entry on its own gives its line for a message, keeps memory to
one entry at a time (a file of a million entries is never held whole), and a
file cut off in the middle still yields the entries before the cut. An entry
nested too deeply, or larger than :data:`MAX_ENTRY`, is one problem, skipped;
the entries after it are read.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any, Final, TextIO

from readdod.capture.formats.entry import Problem

#: The most characters one entry may take (an entry with a whole page in it fits).
MAX_ENTRY: Final = 64 * 2**20
#: How much is read from the file at a time.
CHUNK: Final = 1 << 20

_decoder = json.JSONDecoder()
_SPACE = " \t\n\r"
#: What matters when walking over a value without decoding it.
_TOKEN = re.compile(r'[\[\]{}"]')
_STRING_END = re.compile(r'(?:[^"\\]|\\.)*"', re.S)
#: Characters a JSON number can go on with after a prefix that is a number itself.
_NUMBER_TAIL: Final = "0123456789+-.eE"


class _TooLarge(Exception):
    pass


class _Reader:
    """A window on the stream: ``buf[pos:]`` is what is not read yet."""

    def __init__(self, stream: TextIO, chunk: int = CHUNK) -> None:
        self.stream = stream
        self.chunk = chunk
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._line = 1

    def more(self, want: int = 0) -> bool:
        """Read on; False at the end of the file. What is behind :attr:`pos` is dropped."""
        if self.eof:
            return False
        if self.pos:
            self._line += self.buf.count("\n", 0, self.pos)
            self.buf = self.buf[self.pos :]
            self.pos = 0
        got = self.stream.read(want or self.chunk)
        if not got:
            self.eof = True
            return False
        self.buf += got
        return True

    def line(self) -> int:
        """The line of :attr:`pos`."""
        return self._line + self.buf.count("\n", 0, self.pos)

    def skip(self) -> str:
        """Skip blanks; the next character ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos : self.pos + 1]

    def value(self) -> Any:
        """The next value, reading on as long as it is cut off by the window's end."""
        want = self.chunk
        while True:
            try:
                obj, end = _decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if len(self.buf) - self.pos > MAX_ENTRY:
                    raise _TooLarge from None
                if not self.more(want):
                    # Raised again on the window as it is now, for its line.
                    _decoder.raw_decode(self.buf, self.pos)
                    raise
                want *= 2
                continue
            # A number at the window's end may go on in the next chunk, and so may
            # one that stops where the window cut its fraction or exponent ("0.", "1e").
            if (
                not self.eof
                and self.buf[self.pos] not in '[{"'
                and (end == len(self.buf) or self.buf[end] in _NUMBER_TAIL)
                and self.more(want)
            ):
                continue
            self.pos = end
            return obj

    def walk(self) -> None:
        """Go over the next value without decoding it (one too deep or too large)."""
        depth = 0
        while True:
            m = _TOKEN.search(self.buf, self.pos)
            if m is None:
                self.pos = len(self.buf)
                if not self.more():
                    return
                continue
            ch = m.group()
            if ch == '"':
                self.pos = m.start()
                s = _STRING_END.match(self.buf, self.pos + 1)
                if s is None:
                    if not self.more():
                        self.pos = len(self.buf)
                        return
                    continue
                self.pos = s.end()
                if depth == 0:
                    return
                continue
            self.pos = m.end()
            depth += 1 if ch in "[{" else -1
            if depth <= 0:
                return


def _problem(exc: json.JSONDecodeError, base: int) -> Problem:
    line = base + exc.lineno - 1
    return Problem(
        line,
        f"not valid JSON at line {line} ({exc.msg}); the entries after it were not read",
    )


def entries(
    src: str | TextIO, key: str | None = None, *, chunk: int = CHUNK
) -> Iterator[tuple[int, Any] | Problem]:
    """(line, entry) for each entry of the top-level array, or of the array under ``key``
    of the top-level object; a :class:`Problem` where the file stops being JSON."""
    r = _Reader(io.StringIO(src) if isinstance(src, str) else src, chunk)
    if r.skip() == "\ufeff":
        r.pos += 1
    try:
        if key is not None:
            if r.skip() != "{":
                yield Problem(r.line(), f"expected a JSON object with a {key!r} list")
                return
            r.pos += 1
            while True:
                if r.skip() in ("}", ""):
                    yield Problem(r.line(), f"the JSON object has no {key!r} list")
                    return
                name = r.value()
                if r.skip() != ":":
                    yield Problem(r.line(), f"expected ':' after {str(name)[:40]!r}")
                    return
                r.pos += 1
                r.skip()
                if name == key:
                    break
                start = r.line()
                try:
                    r.value()
                except (RecursionError, _TooLarge):
                    r.walk()
                    yield Problem(start, f"the {str(name)[:40]!r} member is too deep or too large")
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
            try:
                got = r.value()
            except RecursionError:
                r.walk()
                yield Problem(line, "an entry nested too deeply to be one (skipped)")
            except _TooLarge:
                r.walk()
                yield Problem(line, f"an entry larger than {MAX_ENTRY // 2**20} MiB (skipped)")
            else:
                yield line, got
            nxt = r.skip()
            if nxt == ",":
                r.pos += 1
                continue
            if nxt == "]":
                return
            raise json.JSONDecodeError("expected ',' or ']'", r.buf, r.pos)
    except json.JSONDecodeError as exc:
        yield _problem(exc, r._line)
