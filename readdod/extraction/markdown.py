"""Markdown rendering of the article's container, with its plain text alongside.

The renderer walks the chosen container once and emits paragraph-level
blocks in two forms together: plain text (what is counted, scored and
summarised) and Markdown (what is exported), so both always hold the same
article. Lists, tables, quotes, code and headings keep their structure in
Markdown; inline links are resolved against the page's base URL.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Final

from readdod.extraction.dom import (
    BLOCK_TAGS,
    BR,
    HEADINGS,
    INVISIBLE,
    SKIP_TAGS,
    Node,
    clean_lines,
    find_inside,
    fold,
    is_block,
    link_target,
    select,
    ws,
)

_CODE_TAGS: Final = frozenset({"code", "kbd", "samp", "tt"})
_STRONG_TAGS: Final = frozenset({"strong", "b"})
_EM_TAGS: Final = frozenset({"em", "i"})
_MARKED_TAGS: Final = _CODE_TAGS | _STRONG_TAGS | _EM_TAGS | {"a"}
_CODE_LANG_RE: Final = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.IGNORECASE)


@dataclass(slots=True)
class Block:
    """One paragraph-level unit of the article.

    ``group`` ties blocks that markdown must join with a single newline
    (items of one list, rows of one table).
    """

    text: str
    md: str
    group: int | None = None
    heading: bool = False


class Renderer:
    """Walks a container and emits blocks with plain and markdown forms together.

    Inline content accumulates in two parallel buffers and becomes a block at
    the next block boundary, so text directly inside a ``<div>`` is not lost.
    """

    def __init__(
        self, base_url: str | None, headlines: frozenset[str], *, markdown: bool = True
    ) -> None:
        self.blocks: list[Block] = []
        self._markdown = markdown
        self._plain: list[str] = []
        self._md: list[str] = []
        self._base = base_url
        self._headlines = headlines
        self._group: int | None = None
        self._groups = 0

    def render(self, node: Node) -> list[Block]:
        self._children(node)
        self._flush()
        return self.blocks

    # dispatch

    def _children(self, node: Node) -> None:
        # The hottest loop of rendering: text nodes are handled inline.
        plain, md = self._plain, self._md
        for child in node.iter(include_text=True):
            tag: str | None = child.tag
            if tag == "-text":
                # Raw: whitespace is collapsed once per block, in _flush.
                text = child.text_content or ""
                plain.append(text)
                md.append(text)
            elif tag and tag[0] != "-" and tag not in SKIP_TAGS:  # not a comment
                self._element(child, tag)

    def _node(self, node: Node) -> None:
        tag: str | None = node.tag
        if tag == "-text":
            text = node.text_content or ""
            self._plain.append(text)
            self._md.append(text)
        elif tag and tag[0] != "-" and tag not in SKIP_TAGS:
            self._element(node, tag)

    def _element(self, node: Node, tag: str) -> None:
        if tag == "br":
            self._push(BR, BR)
        elif tag not in BLOCK_TAGS and "-" not in tag:  # inline (see is_block)
            parts = self._inline(node)
            if parts is None:  # an inline element wrapping blocks: look through it
                self._children(node)
            else:
                self._push(*parts)
        elif tag in HEADINGS:
            self._heading(node, HEADINGS[tag])
        elif tag == "pre":
            self._pre(node)
        elif tag in ("ul", "ol", "menu"):
            self._list(node, ordered=tag == "ol")
        elif tag == "li":
            self._item(node, "- ")
        elif tag == "blockquote":
            self._quote(node)
        elif tag == "table":
            self._table(node)
        else:
            if self._plain:
                self._flush()
            self._children(node)
            if self._plain:
                self._flush()

    # inline content

    def _push(self, plain: str, md: str) -> None:
        self._plain.append(plain)
        self._md.append(md)

    def _flush(self) -> None:
        if not self._plain:
            return
        raw_plain = "".join(self._plain)
        raw_md = "".join(self._md) if self._markdown else raw_plain
        self._plain.clear()
        self._md.clear()
        plain = clean_lines(raw_plain)
        if plain:
            md = plain if raw_md == raw_plain else clean_lines(raw_md)
            self.blocks.append(Block(plain, md or plain, self._group))

    def _inline(self, node: Node) -> tuple[str, str] | None:
        """Plain and markdown forms of an inline subtree; None if it holds blocks."""
        plain: list[str] = []
        md: list[str] = []
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                text = child.text_content or ""
                plain.append(text)
                md.append(text)
                continue
            if not tag or tag[0] == "-" or tag in SKIP_TAGS:
                continue
            if tag == "br":
                plain.append(BR)
                md.append(BR)
                continue
            if is_block(tag):
                return None
            parts = self._inline(child)
            if parts is None:
                return None
            plain.append(parts[0])
            md.append(parts[1])
        text = "".join(plain)
        if not self._markdown:
            return text, text
        return text, self._decorate(node, text, "".join(md))

    def _decorate(self, node: Node, text: str, markdown: str) -> str:
        """Markdown for one inline element, keeping its outer whitespace outside."""
        tag = node.tag
        if tag not in _MARKED_TAGS:  # <span>, <abbr>, <sup>…: the text as it is
            return markdown
        inner = markdown.strip()
        if not inner:
            return markdown
        lead = markdown[: len(markdown) - len(markdown.lstrip())]
        trail = markdown[len(markdown.rstrip()) :]
        if tag == "a":
            href = link_target(self._base, node.attributes.get("href"))
            if href:
                inner = f"[{inner}]({href})"
        elif tag in _CODE_TAGS:
            code = ws(text)
            fence = "``" if "`" in code else "`"
            inner = f"{fence}{code}{fence}"
        elif tag in _STRONG_TAGS:
            inner = f"**{inner}**"
        elif tag in _EM_TAGS:
            inner = f"*{inner}*"
        return f"{lead}{inner}{trail}"

    # blocks

    def _heading(self, node: Node, level: int) -> None:
        self._flush()
        text = ws(node.text()).rstrip("¶ ")  # a trailing pilcrow is a permalink
        if not text:
            return
        if level == 1 and (not self.blocks or fold(text) in self._headlines):
            return  # the headline is metadata (title), not body text
        self.blocks.append(Block(text, f"{'#' * level} {text}", self._group, heading=True))

    def _pre(self, node: Node) -> None:
        self._flush()
        raw = (node.text() or "").replace("\r\n", "\n").translate(INVISIBLE)
        code = textwrap.dedent("\n".join(line.rstrip() for line in raw.split("\n"))).strip("\n")
        if not code.strip():
            return
        fence = "````" if "```" in code else "```"
        md = f"{fence}{_code_language(node)}\n{code}\n{fence}"
        self.blocks.append(Block(code, md, self._group))

    def _list(self, node: Node, *, ordered: bool) -> None:
        self._flush()
        outer = self._group
        if outer is None:
            self._groups += 1
            self._group = self._groups
        number = _int_attr(node, "start", 1)
        for child in node.iter(include_text=True):
            if child.is_element_node and child.tag == "li":
                self._item(child, f"{number}. " if ordered else "- ")
                number += 1
            else:
                self._node(child)
        self._flush()
        self._group = outer

    def _item(self, node: Node, marker: str) -> None:
        """One list item as one block; nested content is indented under the marker."""
        self._flush()
        start = len(self.blocks)
        self._children(node)
        self._flush()
        inner = self.blocks[start:]
        del self.blocks[start:]
        if not inner:
            return
        text = "\n\n".join(block.text for block in inner)
        if not self._markdown:
            self.blocks.append(Block(text, text, self._group))
            return
        pad = " " * len(marker)
        lines = join_markdown(inner).split("\n")
        md = "\n".join([marker + lines[0]] + [pad + line if line else "" for line in lines[1:]])
        self.blocks.append(Block(text, md, self._group))

    def _quote(self, node: Node) -> None:
        self._flush()
        start = len(self.blocks)
        outer = self._group
        self._group = None
        self._children(node)
        self._flush()
        self._group = outer
        inner = self.blocks[start:]
        del self.blocks[start:]
        if not inner:
            return
        text = "\n\n".join(block.text for block in inner)
        if not self._markdown:
            self.blocks.append(Block(text, text, self._group))
            return
        md = "\n".join(f"> {line}" if line else ">" for line in join_markdown(inner).split("\n"))
        self.blocks.append(Block(text, md, self._group))

    def _table(self, node: Node) -> None:
        """Data tables become one block per row; layout tables are read through."""
        self._flush()
        if find_inside(node, "table, p, div, ul, ol, pre, blockquote, h2, h3, h4") is not None:
            self._children(node)
            self._flush()
            return
        self._groups += 1
        group = self._group if self._group is not None else self._groups
        header_done = False
        for row in select(node, "tr"):
            cells = []
            plains = []
            for cell in select(row, "th, td"):
                parts = self._inline(cell)
                plain_cell = ws(cell.text())
                cells.append(ws(parts[1]) if parts is not None else plain_cell)
                if plain_cell:
                    plains.append(plain_cell)
            if not any(cells):
                continue
            escaped = [cell.replace("|", "\\|") for cell in cells]
            md = "| " + " | ".join(escaped) + " |"
            if not header_done:
                md += "\n|" + "|".join(" --- " for _ in cells) + "|"
                header_done = True
            self.blocks.append(Block(" | ".join(plains), md, group))


def join_markdown(blocks: list[Block]) -> str:
    """Blank lines between blocks, single newlines inside a list or table."""
    out: list[str] = []
    previous: Block | None = None
    for block in blocks:
        if previous is not None:
            tight = block.group is not None and block.group == previous.group
            out.append("\n" if tight else "\n\n")
        out.append(block.md)
        previous = block
    return "".join(out)


def _code_language(node: Node) -> str:
    for candidate in (node, *select(node, "code")[:1]):
        if candidate is None:
            continue
        attrs = candidate.attributes
        match = _CODE_LANG_RE.search(attrs.get("class") or "")
        if match:
            return str(match.group(1)).lower()
        if attrs.get("data-lang"):
            return ws(attrs["data-lang"]).lower()
    return ""


def _int_attr(node: Node, name: str, default: int) -> int:
    try:
        return int(node.attributes.get(name) or default)
    except ValueError:
        return default
