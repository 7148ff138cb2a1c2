"""CSV read row by row from a stream, each row with its line, a broken row skipped.

A quoted field may hold line breaks, so a row can span lines; an unterminated
quote would otherwise swallow every row after it. A row is therefore given at
most :data:`MAX_ROW_LINES` lines (and :data:`MAX_ROW_CHARS` characters) to end:
one that does not is one problem at its line, and reading goes on with the line
after its first.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Final, TextIO

from readdod.capture.formats.entry import Problem

MAX_ROW_LINES: Final = 50
MAX_ROW_CHARS: Final = 1 << 20


def _lines(stream: TextIO) -> Iterator[str]:
    while True:
        line = stream.readline(MAX_ROW_CHARS)
        if not line:
            return
        yield line


def _parse(text: str) -> list[str] | None:
    """The row ``text`` holds; None when it ends inside a quoted field."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        if "unexpected end of data" in str(exc) or "newline inside string" in str(exc):
            return None
        raise
    if not rows:
        return []
    if len(rows) > 1:
        raise csv.Error("more than one row where one was expected")
    return rows[0]


def rows(src: str | TextIO) -> Iterator[tuple[int, list[str]] | Problem]:
    """(line, cells) for each row (the header included); a problem for a row that is not
    CSV, and the next row read from the line after it."""
    stream = io.StringIO(src, newline="") if isinstance(src, str) else src
    lines = _lines(stream)
    pending: list[str] = []  # lines read ahead while looking for a row's end
    start = 1  # the line of pending[0]
    while True:
        if not pending:
            nxt = next(lines, None)
            if nxt is None:
                return
            pending.append(nxt.lstrip("\ufeff") if start == 1 else nxt)
        take = 1
        row: list[str] | None = None
        problem: str | None = None
        while True:
            text = "".join(pending[:take])
            try:
                row = _parse(text)
            except csv.Error as exc:
                problem = f"not a CSV row: {exc}"
                break
            if row is not None:
                break
            if take >= MAX_ROW_LINES or len(text) >= MAX_ROW_CHARS:
                problem = "a quoted field that never ends (an unterminated quote); row skipped"
                break
            if take == len(pending):
                nxt = next(lines, None)
                if nxt is None:
                    problem = "a quoted field that never ends (an unterminated quote); row skipped"
                    break
                pending.append(nxt)
            take += 1
        if problem is not None:
            yield Problem(start, problem)
            take = 1
        elif row is not None:
            yield start, row
        del pending[:take]
        start += take
