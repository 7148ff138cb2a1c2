"""File names from ``export.filename``: placeholders, slugs, collision suffixes.

Pure: no I/O. Which candidate is free is decided by the writer.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable
from typing import Final

DEFAULT_PATTERN: Final = "{date}-{slug}.{ext}"
PLACEHOLDERS: Final = ("date", "slug", "ext", "id", "format")
SLUG_MAX: Final = 60
#: Collision suffixes tried (-2, -3, ...) before giving up on a folder.
MAX_SUFFIX: Final = 1000

_NOT_WORD = re.compile(r"[\W_]+")


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` cannot name export files, or None when it can."""
    if not pattern.strip():
        return "must not be empty"
    if "/" in pattern or "\\" in pattern or "\x00" in pattern:
        return "must be a file name, not a path (no '/')"
    try:
        fields = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        return f"is not a valid pattern ({exc}); use placeholders like {DEFAULT_PATTERN}"
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            return f"unknown placeholder {{{name}}}; known: {known}"
        if spec or conversion:
            return f"placeholder {{{name}}} takes no format spec or conversion"
    if "{slug}" not in pattern and "{id}" not in pattern:
        return "must contain {slug} or {id}, or every item would share one name"
    return None


def slugify(text: str, max_len: int = SLUG_MAX) -> str:
    """Lower-case words joined by '-'; accents dropped, other scripts kept."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = _NOT_WORD.sub("-", unicodedata.normalize("NFKC", plain).lower()).strip("-")
    if len(slug) > max_len:
        cut = slug[:max_len]
        slug = (cut.rsplit("-", 1)[0] if "-" in cut else cut).strip("-")
    return slug or "item"


def any_title(
    pattern: str, *, date: str, ext: str, item_id: str, fmt: str
) -> Callable[[str], bool] | None:
    """Whether a name is one of the item's candidates under some title (any slug, any ``-n``).

    None when the names do not depend on the title at all.
    """
    if "{slug}" not in pattern:
        return None
    name = file_name(pattern, date=date, slug="\x00", ext=ext, item_id=item_id, fmt=fmt)
    tail = f".{ext}" if name.endswith(f".{ext}") else ""
    body = name[: len(name) - len(tail)]
    regex = re.compile(
        ".+".join(map(re.escape, body.split("\x00"))) + r"(-[0-9]+)?" + re.escape(tail),
        re.DOTALL,
    )
    return lambda candidate: regex.fullmatch(candidate) is not None


def file_name(
    pattern: str, *, date: str, slug: str, ext: str, item_id: str, fmt: str, n: int = 1
) -> str:
    """The ``n``-th candidate name: the pattern, then ``-2``, ``-3`` ... before the extension."""
    name = pattern.format_map(
        {"date": date, "slug": slug, "ext": ext, "id": item_id.lower(), "format": fmt}
    )
    if n == 1:
        return name
    tail = f".{ext}"
    if name.endswith(tail) and len(name) > len(tail):
        return f"{name[: -len(tail)]}-{n}{tail}"
    return f"{name}-{n}"
