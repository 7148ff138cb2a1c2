"""The quality rubric for AI artifacts (seed 000 §7, 001 §4, 003).

Pure: no I/O. Struct constraints in :mod:`readdod.items.models` already bound
lengths, counts and ranges (tl_dr <= 280 chars, key points 3-7, reasons >= 3,
todos 3-7, a render_spec with sections); each step declares what a type cannot
say (nothing blank, nothing repeated, a todo of kind ``output``) as its
``check`` (:mod:`readdod.steps`), and this module applies them: the READY
gate, the engines' repair step and ``readdod eval`` all judge output with
:func:`validate`. It also mends a small model's near misses in todos.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import msgspec

from readdod import steps
from readdod.items.models import (
    Todo,
    TodoKind,
    Todos,
)


def _words(*lists: str) -> frozenset[str]:
    return frozenset(_fold(w) for text in lists for w in text.split())


def _fold(word: str) -> str:
    """Lower case without accents: "Decídelo" and "decidelo" are one word here."""
    nfkd = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in nfkd if not unicodedata.combining(ch))


#: The verbs a todo's title starts with, by the kind of todo they make, in the languages
#: readdod stems (imperative and infinitive forms): what a small model's labels are checked
#: against when they cannot all be right.
KIND_VERBS: Final[dict[TodoKind, frozenset[str]]] = {
    "output": _words(
        "write draft note jot list record document summarise summarize outline create make"
        " build prepare plan decide design sketch compile log",
        "escribe escribir escriba anota anotar anote apunta apuntar apunte redacta redactar"
        " crea crear cree haz hacer haga prepara preparar prepare decide decidir decida"
        " elabora elaborar planifica planificar planea planear disena disenar resume resumir"
        " registra registrar",
        "ecris ecrire ecrivez note noter notez redige rediger redigez dresse dresser cree"
        " creer creez fais faire faites prepare preparer preparez decide decider decidez"
        " resume resumer resumez planifie planifier",
        "schreibe schreiben notiere notieren erstelle erstellen entwirf entwerfen plane planen"
        " entscheide entscheiden fasse",
        "escreva escrever anote anotar crie criar faca fazer prepare preparar decida decidir"
        " planeje planejar",
    ),
    "read": _words(
        "read reread re-read skim",
        "lee leer lea relee releer ojea ojear",
        "lis lire lisez relis relire parcours parcourir",
        "lies lesen",
        "leia ler",
    ),
    "learn": _words(
        "learn study research understand explore investigate",
        "aprende aprender estudia estudiar investiga investigar entiende entender explora"
        " explorar averigua averiguar informate",
        "apprends apprendre etudie etudier comprends comprendre explore explorer",
        "lerne lernen studiere studieren verstehe verstehen recherchiere",
        "aprenda aprender estude estudar entenda entender pesquise pesquisar",
    ),
}
_FIRST_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")


def kind_of_title(title: str) -> TodoKind | None:
    """The kind a todo's leading verb names, or None when it names none readdod knows."""
    m = _FIRST_WORD.search(title)
    if m is None:
        return None
    word = _fold(m.group(0))
    bare = next((word[: -len(c)] for c in _CLITICS if word.endswith(c)), word)
    for kind, verbs in KIND_VERBS.items():
        if word in verbs or bare in verbs:
            return kind
    return None


#: Pronouns a Spanish, Italian or Portuguese imperative carries ("anótalo", "decídelo").
_CLITICS: Final = frozenset(("lo", "la", "le", "los", "las", "les", "se", "me", "te", "nos"))


def mend_todos(todos: Todos, own_output: str) -> Todos:
    """A small model's near misses mended, where the todos themselves are right.

    - A repeated title is dropped (while three todos remain).
    - No todo of kind ``output``: the first whose verb makes something (write, note,
      decide...) becomes one; failing that, readdod's own ``own_output`` todo (a note on
      what the text means for the intent) is added, in place of the last when seven
      are there already.
    - Every todo of kind ``output``: the labels say nothing, so each todo takes the kind
      its verb names (reading, learning, else an action), the ones that make something
      staying ``output``; if none does, ``own_output`` is added as above.
    """
    items: list[Todo] = []
    seen: set[str] = set()
    for t in todos.items:
        key = t.title.strip().casefold()
        if key not in seen:
            seen.add(key)
            items.append(t)
    if len(items) < 3:
        items = list(todos.items)
    kinds = [t.kind for t in items]
    if len(items) > 1 and all(k == "output" for k in kinds):
        items = [
            Todo(title=t.title, kind=_relabel(t.title), estimate_min=t.estimate_min) for t in items
        ]
    if not any(t.kind == "output" for t in items):
        maker = next((i for i, t in enumerate(items) if kind_of_title(t.title) == "output"), None)
        if maker is not None:
            t = items[maker]
            items[maker] = Todo(title=t.title, kind="output", estimate_min=t.estimate_min)
        elif own_output.strip() and own_output.strip().casefold() not in seen:
            own = Todo(title=own_output.strip()[:200], kind="output", estimate_min=10)
            items = [*items[:6], own]
    return Todos(items=items)


def _relabel(title: str) -> TodoKind:
    return kind_of_title(title) or "action"


#: Each step's check by the Struct it judges (every step declares its own, :mod:`readdod.steps`).
_CHECKS: Final[dict[type[Any], Callable[[Any], list[str]]]] = {
    s.payload: s.check for s in steps.STEPS
}


def check(payload: msgspec.Struct) -> list[str]:
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


def validate(artifact_type: str, raw: Any) -> tuple[msgspec.Struct | None, list[str]]:
    """Decode ``raw`` (builtins or JSON bytes) as ``artifact_type`` and judge it."""
    payload = _decode(steps.PAYLOAD_TYPES, artifact_type, raw)
    if isinstance(payload, str):
        return None, [payload]
    return payload, check(payload)


_USER_TYPES: Final[dict[str, type[Any]]] = {s.name: s.user_payload for s in steps.STEPS}


def validate_user(artifact_type: str, raw: Any) -> tuple[msgspec.Struct | None, list[str]]:
    """Decode a person's version of ``artifact_type``: structure only, no rubric.

    Blank text is still refused: a point or a todo with no words says nothing.
    """
    payload = _decode(_USER_TYPES, artifact_type, raw)
    if isinstance(payload, str):
        return None, [payload]
    return payload, steps.step(artifact_type).user_check(payload)


def _gate_problems(
    run_id: str, artifacts: Mapping[str, tuple[str | None, Any]]
) -> list[tuple[str, str, bool]]:
    """Every problem the gate finds, as (step at fault, problem, whether it is inconsistency)."""
    problems: list[tuple[str, str, bool]] = []
    for step in steps.GATED:
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
