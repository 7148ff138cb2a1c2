"""The JSON Schema files under schemas/ are the Structs' published form and must not drift."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from readdod import cli
from readdod.items.models import TL_DR_MAX
from readdod.steps import PAYLOAD_TYPES
from readdod.wire import schemas

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "schemas"


def test_committed_schema_files_match_the_structs() -> None:
    problems = schemas.check_dir(COMMITTED)
    assert problems == [], "run `readdod schemas` and commit the result: " + "; ".join(problems)


def test_every_artifact_type_has_a_file_and_no_stray_artifact_files() -> None:
    names = {p.name for p in COMMITTED.glob("*.schema.json")}
    expected = {schemas.filename(t) for t in PAYLOAD_TYPES}
    assert expected <= names
    for name in names - expected:  # other schemas may live here, but not of artifact types
        assert name.removesuffix(".schema.json") not in PAYLOAD_TYPES


def test_schema_carries_the_struct_constraints() -> None:
    summary = schemas.json_schema("summary")
    assert summary["$schema"] == schemas.DIALECT
    assert summary["type"] == "object"
    assert summary["additionalProperties"] is False
    assert summary["properties"]["tl_dr"]["maxLength"] == TL_DR_MAX
    points = summary["properties"]["key_points"]
    assert (points["minItems"], points["maxItems"]) == (3, 7)
    score = schemas.json_schema("score")
    assert score["properties"]["reasons"]["minItems"] == 3
    assert score["properties"]["match_score"] == {"type": "integer", "minimum": 0, "maximum": 100}
    assert set(score["required"]) == {"match_score", "priority", "reasons", "recommendation"}
    todos = schemas.json_schema("todos")
    assert todos["$defs"]["Todo"]["properties"]["kind"]["enum"] == [
        "action",
        "learn",
        "output",
        "read",
    ]
    card = schemas.json_schema("card")
    assert "render_spec" in card["required"]
    # Every $ref resolves inside the document itself.
    text = json.dumps(card)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        assert ref.removeprefix("#/$defs/") in card["$defs"]


def test_each_call_returns_a_fresh_dict() -> None:
    a = schemas.json_schema("card")
    a["properties"].clear()
    assert schemas.json_schema("card")["properties"]


def test_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown artifact type 'nope'"):
        schemas.json_schema("nope")


def test_check_reports_a_drifted_and_a_missing_file(tmp_path: Path) -> None:
    schemas.write_all(tmp_path)
    assert schemas.check_dir(tmp_path) == []
    path = tmp_path / "score.schema.json"
    doc = json.loads(path.read_text())
    doc["properties"]["reasons"]["minItems"] = 1  # the file says less than the Struct enforces
    path.write_text(json.dumps(doc, indent=2) + "\n")
    (tmp_path / "card.schema.json").unlink()
    problems = schemas.check_dir(tmp_path)
    assert len(problems) == 2
    assert any("score.schema.json differs from readdod.items.models.Score" in p for p in problems)
    assert any("card.schema.json is missing" in p for p in problems)


def test_cli_writes_then_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli.main(["schemas", "--check", "--out", str(out)]) == cli.EXIT_ERROR
    assert "readdod schemas" in capsys.readouterr().err
    assert cli.main(["schemas", "--out", str(out)]) == cli.EXIT_OK
    assert cli.main(["schemas", "--check", "--out", str(out)]) == cli.EXIT_OK
    assert sorted(p.name for p in out.iterdir()) == sorted(
        schemas.filename(t) for t in [*PAYLOAD_TYPES, "item"]
    )


def test_schema_file_accepts_what_the_struct_accepts() -> None:
    """A payload the Struct accepts satisfies the file's required/enum/bounds (spot check)."""
    doc = json.loads((COMMITTED / "todos.schema.json").read_text())
    item = {"title": "Write a note", "kind": "output", "estimate_min": 10}
    payload = {"items": [item, {**item, "title": "b"}, {**item, "title": "c"}]}
    msgspec.convert(payload, PAYLOAD_TYPES["todos"])
    todo = doc["$defs"]["Todo"]
    assert set(todo["required"]) <= set(item)
    assert item["kind"] in todo["properties"]["kind"]["enum"]
    assert doc["properties"]["items"]["minItems"] <= len(payload["items"])
