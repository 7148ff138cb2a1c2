"""PostgreSQL todo ticks."""

from __future__ import annotations

from readdod.store.postgresql.base import PostgresUnitBase
from readdod.store.postgresql.queries import QUERIES as Q


class PostgresTodoQueries(PostgresUnitBase):
    """The ticks of :class:`~readdod.store.api.TodoQueries`, on PostgreSQL."""

    def todo_marks(self, item_id: str) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.all(Q["todo_marks"], (item_id,))}

    def mark_todo(self, item_id: str, key: str, done_at: int) -> bool:
        return self.changed(self.execute(Q["mark_todo"], (item_id, key, done_at))) == 1

    def unmark_todo(self, item_id: str, key: str) -> bool:
        return self.changed(self.execute(Q["unmark_todo"], (item_id, key))) == 1

    def items_with_todo_marks(self) -> list[str]:
        return [r[0] for r in self.all(Q["items_with_todo_marks"])]
