"""The CLI's place in the house, read from its source: what each part may import.

The CLI asks the daemon through ``readdod.control.client`` and never opens the
store or changes a status; the demo runs a daemon without knowing the CLI; the
rendering of answers does no I/O.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import readdod

PACKAGE = Path(readdod.__file__).parent

#: Modules the CLI must never import itself: the store, the core and database drivers.
NEVER_FROM_CLI = (
    "readdod.store",
    "readdod.core",
    "readdod.processing.supervisor",
    "readdod.processing.actor",
    "readdod.processing.pipeline",
    "readdod.control.server",
    "sqlite3",
    "aiosqlite",
    "psycopg",
)
#: What the pure parts may import: the standard library's pure modules and each other.
PURE_ALLOWED = (
    "__future__",
    "collections",
    "datetime",
    "json",
    "pathlib",
    "time",
    "typing",
    "readdod.items.states",
    "readdod.cli.actions",
)


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in prefixes)


def _files(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


@pytest.mark.parametrize("path", _files("cli"), ids=lambda p: p.name)
def test_the_cli_reaches_the_daemon_only_through_its_client(path: Path) -> None:
    assert {n for n in _imports(path) if _within(n, NEVER_FROM_CLI)} == set()


@pytest.mark.parametrize("path", _files("demo"), ids=lambda p: p.name)
def test_the_demo_needs_nothing_from_the_cli(path: Path) -> None:
    assert {n for n in _imports(path) if _within(n, ("readdod.cli",))} == set()


@pytest.mark.parametrize("name", ["render.py", "actions.py"])
def test_rendering_is_pure(name: str) -> None:
    imported = _imports(PACKAGE / "cli" / name)
    assert {n for n in imported if not _within(n, PURE_ALLOWED)} == set()
