"""Todo ticks: which of an item's todos a person marked done, by the todo's key."""

from __future__ import annotations

from typing import Protocol


class TodoQueries(Protocol):
    """A person's ticks, one per item and todo key (:func:`readdod.items.todos.keys`).

    A tick outlives the card it was made on: a later card showing a todo of
    the same key shows it ticked.
    """

    def todo_marks(self, item_id: str) -> dict[str, int]:
        """The item's ticked todo keys, each with when it was ticked."""
        ...

    def mark_todo(self, item_id: str, key: str, done_at: int) -> bool:
        """Tick a todo; False (and the first tick's time kept) when it already was."""
        ...

    def unmark_todo(self, item_id: str, key: str) -> bool:
        """Take a tick back; False when there was none."""
        ...

    def items_with_todo_marks(self) -> list[str]:
        """Every item with at least one tick, by id."""
        ...
