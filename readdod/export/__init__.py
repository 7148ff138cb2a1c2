"""Export: a card as Markdown or JSON, written where the user's notes live.

Rendering (:mod:`markdown`, :mod:`jsonfmt`, :mod:`naming`) is pure;
:mod:`writer` and :mod:`atomic` are the I/O edge. Exporters never write a
status: the core records what happened (:mod:`readdod.core.exporting`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from readdod.export import jsonfmt, markdown
from readdod.export.document import ExportDoc

FORMATS: Final = ("markdown", "json")
EXTENSIONS: Final = {"markdown": markdown.EXTENSION, "json": jsonfmt.EXTENSION}
TEMPLATE_VERSIONS: Final = {"markdown": markdown.TEMPLATE_VERSION, "json": jsonfmt.TEMPLATE_VERSION}

_RENDERERS: Final[dict[str, Callable[[ExportDoc], bytes]]] = {
    "markdown": markdown.render,
    "json": jsonfmt.render,
}
_MARKERS: Final[dict[str, Callable[[str], bytes]]] = {
    "markdown": markdown.marker,
    "json": jsonfmt.marker,
}


def render(fmt: str, doc: ExportDoc) -> bytes:
    return _RENDERERS[fmt](doc)


def marker(fmt: str, item_id: str) -> bytes:
    """The first bytes of every file ``fmt`` renders for ``item_id``."""
    return _MARKERS[fmt](item_id)


def default_key(
    item_id: str,
    card_version: int,
    score_version: int | None,
    fmt: str,
    folder: str,
    *,
    edits: Mapping[str, int] | None = None,
    shown: Sequence[str] = (),
) -> str:
    """The export_key when the client gives none.

    Covers what the file shows (card and score versions, the versions of a
    person's edits the card is composed from, the template, and ``shown``:
    the item's own fields the file carries and the file-name pattern), the
    format and the folder: exporting an unchanged card again to the same
    folder is a no-op; any change to what the file would say, or where,
    writes. (A file deleted since is written again under any key.)
    """
    parts = [item_id, str(card_version), str(score_version), TEMPLATE_VERSIONS[fmt], fmt, folder]
    parts += [f"{kind}={version}" for kind, version in sorted((edits or {}).items())]
    parts += [f"shown={field}" for field in shown]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


__all__ = ["EXTENSIONS", "FORMATS", "TEMPLATE_VERSIONS", "ExportDoc", "marker", "render"]
