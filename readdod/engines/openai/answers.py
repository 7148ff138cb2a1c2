"""What the model is asked for, and how its answer is judged.

Pure. Artifact payloads are checked by :mod:`readdod.steps.rubric`; the shapes the
model is asked for beyond them (a chunk's notes, a card's words) by their
``msgspec`` types. Problems found become the text of the one repair request.

Answers are read tolerantly, as servers and small models write them: in a
code fence, with words around the JSON, with raw newlines inside strings
(a grammar may allow them). Fields readdod computes itself are never asked
for (:func:`model_schema`) and are filled in before the check; bounds a
grammar cannot enforce (integer ranges, list and string lengths) are
clamped (:func:`clamp`) rather than failing the step.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeVar

import msgspec

from readdod.errors import AIError, ErrorCode
from readdod.items.models import TL_DR_MAX
from readdod.steps import PAYLOAD_TYPES, rubric
from readdod.wire import schemas

T = TypeVar("T")


class ChunkNotes(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one chunk of a long text says (the map step of a long summary)."""

    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=1_000)]
    key_points: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=500)]],
        msgspec.Meta(min_length=1, max_length=7),
    ]


class CardText(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The words of a card; the rest of it comes from the earlier steps."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    one_liner: Annotated[str, msgspec.Meta(min_length=1, max_length=TL_DR_MAX)]


def struct_schema(typ: type[Any]) -> dict[str, Any]:
    """The JSON Schema of a Struct, with the Struct itself at the top rather than in ``$defs``."""
    raw = msgspec.json.schema(typ)
    defs: dict[str, Any] = raw.get("$defs", {})
    out: dict[str, Any] = dict(defs.pop(typ.__name__))
    if defs:
        out["$defs"] = defs
    return out


def bare_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without ``$schema``/``$id``, which some servers' schema subsets reject."""
    return {k: v for k, v in schema.items() if k not in ("$schema", "$id")}


def strip_fence(content: str) -> str:
    """Some servers wrap JSON mode answers in a Markdown fence anyway."""
    s = content.strip()
    m = re.search(r"```(?:json|JSON)?\s*(.*?)\s*```", s, flags=re.S)
    return m.group(1) if m else s


_DECODER = json.JSONDecoder(strict=False)  # strict=False: raw control characters in strings


def parse_json(content: str) -> Any:
    """The JSON value in ``content``: fenced or not, with text around it; raises ValueError."""
    text = strip_fence(content)
    try:
        return _DECODER.decode(text)
    except ValueError as first:
        for start in (i for i, ch in enumerate(text) if ch in "{["):
            try:
                value, _ = _DECODER.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
        raise first


def model_schema(schema: dict[str, Any], computed: Iterable[str]) -> dict[str, Any]:
    """``schema`` without the top-level fields readdod computes itself."""
    drop = set(computed)
    if not drop:
        return schema
    out = dict(schema)
    out["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k not in drop}
    if "required" in schema:
        out["required"] = [k for k in schema["required"] if k not in drop]
    return out


def clamp(value: Any, schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """``value`` brought within the bounds ``schema`` states that a grammar may not keep:
    numbers (also when written as strings) into their range, lists and strings cut to
    their longest length."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    for option in schema.get("anyOf", ()):
        if value is not None and option.get("type") not in (None, "null"):
            schema = option
            break
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: clamp(v, props[k], defs) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        hi = schema.get("maxItems")
        items = value[:hi] if isinstance(hi, int) else value
        return [clamp(v, schema.get("items", {}), defs) for v in items]
    if kind in ("integer", "number") and isinstance(value, str):
        try:
            value = float(value.strip())  # "85": a number written as a string
        except ValueError:
            return value
    if (
        kind in ("integer", "number")
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        if not math.isfinite(value):
            return value  # NaN or Infinity: left for the check to refuse
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, int | float) and value < lo:
            value = lo
        if isinstance(hi, int | float) and value > hi:
            value = hi
        return round(value) if kind == "integer" else value
    if kind == "string" and isinstance(value, str):
        hi = schema.get("maxLength")
        value = value.strip()
        if isinstance(hi, int) and len(value) > hi:
            cut = value[:hi]
            space = cut.rfind(" ")
            value = (cut[:space] if space > hi // 2 else cut).rstrip(" ,;:-")
        return value
    return value


def echoes_schema(raw: object) -> bool:
    """Whether an answer is the JSON Schema itself rather than an object that follows it."""
    if not isinstance(raw, dict):
        return False
    keys = set(raw)
    return (
        "$schema" in keys
        or "$defs" in keys
        or (raw.get("type") == "object" and isinstance(raw.get("properties"), dict))
    )


def judge(
    kind: str,
    typ: type[T],
    content: str,
    *,
    schema: dict[str, Any] | None = None,
    computed: dict[str, Any] | None = None,
    mend: Callable[[Any], Any] | None = None,
) -> tuple[T | None, list[str], bool]:
    """Decode and check ``content``: (payload, problems, parsed-as-JSON).

    ``computed`` fields overwrite whatever the model wrote for them; values are
    clamped to ``schema`` before the check; ``mend`` (e.g. :func:`rubric.mend_todos`)
    mends a decoded artifact's near misses before the rubric judges it.
    """
    try:
        raw = parse_json(content)
    except ValueError as exc:
        return None, [f"the answer is not valid JSON ({exc})"], False
    if echoes_schema(raw):
        return (
            None,
            [
                "the answer repeats the JSON Schema instead of an object that follows it;"
                " write the object itself, with the values for this text"
            ],
            True,
        )
    if isinstance(raw, dict):
        raw = {**raw, **(computed or {})}
        if schema is not None:
            raw = clamp(raw, schema)
    if kind in schemas.ARTIFACT_TYPES and typ is PAYLOAD_TYPES.get(kind):
        payload, problems = rubric.validate(kind, raw)
        if payload is not None and mend is not None:
            payload = mend(payload)
            problems = rubric.check(payload)
        return payload, problems, True  # type: ignore[return-value]
    try:
        return msgspec.convert(raw, type=typ), [], True
    except msgspec.ValidationError as exc:
        return None, [f"{kind}: {exc}"], True


def problem_list(problems: list[str]) -> str:
    """The problems as the repair template lists them."""
    return "\n".join(f"- {p}" for p in problems)


def still_invalid(
    kind: str, problems: list[str], parsed: bool, cut_setting: str | None = None
) -> AIError:
    """The step's failure once the repaired answer is still wrong; ``cut_setting``: the
    setting to raise when the answer was cut off at its token limit."""
    hint = (
        f" (the answer ran into its token limit: raise {cut_setting}, or use a model that"
        " writes shorter answers)"
        if cut_setting
        else ""
    )
    return AIError(
        f"the model's {kind} was still invalid after a repair request{hint}: "
        + "; ".join(problems)[:1500],
        code=ErrorCode.AI_SCHEMA_INVALID if parsed else ErrorCode.AI_PARSE_ERROR,
        retryable=False,
    )
