"""JSON Schemas of the artifact payloads and of the item, generated from
:mod:`readdod.items.models`.

The Structs are the source of truth; ``schemas/<type>.schema.json`` is their
published form (for model servers' structured output and for other tools),
and ``schemas/item.schema.json`` is the ``item`` object of the control
protocol's answers (``get``, ``list``, ``capture``, ...). A test fails when a
file and its Struct drift. Pure: no I/O except in
:func:`write_all` / :func:`check_dir`, which the CLI calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import msgspec

from readdod.items.models import Item
from readdod.steps import PAYLOAD_TYPES

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
ARTIFACT_TYPES: Final[tuple[str, ...]] = tuple(PAYLOAD_TYPES)
#: Every published schema: the artifact payloads, then the wire records.
SCHEMA_TYPES: Final[dict[str, type[Any]]] = {**PAYLOAD_TYPES, "item": Item}
NAMES: Final[tuple[str, ...]] = tuple(SCHEMA_TYPES)


def json_schema(step: str) -> dict[str, Any]:
    """The self-contained JSON Schema of one artifact type's payload (or of ``item``).

    The payload's own object sits at the top level (no root ``$ref``), with
    nested types under ``$defs``; a fresh dict on each call, so callers may
    adapt it (e.g. for a server's strict mode) without touching others.
    """
    typ = SCHEMA_TYPES.get(step)
    if typ is None:
        raise KeyError(f"unknown artifact type {step!r}; known: {', '.join(NAMES)}")
    raw = msgspec.json.schema(typ)
    defs: dict[str, Any] = raw.get("$defs", {})
    name = typ.__name__
    top = dict(defs.pop(name))
    out: dict[str, Any] = {"$schema": DIALECT, "$id": f"{step}.schema.json"}
    out.update(top)
    if defs:
        out["$defs"] = defs
    return out


def render(step: str) -> str:
    """The file text for ``step``: stable key order, 2-space indent, trailing newline."""
    return json.dumps(json_schema(step), indent=2, ensure_ascii=False) + "\n"


def filename(step: str) -> str:
    return f"{step}.schema.json"


def write_all(out_dir: Path) -> list[Path]:
    """Write every schema into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for step in NAMES:
        path = out_dir / filename(step)
        path.write_text(render(step), encoding="utf-8")
        written.append(path)
    return written


def check_dir(out_dir: Path) -> list[str]:
    """Problems with the schema files in ``out_dir``: missing or differing from the Structs."""
    problems = []
    for step in NAMES:
        path = out_dir / filename(step)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            problems.append(f"{path} is missing")
            continue
        if text != render(step):
            problems.append(
                f"{path} differs from readdod.items.models.{SCHEMA_TYPES[step].__name__}"
            )
    return problems
