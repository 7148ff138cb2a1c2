"""The quality rubric for AI artifacts (seed 000 §7, 001 §4, 003).

Pure: no I/O. Struct constraints in :mod:`readdod.models` already bound
lengths, counts and ranges (tl_dr <= 280 chars, key points 3-7, reasons >= 3,
todos 3-7, a render_spec with sections); this module adds what a type cannot
say (nothing blank, nothing repeated, a todo of kind ``output``). The READY
gate, the engines' repair step and ``readdod eval`` all judge output with
:func:`validate`, and nothing else re-implements these rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from readdod.models import (
    AI_STEPS,
    PAYLOAD_TYPES,
    USER_PAYLOAD_TYPES,
    Card,
    Payload,
    Score,
    Summary,
    Todos,
    UserCard,
    UserPayload,
    UserScore,
    UserSummary,
    UserTodos,
)


def _summary(p: Summary) -> list[str]:
    problems = []
    if not p.tl_dr.strip():
        problems.append("summary.tl_dr is blank")
    if any(not k.strip() for k in p.key_points):
        problems.append("summary.key_points has a blank point")
    if len({k.strip().lower() for k in p.key_points}) != len(p.key_points):
        problems.append("summary.key_points repeats a point")
    return problems


def _score(p: Score) -> list[str]:
    problems = []
    distinct = {r.strip().lower() for r in p.reasons if r.strip()}
    if len(distinct) < 3:
        problems.append("score needs at least 3 distinct, non-blank reasons")
    return problems


def _todos(p: Todos) -> list[str]:
    problems = []
    if not any(t.kind == "output" for t in p.items):
        problems.append("todos need at least one todo of kind 'output'")
    if any(not t.title.strip() for t in p.items):
        problems.append("todos has a blank title")
    if len({t.title.strip().lower() for t in p.items}) != len(p.items):
        problems.append("todos repeats a title")
    return problems


def _card(p: Card) -> list[str]:
    problems = []
    if not p.one_liner.strip() or not p.summary.strip():
        problems.append("card.one_liner and card.summary must not be blank")
    if not any(t.kind == "output" for t in p.todos):
        problems.append("card.todos need at least one todo of kind 'output'")
    return problems


_CHECKS: dict[type[Any], Callable[[Any], list[str]]] = {
    Summary: _summary,
    Score: _score,
    Todos: _todos,
    Card: _card,
}


def check(payload: Payload) -> list[str]:
    """Problems with a decoded payload; empty when it passes."""
    fn = _CHECKS.get(type(payload))
    return fn(payload) if fn else []


P = TypeVar("P")


def _decode(types: Mapping[str, type[P]], artifact_type: str, raw: Any) -> P | str:
    """``raw`` (builtins or JSON) decoded as ``artifact_type``, or why it cannot be."""
    typ = types.get(artifact_type)
    if typ is None:
        return f"unknown artifact type {artifact_type!r}"
    try:
        if isinstance(raw, bytes | str):
            return msgspec.json.decode(raw, type=typ)
        return msgspec.convert(raw, type=typ)
    except msgspec.ValidationError as exc:
        return f"{artifact_type}: {exc}"
    except msgspec.DecodeError as exc:
        return f"{artifact_type}: not valid JSON ({exc})"


def validate(artifact_type: str, raw: Any) -> tuple[Payload | None, list[str]]:
    """Decode ``raw`` (builtins or JSON bytes) as ``artifact_type`` and judge it."""
    payload = _decode(PAYLOAD_TYPES, artifact_type, raw)
    if isinstance(payload, str):
        return None, [payload]
    return payload, check(payload)


def validate_user(artifact_type: str, raw: Any) -> tuple[UserPayload | None, list[str]]:
    """Decode a person's version of ``artifact_type``: structure only, no rubric.

    Blank text is still refused: a point or a todo with no words says nothing.
    """
    payload = _decode(USER_PAYLOAD_TYPES, artifact_type, raw)
    if isinstance(payload, str):
        return None, [payload]
    texts: list[str] = []
    if isinstance(payload, UserSummary | UserCard):
        texts += payload.key_points
    if isinstance(payload, UserTodos | UserCard):
        todos = payload.items if isinstance(payload, UserTodos) else payload.todos
        texts += [t.title for t in todos]
    if isinstance(payload, UserScore):
        texts += payload.reasons
    problems = [f"{artifact_type} has a blank entry"] if any(not t.strip() for t in texts) else []
    return payload, problems


def _gate_problems(
    run_id: str, artifacts: Mapping[str, tuple[str | None, Any]]
) -> list[tuple[str, str, bool]]:
    """Every problem the gate finds, as (step at fault, problem, whether it is inconsistency)."""
    problems: list[tuple[str, str, bool]] = []
    for step in AI_STEPS:
        entry = artifacts.get(step)
        if entry is None:
            problems.append((step, f"{step} is missing for run {run_id}", True))
            continue
        art_run, raw = entry
        if art_run != run_id:
            problems.append((step, f"{step} belongs to run {art_run}, not {run_id}", True))
            continue
        _, found = validate(step, raw)
        problems.extend((step, problem, False) for problem in found)
    return problems


def gate(
    run_id: str, artifacts: Mapping[str, tuple[str | None, Any]]
) -> tuple[str | None, list[str]]:
    """The READY gate.

    ``artifacts`` maps each AI step to ``(meta.run_id, raw payload)`` of the
    version the item would show. Returns ``(error_code, problems)``;
    ``error_code`` is None when the item may become READY.
    """
    found = _gate_problems(run_id, artifacts)
    if not found:
        return None, []
    inconsistent = any(bad_set for _, _, bad_set in found)
    return ("RUN_INCONSISTENT" if inconsistent else "AI_SCHEMA_INVALID"), [p for _, p, _ in found]


def gate_fault(run_id: str, artifacts: Mapping[str, tuple[str | None, Any]]) -> str | None:
    """The first AI step (in step order) whose artifact the gate rejects; None if it passes.

    A gate failure is reported as a failure of this step, the one that made
    (or failed to make) the artifact at fault, so that ``failed_step`` names
    something a person can regenerate or edit.
    """
    found = _gate_problems(run_id, artifacts)
    return found[0][0] if found else None
