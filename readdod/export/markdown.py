"""A card as Markdown: YAML front matter, then the card, readable in any notes app.

Pure: no I/O. Every string in the front matter is double-quoted with YAML
escapes, so a title such as ``yes``, ``#tag`` or ``a: b`` stays a string and
cannot break the block.
"""

from __future__ import annotations

import re
from typing import Final

from readdod.export.document import ExportDoc

TEMPLATE_VERSION: Final = "markdown.v1"
EXTENSION: Final = "md"

_ESCAPES: Final = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x00": "\\0",
}
_SPACE = re.compile(r"\s+")
_SECTIONS: Final = ("one_liner", "summary", "key_points", "todos", "reasons", "source")


def _needs_escape(ch: str) -> bool:
    code = ord(ch)
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or code in (0x2028, 0x2029, 0xFEFF)
        or 0xD800 <= code <= 0xDFFF
    )


def yaml_str(value: str) -> str:
    """``value`` as a YAML double-quoted scalar that any YAML 1.1/1.2 parser reads back."""
    out = ['"']
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _needs_escape(ch):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _yaml_value(value: str | int | list[str] | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(yaml_str(v) for v in value) + "]"
    return yaml_str(value)


def _line(text: str) -> str:
    """One line of Markdown: a list item or heading must not be split by a newline."""
    return _SPACE.sub(" ", text).strip()


def _link_label(text: str) -> str:
    return _line(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def marker(item_id: str) -> bytes:
    """How a file this renderer wrote for ``item_id`` begins (to recognise our own files)."""
    return f"---\nid: {yaml_str(item_id)}\n".encode()


def front_matter(doc: ExportDoc) -> list[str]:
    card = doc.card
    fields: list[tuple[str, str | int | list[str] | None]] = [
        ("id", doc.item_id),
        ("title", _line(card.title)),
        ("url", doc.source_url),
        ("intent", doc.intent),
        ("priority", card.priority),
        ("match_score", card.match_score),
        ("recommendation", doc.score.recommendation if doc.score else None),
        ("tags", doc.all_tags),
        ("created", doc.created_at),
        ("exported", doc.exported_at),
        ("card_version", doc.card_version),
        ("source", "readdod"),
    ]
    return ["---", *(f"{k}: {_yaml_value(v)}" for k, v in fields), "---"]


def render(doc: ExportDoc) -> bytes:
    card = doc.card
    lines = [*front_matter(doc), "", f"# {_line(card.title)}", ""]
    wanted = [s for s in card.render_spec.sections if s in _SECTIONS]
    # The card's own sections first, in its order; then whatever it left out.
    order = wanted + [s for s in _SECTIONS if s not in wanted]
    for section in order:
        lines.extend(_section(section, doc))
    return ("\n".join(lines).rstrip("\n") + "\n").encode()


def _section(name: str, doc: ExportDoc) -> list[str]:
    card = doc.card
    if name == "one_liner":
        return [f"> {_line(card.one_liner)}", ""]
    if name == "summary":
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", card.summary) if p.strip()]
        out = ["## Summary", ""]
        for paragraph in paragraphs:
            out.extend((paragraph, ""))
        return out
    if name == "key_points":
        return ["## Key points", "", *(f"- {_line(k)}" for k in card.key_points), ""]
    if name == "todos":
        return [
            "## Todos",
            "",
            *(
                f"- [{'x' if n in doc.todos_done else ' '}] {_line(t.title)}"
                f" ({t.kind}, ~{t.estimate_min} min)"
                for n, t in enumerate(card.todos)
            ),
            "",
        ]
    if name == "reasons":
        if doc.score is None:
            return []
        return [
            "## Why",
            "",
            *(f"- {_line(r)}" for r in doc.score.reasons),
            "",
            f"Recommendation: {doc.score.recommendation}",
            "",
        ]
    if name == "source":
        url = doc.source_url
        if not url:
            return []
        label = _link_label(card.source.title or card.source.site_name or url)
        site = f" ({_line(card.source.site_name)})" if card.source.site_name else ""
        return ["## Source", "", f"[{label}](<{url.replace('>', '%3E')}>){site}", ""]
    return []
