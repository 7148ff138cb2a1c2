"""The house rules of ARCHITECTURE.md, read off the source: no import cycles, and no
import that crosses a boundary the design forbids."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "readdod"

#: Modules that must do no I/O: no database, no network, no event loop, no store.
PURE = (
    "readdod.items.states",
    "readdod.items.models",
    "readdod.steps.rubric",
    "readdod.steps",
    "readdod.errors",
    "readdod.items.cards",
    "readdod.wire.views",
    "readdod.items.todos",
    "readdod.tasks",
    "readdod.text",
    "readdod.export.planner",
    "readdod.export.markdown",
    "readdod.export.jsonfmt",
    "readdod.export.naming",
    "readdod.export.document",
    "readdod.engines.openai.answers",
    "readdod.engines.openai.budget",
    "readdod.engines.openai.errors",
    "readdod.engines.openai.verdict",
    "readdod.extraction.extract",
    "readdod.extraction.content",
    "readdod.extraction.metadata",
    "readdod.extraction.markdown",
    "readdod.extraction.charsets",
    "readdod.extraction.mediatypes",
    "readdod.extraction.refusals",
    "readdod.capture.formats",
    "readdod.capture.plan",
    "readdod.capture.feeds",
    "readdod.extraction.pdf",
    "readdod.capture.native_messaging",
    "readdod.tui.operations",
    "readdod.tui.progress",
    "readdod.tui.rows",
    "readdod.tui.filters",
    "readdod.tui.keys",
    "readdod.settings.listen",
    "readdod.status.roster",
    "readdod.fleet.notices",
    "readdod.metrics.meter",
)
IO_LIBRARIES = ("sqlite3", "aiosqlite", "psycopg", "httpx", "httpcore", "anyio", "socket")
DRIVERS = ("sqlite3", "aiosqlite", "psycopg")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """Every module ``name`` imports, at any depth of its code (lazy imports too)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text("utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            out.add(target)
            # ``from readdod.core import leases`` imports a module, not a name.
            out.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES)
    return out


def _internal(target: str) -> str | None:
    """The readdod module ``target`` names (a name inside a module counts as the module)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


GRAPH = {
    name: {m for m in map(_internal, _imports(name)) if m is not None and m != name}
    for name in MODULES
}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _part(module: str) -> str:
    """The part of the house a module belongs to: ``readdod.core.unit`` → ``readdod.core``."""
    return ".".join(module.split(".")[:2])


def _under(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_import_graph_has_modules() -> None:
    assert "readdod.core.unit" in GRAPH and "readdod.store" in GRAPH
    assert "readdod.core.unit" in GRAPH["readdod.core.commands"]


def test_no_module_imports_itself_back() -> None:
    # A package importing its own submodules (its __init__ re-exporting them) is no cycle.
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in GRAPH.items()}
    assert _cycles(graph) == []


def test_no_two_parts_import_each_other() -> None:
    parts: dict[str, set[str]] = {}
    for module, deps in GRAPH.items():
        parts.setdefault(_part(module), set()).update(
            _part(d) for d in deps if _part(d) != _part(module)
        )
    assert _cycles(parts) == []


@pytest.mark.parametrize("pure", PURE)
def test_pure_parts_do_no_io(pure: str) -> None:
    for module in (m for m in MODULES if _under(m, [pure])):
        imported = _imports(module)
        assert not [i for i in imported if _under(i, IO_LIBRARIES)], module
        # The store's row Structs are plain data, shared by every implementation.
        reached = [i for i in imported if _under(i, ["readdod.store", "readdod.control"])]
        assert not [i for i in reached if i != "readdod.store.rows"], module


def test_importing_the_pure_parts_loads_no_io_library() -> None:
    """What the pure parts import, all the way down, in a fresh interpreter.

    The openai engine's pure modules are left out: importing one runs the
    engine package's ``__init__``, which builds on the openai client. The
    standard library's ``socket`` is not looked for: ``email.utils`` (a date in
    a Retry-After header) imports it without opening anything.
    """
    libraries = {lib for lib in IO_LIBRARIES if lib != "socket"}
    loaded = [m for m in MODULES if _under(m, PURE) and not _under(m, ["readdod.engines"])]
    pure = [*sorted(loaded), "readdod.store.rows", "readdod.store.api"]
    probe = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in pure)
        + f"print(sorted(m for m in sys.modules if m.split('.')[0] in {libraries!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_store_imports_nothing_above_it() -> None:
    above = ["readdod.core", "readdod.processing.supervisor", "readdod.control", "readdod.cli"]
    above += [
        "readdod.service.daemon",
        "readdod.processing.actor",
        "readdod.processing.pipeline",
        "readdod.loops",
    ]
    for module in (m for m in MODULES if _under(m, ["readdod.store"])):
        assert not [d for d in GRAPH[module] if _under(d, above)], module


def test_only_the_store_speaks_to_a_database() -> None:
    for module in MODULES:
        if _under(module, ["readdod.store"]):
            continue
        assert not [i for i in _imports(module) if _under(i, DRIVERS)], module


def test_the_control_server_and_the_cli_go_through_the_core() -> None:
    for module in (m for m in MODULES if _under(m, ["readdod.control", "readdod.cli"])):
        assert not [d for d in GRAPH[module] if _under(d, ["readdod.store"])], module
        assert "readdod.core.unit" not in GRAPH[module], module


def test_the_tui_is_a_client_of_the_socket_only() -> None:
    """It asks the daemon through control.client, like the CLI: no core, no store."""
    for module in (m for m in MODULES if _under(m, ["readdod.tui"])):
        inside = [
            "readdod.core",
            "readdod.store",
            "readdod.processing.supervisor",
            "readdod.service.daemon",
        ]
        assert not [d for d in GRAPH[module] if _under(d, inside)], module
    assert "readdod.control.client" in GRAPH["readdod.tui.link"]


def test_only_the_tui_and_its_verb_import_textual() -> None:
    """Textual is an optional extra: `readdod demo` after a plain install never needs it."""
    for module in MODULES:
        if _under(module, ["readdod.tui"]):
            continue
        assert not [i for i in _imports(module) if _under(i, ["textual"])], module
    # The CLI reaches the TUI only lazily, inside the verb that runs it.
    assert "readdod.tui.app" in GRAPH["readdod.cli.local_verbs"]
    probe = "import sys, readdod.cli, readdod.service.daemon; print('textual' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_steps_engines_and_exporters_never_write_a_status() -> None:
    workers = [
        "readdod.processing.actor",
        "readdod.processing.pipeline",
        "readdod.steps",
        "readdod.engines",
    ]
    workers += ["readdod.export"]
    workers += ["readdod.extraction"]
    for module in (m for m in MODULES if _under(m, workers)):
        assert not [d for d in GRAPH[module] if _under(d, ["readdod.core.unit"])], module
        assert not [d for d in GRAPH[module] if d == "readdod.store"], module


def test_engines_and_the_extractor_know_nothing_of_items_or_leases() -> None:
    for module in (m for m in MODULES if _under(m, ["readdod.engines", "readdod.extraction"])):
        forbidden = [
            "readdod.core",
            "readdod.store",
            "readdod.processing.supervisor",
            "readdod.processing.actor",
        ]
        assert not [d for d in GRAPH[module] if _under(d, forbidden)], module


def test_only_clients_reach_the_daemon() -> None:
    clients = ["readdod.cli", "readdod.tui", "readdod.capture", "readdod.demo", "readdod.control"]
    for module in MODULES:
        if _under(module, clients):
            continue
        assert "readdod.control.client" not in GRAPH[module], module


def test_the_benches_import_no_cycle() -> None:
    """Benches share what they share through a module of their own (``bench/_common.py``)."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "bench").glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "bench":
                found.update(f"bench.{a.name}" for a in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
                found.add(node.module or "")
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("bench."))
        graph[f"bench.{path.stem}"] = found
    assert "bench.fleet" in graph["bench.throughput"]
    assert _cycles(graph) == []
