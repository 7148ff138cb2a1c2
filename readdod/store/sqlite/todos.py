"""SQLite todo ticks."""

from __future__ import annotations

from readdod.store.sqlite.base import SqliteUnitBase
from readdod.store.sqlite.queries import QUERIES as Q


class SqliteTodoQueries(SqliteUnitBase):
    """The ticks of :class:`~readdod.store.api.TodoQueries`, on SQLite."""

    def todo_marks(self, item_id: str) -> dict[str, int]:
        return dict(self.execute(Q["todo_marks"], (item_id,)).fetchall())

    def mark_todo(self, item_id: str, key: str, done_at: int) -> bool:
        return self.execute(Q["mark_todo"], (item_id, key, done_at)).rowcount == 1

    def unmark_todo(self, item_id: str, key: str) -> bool:
        return self.execute(Q["unmark_todo"], (item_id, key)).rowcount == 1

    def items_with_todo_marks(self) -> list[str]:
        return [r[0] for r in self.execute(Q["items_with_todo_marks"]).fetchall()]
