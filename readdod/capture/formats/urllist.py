"""A plain list of links: one URL a line, optionally followed by a title.

``URL``, ``URL title words`` (a space or a tab between) or ``URL | title``
(OneTab's layout). Blank lines
and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from readdod.capture.formats.entry import Entry, Problem, Source, clean, stream

#: A longer line is no link: it is cut here, and reported.
MAX_LINE: Final = 64 * 1024


def read(src: Source) -> Iterator[Entry | Problem]:
    lines = stream(src)
    number = 0
    while raw := lines.readline(MAX_LINE):
        number += 1
        if number == 1:
            raw = raw.lstrip("\ufeff")
        if len(raw) >= MAX_LINE and not raw.endswith("\n"):
            while (more := lines.readline(MAX_LINE)) and not more.endswith("\n"):
                pass
            yield Problem(number, "a line too long to be a link")
            continue
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        url, *more_words = line.split(None, 1)
        rest = more_words[0] if more_words else ""
        if "://" not in url:
            yield Problem(number, f"not a link: {line[:80]!r}")
            continue
        title = rest.strip()
        if title.startswith("|"):
            title = title[1:]
        yield Entry(line=number, url=url, title=clean(title))
