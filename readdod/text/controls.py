"""Control characters in text people see: cleaned out of one-line fields, shown visibly
in bodies.

An intent, title, URL or tag comes from anywhere (a feed entry, a bookmark file, a
page's title) and may carry ESC, OSC, NUL or CR: printed raw, they would drive the
reader's terminal (retitle it, move the cursor, hide text). Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Final

#: A whole escape sequence: CSI (``ESC [ ... final``), OSC/DCS/APC/PM/SOS strings up to
#: their terminator (BEL or ST), and any other two-byte ``ESC x``; C1 forms included.
_SEQUENCE: Final = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[@-~]?"
)
#: Every C0 control, DEL and every C1 control.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SPACES: Final = re.compile(r"[\t\n\r\v\f ]+")


def single_line(text: str) -> str:
    """One line with no control character: escape sequences dropped whole, line breaks
    and tabs made one space, every other control removed, ends trimmed."""
    text = _SEQUENCE.sub("", text)
    text = _SPACES.sub(" ", text)
    return _CONTROL.sub("", text).strip()


_BODY_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def body(text: str) -> str:
    """A text body for a file others read (an export): escape sequences and control
    characters dropped, its lines and tabs kept as they are."""
    return _BODY_CONTROL.sub("", _SEQUENCE.sub("", text))


def _shown(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ ␀ ␍ ...
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}"


_SHOWN: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as a visible sign
    (``ESC`` as ``␛``, ``CR`` as ``␍``, a C1 control as ``\\x9b``): safe for a terminal."""
    return _SHOWN.sub(_shown, text)


#: Levels of a document :func:`cleaned` walks (an artifact has four at most).
MAX_DEPTH: Final = 32


def cleaned(value: Any, bodies: frozenset[str], key: str = "", depth: int = 0) -> Any:
    """A JSON document (a person's edited artifact) with every string cleaned as capture
    cleans one: a string under a key in ``bodies`` as a body (:func:`body`: its lines
    kept), every other as one line (:func:`single_line`: titles, tags, todos, points).
    Below :data:`MAX_DEPTH` levels nothing is cleaned: no artifact is that deep, and its
    validation refuses such a document."""
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, str):
        return body(value) if key in bodies else single_line(value)
    if isinstance(value, dict):
        return {
            k: cleaned(v, bodies, k if isinstance(k, str) else "", depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [cleaned(v, bodies, key, depth + 1) for v in value]
    return value
