"""Items: insert and read, compare-and-set of status, listing, search, sources, retries."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from readdod.store.api import Store, UnitOfWork
from readdod.store.rows import ItemRow
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def test_an_item_reads_back_as_inserted_by_id_and_by_capture_id(store: Store) -> None:
    row = rows.item(
        "i1",
        capture_id="cap-1",
        capture_hash="h",
        source_type="url",
        url="https://example.org/a",
        domain="example.org",
        title="A title",
        priority="P1",
        tags='["a","b"]',
        created_at=5,
        canonical_url="https://example.org/a",
    )
    await rows.insert(store, row)
    got = await store.read(lambda tx: (tx.item("i1"), tx.item_by_capture_id("cap-1")))
    missing = await store.read(lambda tx: (tx.item("nope"), tx.item_by_capture_id("nope")))
    assert got == (row, row)
    assert missing == (None, None)


async def test_set_status_changes_only_an_item_in_the_expected_status(store: Store) -> None:
    await rows.insert(store, rows.item("i1", status="QUEUED"))

    def wrong(tx: UnitOfWork) -> bool:
        return tx.set_status("i1", "READY", "ARCHIVED", archive_reason="x", updated_at=9)

    def right(tx: UnitOfWork) -> bool:
        return tx.set_status("i1", "QUEUED", "PROCESSING", lease_owner="w1", updated_at=7)

    assert await store.write(wrong) is False
    unchanged = await store.read(lambda tx: tx.item("i1"))
    assert await store.write(right) is True
    changed = await store.read(lambda tx: tx.item("i1"))
    assert unchanged == rows.item("i1", status="QUEUED")
    assert changed == rows.item("i1", status="PROCESSING", lease_owner="w1", updated_at=7)


async def test_a_fenced_update_is_refused_to_a_stale_owner_or_run(store: Store) -> None:
    held = rows.item("i1", status="PROCESSING", lease_owner="w1", current_run_id="r1")
    await rows.insert(store, held, rows.item("i2", status="QUEUED", current_run_id="r1"))

    outcomes = [
        await store.write(lambda tx: tx.update_fenced("i1", "w2", "r1", title="w2")),
        await store.write(lambda tx: tx.update_fenced("i1", "w1", "r0", title="r0")),
        await store.write(lambda tx: tx.update_fenced("i2", "w1", "r1", title="queued")),
    ]
    title_before = await store.read(lambda tx: (tx.item("i1"), tx.item("i2")))
    ok = await store.write(lambda tx: tx.update_fenced("i1", "w1", "r1", title="mine"))
    after = await store.read(lambda tx: tx.item("i1"))
    assert outcomes == [False, False, False]
    assert title_before[0] is not None and title_before[0].title is None
    assert title_before[1] is not None and title_before[1].title is None
    assert ok is True
    assert after is not None and after.title == "mine"


async def test_list_items_filters_by_status_priority_and_tags_newest_first(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("i1", status="READY", tags='["work"]'),
        rows.item("i2", status="QUEUED", priority="P0", tags='["work","long"]'),
        rows.item("i3", status="READY", priority="P0", tags='["long"]'),
        rows.item("i4", status="ARCHIVED", tags='["work"]'),
        rows.item("i5", status="PROCESSING"),
    )

    def ids(found: list[ItemRow]) -> list[str]:
        return [r.id for r in found]

    def listings(tx: UnitOfWork) -> dict[str, list[str]]:
        return {
            "all": ids(tx.list_items(None, None, 10, None)),
            "ready": ids(tx.list_items(["READY"], None, 10, None)),
            "busy": ids(tx.list_items(["QUEUED", "PROCESSING"], None, 10, None)),
            "mixed": ids(tx.list_items(["READY", "QUEUED"], None, 10, None)),
            "p0": ids(tx.list_items(None, "P0", 10, None)),
            "work": ids(tx.list_items(None, None, 10, None, tags=["work"])),
            "work+long": ids(tx.list_items(None, None, 10, None, tags=["work", "long"])),
            "ready p0 long": ids(tx.list_items(["READY"], "P0", 10, None, tags=["long"])),
        }

    assert await store.read(listings) == {
        "all": ["i5", "i4", "i3", "i2", "i1"],
        "ready": ["i3", "i1"],
        "busy": ["i5", "i2"],
        "mixed": ["i3", "i2", "i1"],
        "p0": ["i3", "i2"],
        "work": ["i4", "i2", "i1"],
        "work+long": ["i2"],
        "ready p0 long": ["i3"],
    }


async def test_list_items_pages_by_cursor_without_gaps_or_repeats(store: Store) -> None:
    await rows.insert(store, *(rows.item(f"i{n:02}", status="READY") for n in range(7)))
    pages: list[list[str]] = []
    cursor: str | None = None

    def page_after(before: str | None) -> Callable[[UnitOfWork], list[ItemRow]]:
        return lambda tx: tx.list_items(["READY"], None, 3, before)

    for _ in range(5):  # a cursor that does not move would loop for ever
        page = await store.read(page_after(cursor))
        if not page:
            break
        pages.append([r.id for r in page])
        cursor = page[-1].id
    assert pages == [["i06", "i05", "i04"], ["i03", "i02", "i01"], ["i00"]]


async def test_search_finds_words_in_title_url_intent_and_extracted_text(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("i1", status="READY", title="Zebra crossings"),
        rows.item("i2", status="READY", url="https://example.org/giraffe-facts"),
        rows.item("i3", status="READY", intent_text="compare okapi sightings"),
        rows.item("i4", status="READY", title="Plain"),
        rows.item("i5", status="READY", title="Nothing here"),
    )
    await store.write(
        lambda tx: tx.insert_artifact(
            "i4", "extraction", "system", None, '{"text":"the zebra and the okapi"}', "{}", 2
        )
    )

    async def ids(words: str, statuses: list[str] | None = None) -> list[str]:
        found = await store.read(lambda tx: tx.list_items(statuses, None, 10, None, query=words))
        return [r.id for r in found]

    assert await ids("zebra") == ["i4", "i1"]
    assert await ids("giraffe") == ["i2"]
    assert await ids("okapi") == ["i4", "i3"]
    assert await ids("zebra okapi") == ["i4"]
    assert await ids("zebra", ["ARCHIVED"]) == []
    assert await ids("unicorn") == []


async def test_items_of_one_page_and_failed_items_come_by_id(store: Store) -> None:
    page = "https://example.org/a"
    await rows.insert(
        store,
        rows.item("i3", status="READY", canonical_url=page),
        rows.item("i1", status="FAILED_AI", canonical_url=page),
        rows.item("i2", status="FAILED_EXTRACTION"),
        rows.item("i4", status="FAILED_EXPORT"),
        rows.item("i5", status="QUEUED"),
    )

    def read(tx: UnitOfWork) -> tuple[list[str], list[str], list[str]]:
        return (
            [r.id for r in tx.items_by_canonical_url(page)],
            [r.id for r in tx.failed_items(["FAILED_EXTRACTION", "FAILED_AI"])],
            [r.id for r in tx.items_by_canonical_url("https://example.org/other")],
        )

    assert await store.read(read) == (["i1", "i3"], ["i1", "i2"], [])


async def test_count_status_counts_one_status(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("i1", status="READY"),
        rows.item("i2", status="READY"),
        rows.item("i3", status="QUEUED"),
        rows.item("i4", status="PROCESSING"),
    )
    counts = await store.read(
        lambda tx: [tx.count_status(s) for s in ("READY", "QUEUED", "PROCESSING", "ARCHIVED")]
    )
    assert counts == [2, 1, 1, 0]


async def test_sources_read_back_and_small_sources_leave_big_ones_out(store: Store) -> None:
    await rows.insert(store, *(rows.item(i) for i in ("i1", "i2", "i3")))

    def unit(tx: UnitOfWork) -> None:
        tx.insert_source("i1", "<p>small</p>", None)
        tx.insert_source("i2", None, "x" * 100)

    await store.write(unit)

    def read(tx: UnitOfWork) -> object:
        return (
            tx.source("i1"),
            tx.source("i2"),
            tx.source("i3"),
            tx.small_sources(["i1", "i2", "i3"], 50),
        )

    assert await store.read(read) == (
        ("<p>small</p>", None),
        (None, "x" * 100),
        (None, None),
        {"i1": ("<p>small</p>", None, None)},
    )


async def test_a_text_s_document_is_kept_beside_it_and_read_with_it(store: Store) -> None:
    await rows.insert(store, *(rows.item(i) for i in ("i1", "i2", "i3")))
    document = '{"content_type": "application/pdf", "page_count": 3}'

    def unit(tx: UnitOfWork) -> None:
        tx.insert_source("i1", None, "read from a PDF", document)
        tx.insert_source("i2", None, "typed in")

    await store.write(unit)

    def read(tx: UnitOfWork) -> object:
        return (
            [tx.source_document(i) for i in ("i1", "i2", "i3")],
            tx.small_sources(["i1", "i2", "i3"], 100),
            tx.source("i1"),
        )

    assert await store.read(read) == (
        [document, None, None],
        {"i1": (None, "read from a PDF", document), "i2": (None, "typed in", None)},
        (None, "read from a PDF"),
    )


async def test_retries_due_come_soonest_first_and_next_retry_is_the_soonest(
    store: Store,
) -> None:
    await rows.insert(
        store,
        rows.item("i1", status="FAILED_AI", next_attempt_at=300),
        rows.item("i2", status="FAILED_EXTRACTION", next_attempt_at=100),
        rows.item("i3", status="FAILED_AI", next_attempt_at=0),  # no retry scheduled
        rows.item("i4", status="FAILED_AI", next_attempt_at=200),
        rows.item("i5", status="FAILED_EXPORT", next_attempt_at=50),  # never retried so
        rows.item("i6", status="QUEUED", next_attempt_at=10),
    )

    def read(tx: UnitOfWork) -> object:
        return (
            [r.id for r in tx.retries_due(250, 10)],
            [r.id for r in tx.retries_due(1000, 2)],
            [r.id for r in tx.retries_due(99, 10)],
            tx.next_retry_at(),
        )

    assert await store.read(read) == (["i2", "i4"], ["i2", "i4"], [], 100)
    await store.write(lambda tx: tx.set_status("i2", "FAILED_EXTRACTION", "ARCHIVED"))
    assert await store.read(lambda tx: tx.next_retry_at()) == 200
    await store.write(lambda tx: [tx.set_status(i, "FAILED_AI", "ARCHIVED") for i in ("i1", "i4")])
    assert await store.read(lambda tx: tx.next_retry_at()) is None


async def test_search_reads_the_extraction_a_person_sees(store: Store) -> None:
    """A person's extraction is searched instead of the system's, until set aside."""
    await rows.insert(store, rows.item("i1", status="READY"))

    def add(created_by: str, text: str) -> Callable[[UnitOfWork], int]:
        payload = json.dumps({"text": text})
        return lambda tx: tx.insert_artifact("i1", "extraction", created_by, None, payload, "{}", 2)

    async def found(words: str) -> bool:
        return bool(await store.read(lambda tx: tx.list_items(None, None, 10, None, query=words)))

    await store.write(add("system", "otters swim"))
    assert (await found("otters"), await found("herons")) == (True, False)
    await store.write(add("user", "herons wade"))
    await store.write(add("system", "kestrels hover"))  # a person's version still wins
    assert (await found("otters"), await found("herons"), await found("kestrels")) == (
        False,
        True,
        False,
    )
    await store.write(lambda tx: tx.discard_user_versions("i1", "extraction"))
    assert (await found("herons"), await found("kestrels")) == (False, True)
