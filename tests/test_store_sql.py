"""The SQLite store's named SQL, its search syntax, its reader thread and its backup."""

from __future__ import annotations

import ast
import sqlite3
from collections import defaultdict
from pathlib import Path

import anyio
import pytest

import readdod
from readdod.errors import InternalError, ValidationFailed
from readdod.store import BackupResult, SqliteStore, SqliteUnitOfWork, StoreClosed
from readdod.store.sqlite.executor import SEARCH_WORDS_MAX, search_query
from readdod.store.sqlite.queries import QUERIES, parse

pytestmark = pytest.mark.anyio

#: Entries that are conditions other statements are built from, not statements.
_FRAGMENTS = {
    "settled",
    "open_attempt",
    "search_items",
    "item_has_tag",
    "lost",
    "lost_below",
    "status_in",
}


async def test_every_named_statement_compiles_against_the_current_schema(
    tmp_path: Path,
) -> None:
    async with SqliteStore.open(tmp_path / "s.db"):
        pass
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        for name, sql in QUERIES.items():
            # Lost-lease conditions name the items ``i``, like the statements they go into.
            table = "items i" if name.startswith("lost") else "items"
            statement = f"SELECT 1 FROM {table} WHERE {sql}" if name in _FRAGMENTS else sql
            named = ":" in statement  # retention's statements name their parameters
            params: dict[str, None] | list[None] = (
                defaultdict(lambda: None) if named else [None] * statement.count("?")
            )
            conn.execute(f"EXPLAIN {statement}", params)  # raises if it does not compile
    finally:
        conn.close()
    assert "{" not in "".join(QUERIES.values())


def test_entries_are_named_once_and_name_only_what_is_defined() -> None:
    text = "-- name: a\n-- what a is\nSELECT 1;\n-- a rule between sections\n\n-- name: b\n{a}\n"
    assert parse(text) == {"a": "SELECT 1", "b": "SELECT 1"}
    assert parse("-- name: c\nSELECT {item_params} FROM items")["c"].startswith("SELECT ?, ?")
    with pytest.raises(ValueError, match="named twice"):
        parse("-- name: a\nSELECT 1\n-- name: a\nSELECT 2")
    with pytest.raises(ValueError, match="not defined above"):
        parse("-- name: a\nSELECT {b}\n-- name: b\nSELECT 1")
    with pytest.raises(ValueError, match="empty"):
        parse("-- name: a\n-- only a comment\n")


def test_a_file_names_the_fragments_of_files_read_before_it_and_no_name_twice() -> None:
    shared = parse("-- name: busy\nstatus = 'PROCESSING'", source="shared.sql")
    later = parse("-- name: n\nSELECT count(*) FROM items WHERE {busy}", shared, source="x.sql")
    assert later == {"n": "SELECT count(*) FROM items WHERE status = 'PROCESSING'"}
    with pytest.raises(ValueError, match=r"x\.sql: 'busy' is named twice"):
        parse("-- name: busy\nSELECT 1", shared, source="x.sql")
    # Every file of sql/ is read, and the entries of all of them are one namespace.
    assert {"settled", "lost_leases", "claim_items"} <= set(QUERIES)


def test_a_persons_words_become_quoted_prefix_terms() -> None:
    assert search_query("herons, Otters!") == '"herons"* "Otters"*'
    assert search_query('NEAR(a b) OR "c"') == '"NEAR"* "a"* "b"* "OR"* "c"*'
    assert search_query(" ".join(f"w{i}" for i in range(50))).count("*") == SEARCH_WORDS_MAX
    with pytest.raises(ValidationFailed, match="at least one word"):
        search_query(" ,;! ")


def _items(tx: SqliteUnitOfWork) -> None:
    for item_id, title in (("a", "Herons of the marsh"), ("b", "Otters at dusk")):
        tx.execute(
            "INSERT INTO items (id, source_type, title, intent_text, status, created_at,"
            " updated_at) VALUES (?, 'text', ?, 'read later', 'READY', 1, 1)",
            (item_id, title),
        )


async def test_list_items_searches_a_persons_text(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "f.db") as store:
        await store.write(_items)

        async def found(query: str) -> list[str]:
            rows = await store.read(lambda tx: tx.list_items(None, None, 10, None, query=query))
            return [r.id for r in rows]

        assert await found("her") == ["a"]
        assert await found("otters dusk") == ["b"]
        assert await found("herons dusk") == []
        assert await found("AND") == []  # a word, not FTS5 syntax
        with pytest.raises(ValidationFailed):
            await found("!!")


async def test_reads_run_in_the_readers_thread_and_errors_become_store_errors(
    tmp_path: Path,
) -> None:
    async with SqliteStore.open(tmp_path / "r.db") as store:
        await store.write(_items)
        before = store.counters().reads
        results: list[int] = []

        async def count() -> None:
            results.append(await store.read(lambda tx: tx.count_status("READY")))

        async with anyio.create_task_group() as tg:
            for _ in range(200):
                tg.start_soon(count)
        assert results == [2] * 200
        assert store.counters().reads - before == 200
        with pytest.raises(InternalError, match="no such table"):
            await store.read(lambda tx: tx.execute("SELECT * FROM nothing_here"))

        def fails(tx: SqliteUnitOfWork) -> None:
            raise LookupError("not a database error")

        with pytest.raises(LookupError):
            await store.read(fails)
        # A read cancelled while it waits is dropped; the reader goes on answering.
        with anyio.move_on_after(0):
            await store.read(lambda tx: tx.count_status("READY"))
        assert await store.read(lambda tx: tx.item("b")) is not None
    with pytest.raises(StoreClosed):
        await store.read(lambda tx: tx.item("b"))


async def test_backup_copies_the_live_database(tmp_path: Path) -> None:
    async with SqliteStore.open(tmp_path / "live.db") as store:
        await store.write(_items)
        result = await store.backup(tmp_path / "copy.db")
    assert isinstance(result, BackupResult)
    assert result.path == str(tmp_path / "copy.db") and result.pages > 0
    with sqlite3.connect(f"file:{result.path}?mode=ro", uri=True) as db:
        assert sorted(r[0] for r in db.execute("SELECT id FROM items")) == ["a", "b"]


def test_only_the_store_imports_a_database_driver() -> None:
    root = Path(readdod.__file__).parent
    drivers = {"sqlite3", "aiosqlite", "psycopg"}
    found = []
    for path in root.rglob("*.py"):
        if path.is_relative_to(root / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[0] in drivers]
    assert found == []
