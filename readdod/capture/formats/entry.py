"""One saved link as an export holds it, and one entry that could not be read."""

from __future__ import annotations

import datetime
import io
from typing import Final, TextIO

import msgspec

#: Saved times before this are taken as a mistake in the file (or a missing value).
EARLIEST: Final = datetime.datetime(1990, 1, 1, tzinfo=datetime.UTC)


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """A saved link (or a saved text) with what the export kept of it."""

    #: The line of the file the entry starts on (1-based).
    line: int
    url: str | None = None
    #: The text of a saved note that has no link.
    text: str | None = None
    #: The page as the service kept it, when the export carries it.
    html: str | None = None
    title: str | None = None
    tags: tuple[str, ...] = ()
    #: ISO 8601 UTC, when it was saved there.
    saved_at: str | None = None
    #: What the person wrote about it (their own note, never a publisher's teaser).
    note: str | None = None
    #: What the source said of the page (a teaser, a description): kept, never the intent.
    description: str | None = None
    #: The person had finished with it there (read, archived).
    archived: bool = False
    #: ISO 8601 UTC, when it was archived there, when the export says.
    archived_at: str | None = None
    #: The person marked it (starred, favourite, liked).
    starred: bool = False
    #: The passages the person highlighted, in order.
    highlights: tuple[str, ...] = ()
    #: The folder path it was filed under, outermost first.
    folder: tuple[str, ...] = ()


class Problem(msgspec.Struct, frozen=True):
    """An entry that was skipped, with its line and why."""

    line: int
    message: str


class Skipped(msgspec.Struct, frozen=True):
    """An entry left out on purpose, not an error: it is no saved reading (a feed's row in
    Readwise Reader, a browser's separator). Counted under ``kind`` in the summary."""

    line: int
    kind: str


def truthy(value: object) -> bool:
    """A flag as exports write it: true, 1, "1", "true", "yes"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "y", "on")
    return False


def clean(value: object) -> str | None:
    """A string field stripped, or None when it is missing, not a string or empty."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def tag_list(values: object, sep: str | None = None) -> tuple[str, ...]:
    """Tags from a list of strings or from one string split on ``sep``; blanks dropped,
    repeats kept once, in order."""
    if isinstance(values, str):
        raw: list[object] = list(values.split(sep)) if sep else [values]
    elif isinstance(values, list):
        raw = list(values)
    else:
        return ()
    seen: dict[str, None] = {}
    for v in raw:
        name = clean(v.get("label") or v.get("name") if isinstance(v, dict) else v)
        if name:
            seen.setdefault(name, None)
    return tuple(seen)


def from_epoch(value: object) -> str | None:
    """ISO 8601 UTC from seconds since the epoch (a number or its digits); milliseconds
    are recognised by their size. None when missing or implausible."""
    if isinstance(value, str):
        value = value.strip()
        try:
            value = float(value) if value else None
        except ValueError:
            return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    seconds = float(value)
    if seconds >= 1e14:  # microseconds
        seconds /= 1_000_000
    elif seconds >= 1e11:  # milliseconds
        seconds /= 1000
    try:
        when = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return _iso(when)


def from_iso(value: object) -> str | None:
    """ISO 8601 UTC from an ISO 8601 time (``Z``, ``+0200`` and ``+02:00`` alike); a time
    without an offset is taken as UTC. None when missing or unreadable."""
    text = clean(value)
    if text is None:
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return _iso(when)


def _iso(when: datetime.datetime) -> str | None:
    if when < EARLIEST:
        return None
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def when(value: object) -> str | None:
    """ISO 8601 UTC from a time given either way: seconds (or ms, µs) or ISO 8601."""
    return from_epoch(value) or from_iso(value)


#: What a reader takes: the file's text, or the open file (read as it goes).
Source = str | TextIO


def stream(src: Source) -> TextIO:
    """The source as a stream."""
    return io.StringIO(src, newline="") if isinstance(src, str) else src


#: Root folders every browser has: not the person's folders.
ROOT_FOLDERS: Final = frozenset(
    {
        "bookmarks",
        "bookmarks menu",
        "bookmarks toolbar",
        "bookmarks bar",
        "other bookmarks",
        "mobile bookmarks",
        "unfiled bookmarks",
        "favorites bar",
        "menu",
        "toolbar",
        "unfiled",
        "mobile",
        "root",
    }
)


def folder_path(names: list[str]) -> tuple[str, ...]:
    """A folder path without the browser's own root folders."""
    path = [n for n in (clean(x) for x in names) if n]
    while path and path[0].lower() in ROOT_FOLDERS:
        path.pop(0)
    return tuple(path)
