"""Calendar dates written in a text, and whether they are still ahead. Pure.

Recognised: ISO dates (2027-03-01), dotted dates (01.03.2027), a day with a
month name and a year ("1 March 2027", "March 1, 2027", "1. März 2027",
"1er mars 2027", "1 de marzo de 2027", "1 марта 2027"), a month with a year
("March 2027") and a year after a preposition ("in 2028"). A month or a day
without a year is not a date one can put in a calendar, so it is not
recognised. Each date is a period (a day, a month, a year); it is ahead of a
moment when the period ends after it.
"""

from __future__ import annotations

import calendar
import datetime as dt
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
