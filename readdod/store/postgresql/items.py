"""PostgreSQL items: insert, compare-and-set a status, find, list and search; their sources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from readdod.store.postgresql import search
from readdod.store.postgresql.base import PostgresUnitBase, item_row
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import ITEM_COLUMNS, ItemRow

_ITEM_LIST = ", ".join(ITEM_COLUMNS)
_SETTLED = Q["settled"]
_BUSY = frozenset({"QUEUED", "PROCESSING"})


class PostgresItemQueries(PostgresUnitBase):
    """The items of :class:`~readdod.store.api.ItemQueries`, on PostgreSQL."""

    def item(self, item_id: str) -> ItemRow | None:
        known = self.rows.get(item_id)
        if known is not None:
            return known
        # Only the item row: nothing held back bears on it.
        row = self.execute_now(Q["item_by_id"], (item_id,)).fetchone()
        return item_row(row) if row else None

    def item_by_capture_id(self, capture_id: str) -> ItemRow | None:
        row = self.one(Q["item_by_capture_id"], (capture_id,))
        return item_row(row) if row else None

    def insert_item(self, item: ItemRow) -> None:
        head = search.head_vector(item.title, item.url, item.intent_text)
        self.execute(Q["insert_item"], [*(getattr(item, c) for c in ITEM_COLUMNS), head])

    def set_status(self, item_id: str, expected: str, new: str, **fields: Any) -> bool:
        """Compare-and-set an item's status; False when it was not ``expected``."""
        return self.update_item(
            "id = %s AND status = %s", {"status": new, **fields}, (item_id, expected)
        )

    def count_status(self, status: str) -> int:
        if status == "QUEUED":
            row = self.one(Q["count_queued"])
        elif status == "PROCESSING":
            row = self.one(Q["count_processing"])
        else:
            row = self.one(Q["count_settled"], (status,))
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

        ``query``: every word must be found, as a prefix, in the title, url,
        intent or extracted text (:func:`readdod.store.postgresql.search.query`).
        """
        where: list[str] = []
        args: list[Any] = []
        if query is not None:
            terms = search.query(query)
            if terms is None:
                return []
            where.append(Q["search_items"])
            args.append(terms)
        if statuses:
            where.append("status = ANY(%s)")
            args.append(list(statuses))
            if not _BUSY.intersection(statuses):
                where.append(_SETTLED)
        if priority:
            where.append("priority = %s")
            args.append(priority)
        for tag in tags:
            where.append(Q["item_has_tag"])
            args.append(tag)
        if before_id:
            where.append("id < %s")
            args.append(before_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.all(
            f"SELECT {_ITEM_LIST} FROM items{clause} ORDER BY id DESC LIMIT %s",
            [*args, limit if limit >= 0 else None],
        )
        return [item_row(r) for r in rows]

    def items_by_canonical_url(self, canonical_url: str) -> list[ItemRow]:
        return [item_row(r) for r in self.all(Q["items_by_canonical_url"], (canonical_url,))]

    def failed_items(self, statuses: Sequence[str]) -> list[ItemRow]:
        return [item_row(r) for r in self.all(Q["failed_items"], (list(statuses),))]

    # --- sources --------------------------------------------------------------

    def insert_source(
        self, item_id: str, html: str | None, text: str | None, document: str | None = None
    ) -> None:
        self.execute(Q["insert_source"], (item_id, html, text, document))

    def source(self, item_id: str) -> tuple[str | None, str | None]:
        row = self.execute_now(Q["source"], (item_id,)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def source_document(self, item_id: str) -> str | None:
        row = self.execute_now(Q["source_document"], (item_id,)).fetchone()
        return row[0] if row else None

    def small_sources(
        self, item_ids: Sequence[str], max_chars: int
    ) -> dict[str, tuple[str | None, str | None, str | None]]:
        """The sources of ``item_ids`` no longer than ``max_chars``; bigger ones are left out."""
        if not item_ids:
            return {}
        rows = self.all(Q["small_sources"], (list(item_ids), max_chars))
        return {item_id: (html, text, document) for item_id, html, text, document in rows}

    # --- automatic retries ----------------------------------------------------

    def retries_due(self, now: int, limit: int) -> list[ItemRow]:
        """Failed items whose automatic retry is due, soonest first."""
        return [item_row(r) for r in self.all(Q["retries_due"], (now, limit))]

    def next_retry_at(self) -> int | None:
        row = self.one(Q["next_retry_at"])
        return int(row[0]) if row and row[0] is not None else None
