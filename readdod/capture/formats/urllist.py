"""A plain list of links: one URL a line, optionally followed by a title.

``URL``, ``URL title words`` (a space or a tab between) or ``URL | title``
(OneTab's layout). Blank lines
and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats.entry import Entry, Problem, clean


def read(text: str) -> Iterator[Entry | Problem]:
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        url, *more = line.split(None, 1)
        rest = more[0] if more else ""
        if "://" not in url:
            yield Problem(number, f"not a link: {line[:80]!r}")
            continue
        title = rest.strip()
        if title.startswith("|"):
            title = title[1:]
        yield Entry(line=number, url=url, title=clean(title))
