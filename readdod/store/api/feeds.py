"""Feeds readdod follows, and the entries of each already captured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from readdod.store.rows import FeedRow


class FeedQueries(Protocol):
    """The feeds and their seen entries. A feed's URL is unique; removing a feed
    forgets its entries (the items they became stay)."""

    def insert_feed(self, row: FeedRow) -> bool:
        """Add a feed; False (and nothing written) when its URL is followed already."""
        ...

    def feed(self, feed_id: str) -> FeedRow | None: ...

    def feed_by_url(self, url: str) -> FeedRow | None: ...

    def feeds(self) -> list[FeedRow]:
        """Every feed, oldest first."""
        ...

    def feeds_due(self, now: int, limit: int) -> list[FeedRow]:
        """Up to ``limit`` feeds whose next poll is at or before ``now``, most overdue first."""
        ...

    def next_feed_poll(self) -> int | None:
        """When the next feed is due; None when there is no feed."""
        ...

    def set_feed(self, feed_id: str, **fields: Any) -> bool:
        """Update a feed's columns (not its id, url or creation time); False if it is gone."""
        ...

    def delete_feed(self, feed_id: str) -> bool:
        """Remove a feed and its seen entries; False if there was none."""
        ...

    def feed_entries_seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` were captured from this feed already."""
        ...

    def add_feed_entry(self, feed_id: str, key: str, item_id: str | None, at: int) -> None:
        """Remember an entry as captured (``item_id``: the item it became, if any); a
        key remembered already is left as it is."""
        ...
