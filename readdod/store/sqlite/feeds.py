"""SQLite feeds: the feeds readdod follows and the entries of each already captured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.rows import FEED_COLUMNS, FeedRow
from readdod.store.sqlite.base import IDS_PER_STATEMENT, SqliteUnitBase, assignments, marks
from readdod.store.sqlite.queries import QUERIES as Q

#: Feed columns a caller may set.
FEED_SETTABLE = frozenset(FEED_COLUMNS) - {"id", "url", "created_at"}


def feed_row(row: Sequence[Any]) -> FeedRow:
    return FeedRow(**dict(zip(FEED_COLUMNS, row, strict=True)))


class SqliteFeedQueries(SqliteUnitBase):
    """The feeds of :class:`~readdod.store.api.FeedQueries`, on SQLite."""

    def insert_feed(self, row: FeedRow) -> bool:
        cur = self.execute(Q["insert_feed"], [getattr(row, c) for c in FEED_COLUMNS])
        return cur.rowcount == 1

    def feed(self, feed_id: str) -> FeedRow | None:
        row = self.execute(Q["feed"], (feed_id,)).fetchone()
        return feed_row(row) if row else None

    def feed_by_url(self, url: str) -> FeedRow | None:
        row = self.execute(Q["feed_by_url"], (url,)).fetchone()
        return feed_row(row) if row else None

    def feeds(self) -> list[FeedRow]:
        return [feed_row(r) for r in self.execute(Q["feeds"]).fetchall()]

    def feeds_due(self, now: int, limit: int) -> list[FeedRow]:
        return [feed_row(r) for r in self.execute(Q["feeds_due"], (now, limit)).fetchall()]

    def next_feed_poll(self) -> int | None:
        row = self.execute(Q["next_feed_poll"]).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def set_feed(self, feed_id: str, **fields: Any) -> bool:
        sets, values = assignments(fields, FEED_SETTABLE)
        cur = self.execute(f"UPDATE feeds SET {sets} WHERE id = ?", [*values, feed_id])
        return cur.rowcount == 1

    def delete_feed(self, feed_id: str) -> bool:
        self.execute(Q["delete_feed_entries"], (feed_id,))
        return self.execute(Q["delete_feed"], (feed_id,)).rowcount == 1

    def feed_entries_seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        for start in range(0, len(keys), IDS_PER_STATEMENT):
            part = list(keys[start : start + IDS_PER_STATEMENT])
            rows = self.execute(
                f"SELECT key FROM feed_entries WHERE feed_id = ? AND key IN ({marks(part)})",
                [feed_id, *part],
            ).fetchall()
            seen.update(r[0] for r in rows)
        return seen

    def add_feed_entry(self, feed_id: str, key: str, item_id: str | None, at: int) -> None:
        self.execute(Q["add_feed_entry"], (feed_id, key, item_id, at))
