"""Text made safe to show on a terminal or write into a line-based file. Pure.

A title, intent, URL or tag comes from anywhere people read (a feed entry, a
bookmark file, a page's <title>); an escape sequence in one of them would move
the cursor, retitle the terminal or hide what follows. Nothing readdod shows
or exports passes a control character through: single-line fields lose
theirs (:func:`single_line`, at capture), and what is shown is escaped
visibly (:func:`one_line` and :func:`visible`), so a person sees that it was
there.
"""

from __future__ import annotations

import re
from typing import Final

#: C0 controls, DEL and C1 controls; and the bidirectional overrides and
#: isolates that reorder what a terminal shows.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: The same, less newline and tab: a text body keeps its lines.
_CONTROL_IN_BODY: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SPACES: Final = re.compile(r"[ \t\r\n\x0b\x0c\x85\u2028\u2029]+")


def _shown(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: ␛ for ESC, ␀ for NUL
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def single_line(text: str) -> str:
    """``text`` as one line of plain characters: line breaks and tabs become spaces,
    other controls go, runs of spaces become one, ends trimmed."""
    spaced = _SPACES.sub(" ", text)
    return _SPACES.sub(" ", _CONTROL.sub("", spaced)).strip()


def one_line(text: str) -> str:
    """``text`` to show on one line: line breaks as spaces, other controls visible."""
    return _CONTROL.sub(_shown, _SPACES.sub(" ", text))


def visible(text: str) -> str:
    """A text body to show: its lines and tabs kept, every other control visible."""
    return _CONTROL_IN_BODY.sub(_shown, text.replace("\r\n", "\n"))


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character :func:`one_line` would show escaped."""
    return _CONTROL.search(text) is not None
