"""What the model is asked for, and how its answer is judged.

Pure. Artifact payloads are checked by :mod:`readdod.rubric`; the shapes the
model is asked for beyond them (a chunk's notes, a card's words) by their
``msgspec`` types. Problems found become the text of the one repair request.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypeVar

import msgspec

from readdod import rubric, schemas
from readdod.errors import AIError, ErrorCode
from readdod.models import TL_DR_MAX

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
    m = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", s, flags=re.S)
    return m.group(1) if m else s


def judge(kind: str, typ: type[T], content: str) -> tuple[T | None, list[str], bool]:
    """Decode and check ``content``: (payload, problems, parsed-as-JSON)."""
    text = strip_fence(content)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        return None, [f"the answer is not valid JSON ({exc})"], False
    if kind in schemas.ARTIFACT_TYPES:
        payload, problems = rubric.validate(kind, raw)
        return payload, problems, True  # type: ignore[return-value]
    try:
        return msgspec.convert(raw, type=typ), [], True
    except msgspec.ValidationError as exc:
        return None, [f"{kind}: {exc}"], True


def problem_list(problems: list[str]) -> str:
    """The problems as the repair template lists them."""
    return "\n".join(f"- {p}" for p in problems)


def still_invalid(kind: str, problems: list[str], parsed: bool) -> AIError:
    """The step's failure once the repaired answer is still wrong."""
    return AIError(
        f"the model's {kind} was still invalid after a repair request: "
        + "; ".join(problems)[:1500],
        code=ErrorCode.AI_SCHEMA_INVALID if parsed else ErrorCode.AI_PARSE_ERROR,
        retryable=False,
    )
