"""SQLite items: insert, compare-and-set a status, find, list and search; their sources."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from readdod.errors import ValidationFailed
from readdod.store.rows import ITEM_COLUMNS, ItemRow
from readdod.store.sqlite.base import (
    IDS_PER_STATEMENT,
    ITEM_SETTABLE,
    SqliteUnitBase,
    assignments,
    item_row,
    marks,
)
from readdod.store.sqlite.queries import QUERIES as Q

_ITEM_LIST = ", ".join(ITEM_COLUMNS)
_SETTLED = Q["settled"]
_BUSY = frozenset({"QUEUED", "PROCESSING"})

#: Most words of a search: every one is an FTS5 prefix term.
SEARCH_WORDS_MAX = 32


def search_query(text: str) -> str:
    """A person's words as an FTS5 query: every word must match, as a prefix.

    Quoted, so no word is read as FTS5 syntax (AND, NEAR, a column filter).
    """
    words = re.findall(r"\w+", text)
    if not words:
        raise ValidationFailed("query needs at least one word to search for")
    return " ".join(f'"{w}"*' for w in words[:SEARCH_WORDS_MAX])


class SqliteItemQueries(SqliteUnitBase):
    """The items of :class:`~readdod.store.api.ItemQueries`, on SQLite."""

    def item(self, item_id: str) -> ItemRow | None:
        row = self._execute_now(Q["item_by_id"], (item_id,)).fetchone()
        return item_row(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self.execute(Q["item_by_capture_id"], (capture_id,)).fetchone()
        return item_row(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        self.execute(Q["insert_item"], [getattr(item, c) for c in ITEM_COLUMNS])

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status; False when it was not ``expected``."""
        sets, values = assignments({"status": new, **fields}, ITEM_SETTABLE)
        cur = self._execute_now(
            f"UPDATE items SET {sets} WHERE id = ? AND status = ?", [*values, item_id, expected]
        )
        return cur.rowcount == 1

    def count_status(self, status: str) -> int:
        if status == "QUEUED":
            row = self.execute(Q["count_queued"]).fetchone()
        elif status == "PROCESSING":
            row = self.execute(Q["count_processing"]).fetchone()
        else:
            row = self.execute(Q["count_settled"], (status,)).fetchone()
        return int(row[0])

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
        """Newest first, keyset-paginated by id (ids sort by creation time).

        ``tags``: every one must be on the item. ``query``: a person's search
        text; every word must match title, url, intent or extracted text, as
        a prefix (:func:`search_query`; ValidationFailed when it has no word).
        """
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({marks(statuses)})")
            args.extend(statuses)
            if not _BUSY.intersection(statuses):
                where.append(_SETTLED)
        if priority:
            where.append("priority = ?")
            args.append(priority)
        for tag in tags:
            where.append(Q["item_has_tag"])
            args.append(tag)
        if query is not None:
            where.append(Q["search_items"])
            args.append(search_query(query))
        if before_id:
            where.append("id < ?")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.execute(
            f"SELECT {_ITEM_LIST} FROM items{clause} ORDER BY id DESC LIMIT ?", [*args, limit]
        ).fetchall()
        return [item_row(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        rows = self.execute(Q["items_by_canonical_url"], (canonical_url,)).fetchall()
        return [item_row(r) for r in rows]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        settled = "" if _BUSY.intersection(statuses) else f" AND {_SETTLED}"
        rows = self.execute(
            f"SELECT {_ITEM_LIST} FROM items WHERE status IN ({marks(statuses)}){settled}"
            " ORDER BY id",
            list(statuses),
        ).fetchall()
        return [item_row(r) for r in rows]

    # --- sources --------------------------------------------------------------

    def insert_source(
        self, item_id: str, html: str | None, text: str | None, document: str | None = None
    ) -> None:
        self.execute(Q["insert_source"], (item_id, html, text, document))

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self.execute(Q["source"], (item_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def source_document(self, item_id: str) -> str | None:
        row = self.execute(Q["source_document"], (item_id,)).fetchone()
        return row[0] if row else None

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None, str | None]]:
        """The sources of ``item_ids`` no longer than ``max_chars``; bigger ones are left out."""
        found: dict[str, tuple[str | None, str | None, str | None]] = {}
        for start in range(0, len(item_ids), IDS_PER_STATEMENT):
            chunk = item_ids[start : start + IDS_PER_STATEMENT]
            # Sources are never held back: no flush.
            rows = self._execute_now(
                f"SELECT item_id, html, text, document FROM item_sources"
                f" WHERE item_id IN ({marks(chunk)})"
                " AND length(coalesce(html, '')) + length(coalesce(text, '')) <= ?",
                [*chunk, max_chars],
            ).fetchall()
            for item_id, html, text, document in rows:
                found[item_id] = (html, text, document)
        return found

    # --- automatic retries ----------------------------------------------------

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        return [item_row(r) for r in self.execute(Q["retries_due"], (now, limit)).fetchall()]

    def next_retry_at(self) -> int | None:
        row = self.execute(Q["next_retry_at"]).fetchone()
        return int(row[0]) if row and row[0] is not None else None
