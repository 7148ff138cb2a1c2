"""Artifacts: versions that only grow, a step's rows seen within its unit, a person's
versions winning and set aside, and what a card shows."""

from __future__ import annotations

import pytest

from readdod.store.api import Store, UnitOfWork
from tests.store_contract import rows

pytestmark = pytest.mark.anyio


async def _item_with_runs(store: Store) -> None:
    await rows.insert(
        store,
        rows.item("a", status="PROCESSING", lease_owner="w1", current_run_id="r2", orphan_count=1),
        rows.run("r1", "a"),
        rows.run("r2", "a", created_at=2),
    )


async def test_versions_only_grow_and_read_back_by_number(store: Store) -> None:
    await _item_with_runs(store)

    def unit(tx: UnitOfWork) -> list[int]:
        return [
            tx.insert_artifact("a", "summary", "system", "r1", '{"v":1}', "{}", 10),
            tx.insert_artifact("a", "summary", "user", None, '{"v":2}', "{}", 11),
            tx.insert_artifact("a", "card", "system", "r1", '{"c":1}', "{}", 12),
        ]

    versions = await store.write(unit)
    more = await store.write(
        lambda tx: tx.insert_artifact("a", "summary", "system", "r2", '{"v":3}', "{}", 13)
    )
    found = await store.read(
        lambda tx: (tx.artifact("a", "summary", 2), tx.artifact("a", "summary", 9))
    )
    every = await store.read(lambda tx: tx.all_artifacts("a"))
    assert versions == [1, 2, 1]
    assert more == 3
    two, missing = found
    assert two is not None and (two.created_by, two.run_id, two.payload) == (
        "user",
        None,
        '{"v":2}',
    )
    assert missing is None
    assert [(a.artifact_type, a.version) for a in every] == [
        ("card", 1),
        ("summary", 1),
        ("summary", 2),
        ("summary", 3),
    ]


async def test_a_steps_artifact_is_seen_in_its_own_unit_and_after(store: Store) -> None:
    await _item_with_runs(store)
    await store.write(
        lambda tx: tx.insert_artifact("a", "summary", "system", "r1", '{"old":1}', "{}", 1)
    )

    def step(tx: UnitOfWork) -> object:
        slot = tx.step_slot("a", "summary", "w1", "r2")
        tx.add_artifact("a", "summary", slot[1] + 1, "r2", '{"new":1}', '{"m":1}', 5)
        tx.add_artifact("a", "extraction", 1, "r2", '{"text":"t"}', "{}", 5)
        return (
            slot,
            tx.artifacts_of_run("a", "r2"),
            tx.run_payloads("a", "r2", ("summary", "card")),
            tx.latest_artifact("a", "summary"),
            tx.step_slot("a", "summary", "w1", "r2"),
            tx.step_slot("a", "summary", "w2", "r2"),
        )

    seen = await store.write(step)
    after = await store.read(
        lambda tx: (
            tx.artifacts_of_run("a", "r2"),
            tx.run_payloads("a", "r2", ("summary", "card")),
            tx.latest_artifact("a", "summary"),
        )
    )
    assert isinstance(seen, tuple)
    slot, of_run, payloads, latest, slot_after, stranger = seen
    assert slot == (1, 1, False, None)
    assert sorted(of_run) == ["extraction", "summary"]
    assert of_run["summary"].payload == '{"new":1}' and of_run["summary"].version == 2
    assert payloads == {"summary": ("r2", '{"new":1}')}
    assert latest is not None and latest.version == 2
    assert slot_after == (1, 2, False, 2)
    assert stranger == (None, 2, False, 2)
    assert (after[0], after[1]) == (of_run, payloads)
    assert after[2] == latest


async def test_a_persons_version_wins_until_set_aside(store: Store) -> None:
    await _item_with_runs(store)

    def unit(tx: UnitOfWork) -> None:
        tx.insert_artifact("a", "score", "system", "r2", '{"s":"system"}', "{}", 1)
        tx.insert_artifact("a", "score", "user", None, '{"s":"mine 1"}', "{}", 2)
        tx.insert_artifact("a", "score", "user", None, '{"s":"mine 2"}', "{}", 3)
        tx.insert_artifact("a", "score", "system", "r1", '{"s":"newer system"}', "{}", 4)

    await store.write(unit)

    def read(tx: UnitOfWork) -> object:
        latest = tx.latest_artifact("a", "score")
        mine = tx.user_version("a", "score")
        inputs = tx.gate_inputs("a", "r2", ("score",))
        slot = tx.step_slot("a", "score", "w1", "r2")
        return (
            latest.payload if latest else None,
            mine.payload if mine else None,
            inputs,
            slot[2],
        )

    before = await store.read(read)
    discarded = await store.write(lambda tx: tx.discard_user_versions("a", "score"))
    again = await store.write(lambda tx: tx.discard_user_versions("a", "score"))
    after = await store.read(read)
    kept = await store.read(lambda tx: [a.discarded for a in tx.all_artifacts("a")])
    assert before == (
        '{"s":"mine 2"}',
        '{"s":"mine 2"}',
        ({"score": ("r2", '{"s":"system"}')}, '{"s":"mine 2"}'),
        True,
    )
    assert (discarded, again) == (2, 0)
    assert after == (
        '{"s":"newer system"}',
        None,
        ({"score": ("r2", '{"s":"system"}')}, None),
        False,
    )
    assert kept == [0, 1, 1, 0]


async def test_a_card_shows_a_persons_edit_else_the_shown_runs_version(store: Store) -> None:
    await _item_with_runs(store)

    def unit(tx: UnitOfWork) -> None:
        tx.insert_artifact("a", "extraction", "system", "r1", '{"text":"r1"}', "{}", 1)
        tx.insert_artifact("a", "summary", "system", "r1", '{"s":"r1"}', "{}", 1)
        tx.insert_artifact("a", "summary", "system", "r2", '{"s":"r2"}', "{}", 2)
        tx.insert_artifact("a", "card", "system", "r1", '{"c":"r1"}', "{}", 1)
        tx.insert_artifact("a", "card", "user", None, '{"c":"mine"}', "{}", 3)

    await store.write(unit)

    async def shown(run_id: str | None) -> dict[str, str]:
        found = await store.read(lambda tx: tx.shown_artifacts("a", run_id))
        return {kind: art.payload for kind, art in found.items()}

    assert await shown("r2") == {
        "extraction": '{"text":"r1"}',  # r2 reused r1's extraction
        "summary": '{"s":"r2"}',
        "card": '{"c":"mine"}',
    }
    assert await shown("r1") == {
        "extraction": '{"text":"r1"}',
        "summary": '{"s":"r1"}',
        "card": '{"c":"mine"}',
    }
    await store.write(lambda tx: tx.discard_user_versions("a", "card"))
    assert await shown("r2") == {
        "extraction": '{"text":"r1"}',
        "summary": '{"s":"r2"}',
    }
