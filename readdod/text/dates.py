"""Calendar dates written in a text, and whether they are still ahead. Pure.

Recognised: ISO dates (2027-03-01), dotted dates (01.03.2027), a day with a
month name and a year ("1 March 2027", "March 1, 2027", "1. März 2027",
"1er mars 2027", "1 de marzo de 2027", "1 марта 2027"), a month with a year
("March 2027") and a year after a preposition ("in 2028"). A month or a day
without a year is not a date one can put in a calendar, so it is not
recognised. Each date is a period (a day, a month, a year); it is ahead of a
moment when the period ends after it.

:func:`iso_8601` reads a stamp as publishers write one (ISO 8601 and its
near misses, RFC 2822, Unix seconds, ``5/31/2024 10:00``, a written date)
and writes it in ISO 8601, or says it cannot: a stamp whose day and month
cannot be told apart (``06/12/2018``) is no date.
"""

from __future__ import annotations

import calendar
import datetime as dt
import email.utils
import re
from dataclasses import dataclass
from typing import Final

_MONTHS: Final[tuple[str, ...]] = (
    r"jan(?:uary|uar|vier)?|enero|январ\w*",
    r"feb(?:ruary|ruar)?|févr(?:ier)?|febrero|феврал\w*",
    r"mar(?:ch)?|märz|mars|marzo|март\w*",
    r"apr(?:il)?|avril|abril|апрел\w*",
    r"may|mai|mayo|ма[йяе]",
    r"june?|juni|juin|junio|июн\w*",
    r"july?|juli|juillet|julio|июл\w*",
    r"aug(?:ust)?|août|agosto|август\w*",
    r"sep(?:t|tember)?|septembre|septiembre|сентябр\w*",
    r"oct(?:ober)?|okt(?:ober)?|octobre|octubre|октябр\w*",
    r"nov(?:ember)?|novembre|noviembre|ноябр\w*",
    r"dec(?:ember)?|dez(?:ember)?|décembre|diciembre|декабр\w*",
)
_MONTH_RE: Final = "|".join(f"(?:{m})" for m in _MONTHS)
_MONTH_ONLY: Final = tuple(re.compile(f"^(?:{m})\\.?$", re.IGNORECASE) for m in _MONTHS)
_YEAR: Final = r"((?:19|20)\d{2})"
_PATTERNS: Final = (
    ("ymd", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("dmy", re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")),
    (
        "d_m_y",
        re.compile(
            rf"\b(\d{{1,2}})(?:er|st|nd|rd|th)?\.?\s+(?:de\s+)?({_MONTH_RE})\.?\s+(?:de\s+)?{_YEAR}\b",
            re.IGNORECASE,
        ),
    ),
    (
        "m_d_y",
        re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I),
    ),
    ("m_y", re.compile(rf"\b({_MONTH_RE})\.?\s+(?:de\s+)?{_YEAR}\b", re.IGNORECASE)),
    (
        "y",
        re.compile(
            rf"\b(?:in|by|from|until|before|after|im|ab|bis|seit|en|dès|d'ici|desde|hasta|"
            rf"para|в|к|до|с)\s+{_YEAR}\b",
            re.IGNORECASE,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class TextDate:
    text: str
    """The date as written."""
    start: dt.date
    end: dt.date
    """The last day of the period it names."""

    def ahead_of(self, moment_ms: int) -> bool:
        """Whether the period ends on or after the day of ``moment_ms`` (UTC)."""
        day = dt.datetime.fromtimestamp(moment_ms / 1000, dt.UTC).date()
        return self.end >= day


def _month(name: str) -> int:
    return next(i + 1 for i, rx in enumerate(_MONTH_ONLY) if rx.match(name))


def _period(kind: str, groups: tuple[str, ...]) -> tuple[dt.date, dt.date]:
    if kind == "ymd":
        d = dt.date(int(groups[0]), int(groups[1]), int(groups[2]))
        return d, d
    if kind == "dmy":
        d = dt.date(int(groups[2]), int(groups[1]), int(groups[0]))
        return d, d
    if kind == "d_m_y":
        d = dt.date(int(groups[2]), _month(groups[1]), int(groups[0]))
        return d, d
    if kind == "m_d_y":
        d = dt.date(int(groups[2]), _month(groups[0]), int(groups[1]))
        return d, d
    if kind == "m_y":
        year, month = int(groups[1]), _month(groups[0])
        last = calendar.monthrange(year, month)[1]
        return dt.date(year, month, 1), dt.date(year, month, last)
    year = int(groups[0])
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def find_dates(text: str) -> list[TextDate]:
    """Dates in ``text``, in order; a span already taken by a more precise form is skipped."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TextDate]] = []
    for kind, rx in _PATTERNS:
        for m in rx.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            try:
                start, end = _period(kind, m.groups())
            except (ValueError, StopIteration):
                continue  # "31.02.2027", or a month name the table does not know
            taken.append((m.start(), m.end()))
            found.append((m.start(), TextDate(m.group(0), start, end)))
    return [d for _, d in sorted(found, key=lambda x: x[0])]


# --- stamps in page metadata -------------------------------------------------

_MAX_STAMP_CHARS: Final = 64
_FIRST_YEAR: Final = 1900
_LAST_YEAR: Final = 2200
_DIGITS_RE: Final = re.compile(r"^\d{10}(?:\d{3})?$")
_ISO_DAY_RE: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_NUMERIC_RE: Final = re.compile(
    r"^(\d{1,4})([/.-])(\d{1,2})\2(\d{1,4}),?"
    r"(?:[ T]+(\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*([AaPp]\.?[Mm]\.?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2})?$"
)
_SPACED_OFFSET_RE: Final = re.compile(r"\s+(?=[+-]\d{2}:?\d{2}$)")
_MONTH_NAME_RE: Final = re.compile(r"[A-Za-z]{3}")
_OFFSET_RE: Final = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


def iso_8601(stamp: str) -> str | None:
    """``stamp`` (a page's publication time) in ISO 8601, or None if it is no date.

    A day stays a day (``2024-03-05``); a time keeps its offset, UTC written
    ``Z``, seconds without their fraction; a time without an offset stays
    local (``2024-03-05T09:30:00``). Years outside 1900–2200 are no dates.
    """
    value = " ".join(stamp.split())
    if not value or len(value) > _MAX_STAMP_CHARS:
        return None
    for parse in (_from_digits, _from_iso, _from_rfc2822, _from_numeric, _from_words):
        try:
            when = parse(value)
        except (ValueError, TypeError, OverflowError, IndexError):
            continue
        if when is not None:
            # The form was recognised: its year decides, no other form is tried.
            return _write(when) if _FIRST_YEAR <= when.year <= _LAST_YEAR else None
    return None


def _write(when: dt.date) -> str:
    if not isinstance(when, dt.datetime):
        return when.isoformat()
    text = when.isoformat(timespec="seconds")
    offset = when.utcoffset()
    if offset is not None and not offset:
        text = text[: -len("+00:00")] + "Z"
    return text


def _from_digits(value: str) -> dt.date | None:
    """Unix seconds or milliseconds."""
    if not _DIGITS_RE.match(value):
        return None
    seconds = int(value) / (1000 if len(value) == 13 else 1)
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def _from_iso(value: str) -> dt.date | None:
    if (day := _ISO_DAY_RE.match(value)) is not None:
        return dt.date(int(day[1]), int(day[2]), int(day[3]))
    if len(value) == 8 and value.isdigit():
        return dt.date.fromisoformat(value)  # 20240305
    if not value[:4].isdigit():
        return None
    # Python reads most ISO 8601 forms; "UTC"/"GMT" suffixes and a space
    # before the offset ("2015-07-10 09:53:00 -0400") are common near misses.
    if value.endswith(("UTC", "GMT")):
        value = value[:-3].rstrip() + "Z"
    return dt.datetime.fromisoformat(_SPACED_OFFSET_RE.sub("", value))


def _from_rfc2822(value: str) -> dt.date | None:
    if _MONTH_NAME_RE.search(value) is None:
        return None
    return email.utils.parsedate_to_datetime(value)


def _from_numeric(value: str) -> dt.date | None:
    """``2024/03/05``, ``31.05.2024``, ``5/31/2024 10:00 PM``; ``06/12/2018`` is ambiguous."""
    m = _NUMERIC_RE.match(value)
    if m is None:
        return None
    a, sep, b, c = int(m[1]), m[2], int(m[3]), int(m[4])
    if len(m[1]) == 4:
        year, month, day = a, b, c
    elif len(m[4]) == 4:
        year = c
        if a > 12 or sep == ".":
            day, month = a, b  # 31/05/2024, and dots are written day first
        elif b > 12 or a == b:
            month, day = a, b
        else:
            return None  # 06/12/2018: June or December
    else:
        return None
    if m[5] is None:
        return dt.date(year, month, day)
    hour, minute, second = int(m[5]), int(m[6]), int(m[7] or 0)
    if m[8]:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if m[8][0] in "Pp" else 0)
    return dt.datetime(year, month, day, hour, minute, second, tzinfo=_zone(m[9]))


def _zone(text: str | None) -> dt.tzinfo | None:
    if text is None:
        return None
    if text in ("Z", "UTC", "GMT"):
        return dt.UTC
    m = _OFFSET_RE.match(text)
    if m is None:
        return None
    delta = dt.timedelta(hours=int(m[2]), minutes=int(m[3]))
    return dt.timezone(-delta if m[1] == "-" else delta)


def _from_words(value: str) -> dt.date | None:
    """A day written with its month's name ("March 5, 2024, 9:30 am"): the day."""
    if value.isascii() and _MONTH_NAME_RE.search(value) is None:
        return None
    days = [d for d in find_dates(value) if d.start == d.end]
    return days[0].start if len(days) == 1 else None
