"""Events, idempotent requests, settings and exports: records the core appends."""

from __future__ import annotations

import pytest

from readdod.errors import ReaddodError
from readdod.store.api import Store, UnitOfWork
from readdod.store.rows import ExportRow
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_events_keep_the_order_they_were_added_in(store: Store) -> None:
    await rows.insert(store, rows.item("a"), rows.item("b"))

    def unit(tx: UnitOfWork) -> list[int]:
        tx.insert_event(30, "a", "r1", "transition", "QUEUED", "PROCESSING", "system")
        tx.insert_event(10, "b", None, "edit", None, None, "user", '{"type":"card"}')
        tx.insert_events(
            [
                (20, "a", "r1", "step", "", "", '{"step":"summary"}'),
                (25, "a", "r1", "step", "", "", '{"step":"card"}'),
            ],
            "system",
        )
        tx.insert_event(5, None, None, "daemon", None, None, "system")
        return [e.at for e in tx.events_for("a")]

    seen = await store.write(unit)
    found = await store.read(lambda tx: (tx.events_for("a"), tx.events_for("b")))
    a, b = found
    assert seen == [30, 20, 25]
    assert [(e.at, e.kind, e.run_id, e.from_status, e.trigger, e.detail) for e in a] == [
        (30, "transition", "r1", "QUEUED", "system", "{}"),
        (20, "step", "r1", "", "system", '{"step":"summary"}'),
        (25, "step", "r1", "", "system", '{"step":"card"}'),
    ]
    assert a[0].seq < a[1].seq < a[2].seq
    assert [(e.item_id, e.kind, e.trigger, e.detail) for e in b] == [
        ("b", "edit", "user", '{"type":"card"}')
    ]


async def test_a_request_is_recorded_once(store: Store) -> None:
    await rows.insert(store, rows.item("a"))
    await store.write(lambda tx: tx.insert_request("q1", "capture", "a", '{"id":"a"}', 1))
    with pytest.raises(ReaddodError):
        await store.write(lambda tx: tx.insert_request("q1", "archive", None, "{}", 2))
    found = await store.read(lambda tx: (tx.request("q1"), tx.request("q2")))
    assert found == (("capture", "a", '{"id":"a"}'), None)


async def test_a_setting_is_set_and_replaced(store: Store) -> None:
    before = await store.read(lambda tx: tx.setting("paused"))
    await store.write(lambda tx: tx.set_setting("paused", "1"))
    await store.write(lambda tx: tx.set_setting("other", "x"))
    set_once = await store.read(lambda tx: tx.setting("paused"))
    await store.write(lambda tx: tx.set_setting("paused", "0"))
    after = await store.read(lambda tx: (tx.setting("paused"), tx.setting("other")))
    assert (before, set_once, after) == (None, "1", ("0", "x"))


def _export(key: str, item_id: str, fmt: str, at: int, files: str) -> ExportRow:
    return ExportRow(
        export_key=key,
        item_id=item_id,
        card_version=1,
        template_version="1",
        format=fmt,
        files=files,
        created_at=at,
    )


async def test_an_export_is_recorded_once_and_found_by_its_key(store: Store) -> None:
    await rows.insert(store, rows.item("a"), rows.item("b"))
    first = _export("k1", "a", "markdown", 10, '["a.md"]')

    def unit(tx: UnitOfWork) -> list[bool]:
        return [
            tx.insert_export(first),
            tx.insert_export(_export("k1", "a", "markdown", 11, '["twin.md"]')),
            tx.insert_export(_export("k2", "a", "markdown", 20, '["a-2.md"]')),
            tx.insert_export(_export("k3", "a", "json", 30, '["a.json"]')),
            tx.insert_export(_export("k4", "b", "markdown", 40, '["b.md"]')),
        ]

    inserted = await store.write(unit)
    found = await store.read(
        lambda tx: (
            tx.export("k1"),
            tx.export("nope"),
            tx.export_files("a", "markdown"),
            tx.export_files("a", "json"),
            tx.export_files("b", "json"),
        )
    )
    assert inserted == [True, False, True, True, True]
    assert found == (first, None, ['["a-2.md"]', '["a.md"]'], ['["a.json"]'], [])
