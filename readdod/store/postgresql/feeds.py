"""PostgreSQL feeds: the feeds readdod follows and the entries of each already captured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.postgresql.base import PostgresUnitBase, assignments
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import FEED_COLUMNS, FeedRow

#: Feed columns a caller may set.
FEED_SETTABLE = frozenset(FEED_COLUMNS) - {"id", "url", "created_at"}


def feed_row(row: Sequence[Any]) -> FeedRow:
    return FeedRow(**dict(zip(FEED_COLUMNS, row, strict=True)))


class PostgresFeedQueries(PostgresUnitBase):
    """The feeds of :class:`~readdod.store.api.FeedQueries`, on PostgreSQL."""

    def insert_feed(self, row: FeedRow) -> bool:
        cur = self.execute(Q["insert_feed"], [getattr(row, c) for c in FEED_COLUMNS])
        return self.changed(cur) == 1

    def feed(self, feed_id: str) -> FeedRow | None:
        row = self.one(Q["feed"], (feed_id,))
        return feed_row(row) if row else None

    def feed_by_url(self, url: str) -> FeedRow | None:
        row = self.one(Q["feed_by_url"], (url,))
        return feed_row(row) if row else None

    def feeds(self) -> list[FeedRow]:
        return [feed_row(r) for r in self.all(Q["feeds"])]

    def feeds_due(self, now: int, limit: int) -> list[FeedRow]:
        return [feed_row(r) for r in self.all(Q["feeds_due"], (now, limit))]

    def next_feed_poll(self) -> int | None:
        row = self.one(Q["next_feed_poll"])
        return None if row is None or row[0] is None else int(row[0])

    def set_feed(self, feed_id: str, **fields: Any) -> bool:
        sets, values = assignments(fields, FEED_SETTABLE)
        cur = self.execute(f"UPDATE feeds SET {sets} WHERE id = %s", [*values, feed_id])
        return self.changed(cur) == 1

    def delete_feed(self, feed_id: str) -> bool:
        """Remove a feed; its seen entries go with it (ON DELETE CASCADE)."""
        return self.changed(self.execute(Q["delete_feed"], (feed_id,))) == 1

    def feed_entries_seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        return {r[0] for r in self.all(Q["feed_entries_seen"], (feed_id, list(keys)))}

    def add_feed_entry(self, feed_id: str, key: str, item_id: str | None, at: int) -> None:
        self.execute(Q["add_feed_entry"], (feed_id, key, item_id, at))
