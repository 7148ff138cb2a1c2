"""The pipeline's steps, one module each, listed once in :data:`STEPS` (DESIGN §4.1).

Everything that walks the steps reads this list: the actor (the order), the
pipeline (each step's ``run``), the core (the next step, where a failure
leaves the item, which steps the READY gate judges), the rubric (each step's
payload Struct and check) and the views. Adding a step is a module declaring
its :class:`Step` and one entry here.

Pure, like its modules: a step's I/O goes through the tools it is given.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from readdod.items.models import Failure, WireStep
from readdod.steps import card, extraction, score, summary, todos
from readdod.steps.base import Step, StepContext, StepResult

__all__ = ["STEPS", "Step", "StepContext", "StepResult"]

#: The steps of a PROCESS run, in order.
STEPS: Final[tuple[Step[Any], ...]] = (
    extraction.STEP,
    summary.STEP,
    score.STEP,
    todos.STEP,
    card.STEP,
)

#: Step names in order; the artifact types.
NAMES: Final[tuple[str, ...]] = tuple(s.name for s in STEPS)
#: The steps whose artifacts make the card the READY gate judges.
GATED: Final[tuple[str, ...]] = tuple(s.name for s in STEPS if s.gated)
#: Each step's artifact Struct by its name.
PAYLOAD_TYPES: Final[dict[str, type[msgspec.Struct]]] = {s.name: s.payload for s in STEPS}

#: Each step by its wire name, from the names readdod uses inside (the runs'
#: ``current_step``, events, logs). The READY gate is no step of the contract:
#: a failure there is put on the step that made the rejected artifact when
#: that is known (:func:`readdod.steps.rubric.gate_fault`), else on the last step,
#: the one that completes the set the gate judges.
WIRE_STEPS: Final[dict[str, WireStep]] = {
    **{s.name: s.wire for s in STEPS},
    "gate": STEPS[-1].wire,
    "export": "export",
}

_BY_NAME: Final[dict[str, Step[Any]]] = {s.name: s for s in STEPS}


def step(name: str) -> Step[Any]:
    """The step called ``name``; KeyError for a name that is none."""
    return _BY_NAME[name]


def next_step(name: str) -> str:
    """The step after ``name``; after the last, ``gate``."""
    i = NAMES.index(name)
    return NAMES[i + 1] if i + 1 < len(NAMES) else "gate"


def wire_step(name: str) -> WireStep:
    """The wire name of a step, given by its internal name or already by its wire name.

    Raises KeyError for a name that is neither.
    """
    if name in WIRE_STEPS:
        return WIRE_STEPS[name]
    for wire in WIRE_STEPS.values():
        if wire == name:
            return wire
    raise KeyError(name)


def decode_failure(raw: str | bytes) -> Failure:
    """A stored ``items.failure``; one written with an internal step name gets the wire name."""
    try:
        return msgspec.json.decode(raw, type=Failure)
    except msgspec.ValidationError:
        stored = msgspec.json.decode(raw)
        if not isinstance(stored, dict) or stored.get("failed_step") not in WIRE_STEPS:
            raise
        return msgspec.convert({**stored, "failed_step": wire_step(stored["failed_step"])}, Failure)
