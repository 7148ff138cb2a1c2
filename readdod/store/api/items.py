"""Items: what a person captured, the source they handed in, the retries due."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from readdod.store.rows import ItemRow


class ItemQueries(Protocol):
    """Items and the sources handed in with them: insert, compare-and-set a status,
    find, list and search."""

    # --- items ---------------------------------------------------------------

    def item(self, item_id: str) -> ItemRow | None: ...

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        """The item a capture with this idempotency key made, if any."""
        ...

    def insert_item(self, item: ItemRow) -> None: ...

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status (and ``fields`` with it); False, and
        nothing changed, when its status was not ``expected``."""
        ...

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        """Items captured from the same page, oldest id first."""
        ...

    def count_status(self, status: str) -> int: ...

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        """Items in any of ``statuses``, by id."""
        ...

    def list_items(
        self,
        statuses: Sequence[str] | None,
        priority: str | None,
        limit: int,
        before_id: str | None,
        *,
        tags: Sequence[str] = (),
        query: str | None = None,
    ) -> list[ItemRow]:
        """Newest id first, at most ``limit``, ids below ``before_id`` (the cursor).

        ``tags``: every one must be on the item. ``query``: a person's search
        words; every word must be found, as a prefix, in the title, url, intent
        or the extracted text the item shows (VALIDATION_ERROR without a word).
        """
        ...

    def insert_source(
        self, item_id: str, html: str | None, text: str | None, document: str | None = None
    ) -> None:
        """Keep what a person handed in with a capture (page HTML or plain text), and
        ``document``: what a text was read from (JSON, e.g. a PDF's author and pages)."""
        ...

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        """(html, text) handed in with the item; (None, None) when there was none."""
        ...

    def source_document(self, item_id: str) -> str | None:
        """The ``document`` kept with the item's source, if any."""
        ...

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None, str | None]]:
        """(html, text, document) of ``item_ids`` whose html and text are no longer than
        ``max_chars``; bigger ones left out."""
        ...

    # --- automatic retries -----------------------------------------------------------

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        ...

    def next_retry_at(self) -> int | None:
        """When the soonest automatic retry falls due, if any is scheduled."""
        ...
