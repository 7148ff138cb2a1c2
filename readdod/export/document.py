"""What a renderer gets: one item's card with the facts around it.

Pure: no I/O. The export planner builds an :class:`ExportDoc` from the store;
renderers turn it into bytes and never look anything up themselves.
"""

from __future__ import annotations

import msgspec

from readdod.items.models import Card, Score, UserCard, UserScore


class ExportDoc(msgspec.Struct, kw_only=True, frozen=True):
    item_id: str
    url: str | None
    final_url: str | None
    title: str | None
    intent: str
    tags: list[str]
    created_at: str
    exported_at: str
    #: The card a person sees: composed from their edits, so it may be a person's shape.
    card: Card | UserCard
    card_version: int
    card_created_by: str
    score: Score | UserScore | None = None
    #: 0-based positions in ``card.todos`` of the todos a person ticked done.
    todos_done: frozenset[int] = frozenset()

    @property
    def source_url(self) -> str | None:
        return self.card.source.url or self.final_url or self.url

    @property
    def all_tags(self) -> list[str]:
        return sorted({*self.tags, *self.card.tags})
