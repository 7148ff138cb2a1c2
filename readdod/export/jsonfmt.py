"""A card as JSON: the card, the item it belongs to, and why it scored so.

Pure: no I/O. ``id`` comes first so a file this module wrote can be
recognised from its first bytes.
"""

from __future__ import annotations

from typing import Final

import msgspec

from readdod.export.document import ExportDoc
from readdod.items.models import UserCard

TEMPLATE_VERSION: Final = "json.v1"
EXTENSION: Final = "json"
SCHEMA: Final = "readdod.card-export.v1"


class ExportedItem(msgspec.Struct, kw_only=True):
    id: str
    url: str | None
    final_url: str | None
    title: str | None
    intent: str
    tags: list[str]
    created_at: str


class CardExport(msgspec.Struct, kw_only=True):
    id: str
    schema: str
    exported_at: str
    item: ExportedItem
    card_version: int
    card_created_by: str
    #: A person's card may have fewer points or todos than the machine's.
    card: UserCard
    reasons: list[str]
    recommendation: str | None


def marker(item_id: str) -> bytes:
    return b'{\n  "id": ' + msgspec.json.encode(item_id) + b",\n"


def build(doc: ExportDoc) -> CardExport:
    return CardExport(
        id=doc.item_id,
        schema=SCHEMA,
        exported_at=doc.exported_at,
        item=ExportedItem(
            id=doc.item_id,
            url=doc.url,
            final_url=doc.final_url,
            title=doc.title,
            intent=doc.intent,
            tags=doc.all_tags,
            created_at=doc.created_at,
        ),
        card_version=doc.card_version,
        card_created_by=doc.card_created_by,
        card=msgspec.convert(msgspec.to_builtins(doc.card), type=UserCard),
        reasons=list(doc.score.reasons) if doc.score else [],
        recommendation=doc.score.recommendation if doc.score else None,
    )


def render(doc: ExportDoc) -> bytes:
    return msgspec.json.format(msgspec.json.encode(build(doc)), indent=2) + b"\n"
