"""An export's plan: which key, which document, which file names (pure).

The core reads what an export needs in one snapshot (:class:`ExportPlan`);
everything decided from it, the default export key, the document the
renderers take and the names a file may have, is decided here without I/O,
so the same card always plans the same export.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from readdod import export as exporting
from readdod.export import naming
from readdod.items import todos
from readdod.items.models import Artifact, UserCard, UserScore
from readdod.runtime.clock import iso
from readdod.store.rows import ExportRow, ItemRow


class ExportPlan(msgspec.Struct, frozen=True):
    """What an export needs from the store, read in one snapshot."""

    row: ItemRow
    #: What the item shows, the card composed from a person's edits (views.shown_view).
    shown: dict[str, Artifact]
    key: str
    done: ExportRow | None
    previous: list[str]
    #: The keys of the todos a person ticked (readdod.items.todos.keys).
    ticked: frozenset[str] = frozenset()

    @property
    def card(self) -> Artifact | None:
        return self.shown.get("card")


def default_key(
    item_id: str,
    shown: Mapping[str, Artifact],
    fmt: str,
    folder: str,
    ticked: frozenset[str] = frozenset(),
    *,
    row: ItemRow | None = None,
    pattern: str = "",
) -> str:
    """The export key of what ``shown`` would write as ``fmt`` into ``folder``, with the
    todos of ``ticked`` marked done, the fields of ``row`` the file carries, under the
    file-name ``pattern``: any change to the file gives a new key, so a person who
    exports after a change never gets the old file back."""
    card, score = shown.get("card"), shown.get("score")
    # A tick changes the file: the positions of the ticked todos, as the bits of a number.
    marked = sum(1 << n for n in _ticked_positions(shown, ticked))
    return exporting.default_key(
        item_id,
        card.version if card else 0,
        score.version if score else None,
        fmt,
        folder,
        # A person's summary or todos change what the card shows.
        edits={
            kind: shown[kind].version
            for kind in ("summary", "todos")
            if kind in shown and shown[kind].created_by == "user"
        }
        | ({"ticked": marked} if marked else {}),
        shown=_shown_fields(row, pattern) if row is not None else (),
    )


def _shown_fields(row: ItemRow, pattern: str) -> tuple[str, ...]:
    """What of the item itself an export's file says (besides its card), and its name's
    pattern."""
    return (pattern, row.title or "", row.intent_text, row.url or "", row.final_url or "", row.tags)


def _ticked_positions(shown: Mapping[str, Artifact], ticked: frozenset[str]) -> list[int]:
    """0-based positions of the ticked todos among those the item shows."""
    listed = todos.shown_list(shown) or []
    keys = todos.keys([str(t.get("title", "")) for t in listed])
    return [n for n, key in enumerate(keys) if key in ticked]


def document(plan: ExportPlan, now: int) -> exporting.ExportDoc:
    """The renderer's input; raises when the stored card cannot be read."""
    row = plan.row
    card = plan.card
    if card is None:
        raise ValueError("the item has no card")
    score = plan.shown.get("score")
    return exporting.ExportDoc(
        item_id=row.id,
        url=row.url,
        final_url=row.final_url,
        title=row.title,
        intent=row.intent_text,
        tags=msgspec.json.decode(row.tags, type=list[str]),
        created_at=iso(row.created_at) or "",
        exported_at=iso(now) or "",
        card=msgspec.convert(card.payload, type=UserCard),
        card_version=card.version,
        card_created_by=card.created_by,
        score=msgspec.convert(score.payload, type=UserScore) if score else None,
        todos_done=frozenset(_ticked_positions(plan.shown, plan.ticked)),
    )


class FileNames(msgspec.Struct, frozen=True):
    """The names an export's file may take under the folder's naming pattern."""

    pattern: str
    date: str
    slug: str
    ext: str
    item_id: str
    fmt: str

    def candidate(self, n: int) -> str:
        """The ``n``-th name to try (a clash with another item's file takes the next)."""
        return naming.file_name(
            self.pattern,
            date=self.date,
            slug=self.slug,
            ext=self.ext,
            item_id=self.item_id,
            fmt=self.fmt,
            n=n,
        )

    def any_title(self) -> Callable[[str], bool] | None:
        """Matches a file this item wrote under an earlier card's title."""
        return naming.any_title(
            self.pattern, date=self.date, ext=self.ext, item_id=self.item_id, fmt=self.fmt
        )


def file_names(pattern: str, plan: ExportPlan, doc: exporting.ExportDoc, fmt: str) -> FileNames:
    row = plan.row
    return FileNames(
        pattern=pattern,
        date=(iso(row.created_at) or "")[:10],
        slug=naming.slugify(doc.card.title or row.title or row.domain or ""),
        ext=exporting.EXTENSIONS[fmt],
        item_id=row.id,
        fmt=fmt,
    )
