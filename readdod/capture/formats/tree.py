"""A JSON document read whole, for the exports that are one tree (a browser's
bookmarks, Linkwarden's backup), within bounds: at most :data:`MAX_TREE`
characters, walked without recursion."""

from __future__ import annotations

import json
from typing import Any, Final

from readdod.capture.formats.entry import Problem, Source, stream

#: The largest tree read (a browser's bookmarks of 100,000 links take ~40 MB).
MAX_TREE: Final = 128 * 2**20


def load(src: Source) -> Any | Problem:
    """The document, or one problem saying why it cannot be read."""
    text = stream(src).read(MAX_TREE + 1)
    if len(text) > MAX_TREE:
        return Problem(1, f"a JSON tree larger than {MAX_TREE // 2**20} MiB; export it in parts")
    try:
        return json.loads(text.lstrip("\ufeff"))
    except RecursionError:
        return Problem(1, "the JSON is nested too deeply to be an export")
    except json.JSONDecodeError as exc:
        return Problem(exc.lineno, f"not valid JSON at line {exc.lineno} ({exc.msg})")
