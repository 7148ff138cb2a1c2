"""Bundled sample pages for ``readdod demo`` and for tests.

The pages ship inside the package (read through :mod:`importlib.resources`)
so the demo works offline and from an installed wheel, not only a checkout.
"""

from __future__ import annotations

from importlib import resources

import msgspec

__all__ = ["SamplePage", "sample_pages"]


class SamplePage(msgspec.Struct, kw_only=True, frozen=True):
    """One demo article: its HTML plus the URL and intent a user would capture it with."""

    file: str
    url: str
    intent: str
    tags: list[str] = []
    html: str = ""


class _PageEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    file: str
    url: str
    intent: str
    tags: list[str] = []


def sample_pages() -> list[SamplePage]:
    """All sample pages listed in ``pages/pages.json``, in file order, HTML loaded."""
    pages = resources.files(__package__).joinpath("pages")
    entries = msgspec.json.decode(pages.joinpath("pages.json").read_bytes(), type=list[_PageEntry])
    return [
        SamplePage(
            file=entry.file,
            url=entry.url,
            intent=entry.intent,
            tags=list(entry.tags),
            html=pages.joinpath(entry.file).read_text(encoding="utf-8"),
        )
        for entry in entries
    ]
