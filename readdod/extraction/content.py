"""Finding the article body: readability-style scoring of the page's paragraphs.

Every paragraph credits its parent, grandparent and great-grandparent unless
one of its ancestors is boilerplate (text written straight into ``<div>``s
counts too when a short winner would otherwise go unchallenged); the best
candidate (scaled by link density) is compared with its parent (an article
split into sibling blocks, or into blocks of one kind further up) and with
the page's semantic markup. The chosen container is pruned and
rendered, the short lines before the first paragraph and repeated blocks are
dropped, and the publisher's JSON-LD ``articleBody`` replaces the DOM's text
when the DOM lost most of it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

from readdod.extraction.boilerplate import Boilerplate, class_weight, prune
from readdod.extraction.dom import (
    HEADINGS,
    SKIP_TAGS,
    Node,
    is_block,
    link_density,
    nonspace_len,
    parse,
    select,
    ws,
)
from readdod.extraction.markdown import Block, Renderer
from readdod.extraction.metadata import Meta
from readdod.extraction.scan import Scan
from readdod.text.scripts import HAN_KANA_RE as CJK_RE
from readdod.text.words import latin_length as visual_len

_MIN_PARAGRAPH_CHARS: Final = 25
_SEMANTIC_MIN_CHARS: Final = 200
_LD_BODY_MIN_CHARS: Final = 500
_LD_BODY_PREFERRED_RATIO: Final = 0.7
_CLIMB_RATIO: Final = 0.62
_LEAD_SHORT_CHARS: Final = 30
_LEAD_PARAGRAPH_CHARS: Final = 100
_CLIMB_LEVELS: Final = 1
# A winner holding this much paragraph text is an article, not an author's
# note that won for want of <p>s elsewhere: div text is not weighed against it.
_DIV_CHALLENGE_CHARS: Final = 1500
_RANKED: Final = 4  # candidates whose link density is worth measuring
_HTML_BLOCK_RE: Final = re.compile(r"<(?:p|br|div|h[2-6]|li)\b", re.IGNORECASE)
_LINES_RE: Final = re.compile(r"\n\s*\n|\n")


def article_blocks(tree: Node, scan: Scan, meta: Meta, *, markdown: bool = True) -> list[Block]:
    """The article as blocks: the DOM's, or the publisher's JSON-LD ``articleBody``.

    Without ``markdown`` a block's Markdown form is its plain text (links
    unresolved, nothing decorated): for callers that want the words alone.
    Prunes ``tree`` in place. Raises :class:`RecursionError` on pages nested
    too deeply to walk.
    """
    blocks = _dom_blocks(tree, scan, meta, markdown=markdown)
    ld_blocks = _ld_body_blocks(scan.ld_article, scan.base, meta, markdown=markdown)
    if ld_blocks and _text_len(blocks) < _LD_BODY_PREFERRED_RATIO * _text_len(ld_blocks):
        # The DOM lost most of the article (JS rendering, teaser markup):
        # the publisher's own articleBody is the better source.
        return ld_blocks
    return blocks


def _dom_blocks(tree: Node, scan: Scan, meta: Meta, *, markdown: bool) -> list[Block]:
    """Strip the chrome, pick the article container, prune it and render it."""
    body = tree.body
    if body is None:
        return []
    judge = Boilerplate(body, scan.keep)
    cjk = (meta.lang or "").lower().startswith(("ja", "zh")) or bool(
        CJK_RE.search(meta.title or scan.doc_title)
    )
    paragraphs = _paragraphs(scan.paragraph_nodes, cjk=cjk)
    container = _choose_container(body, paragraphs, scan, judge, cjk=cjk)
    prune(container, judge)
    blocks = Renderer(scan.base, meta.headlines, markdown=markdown).render(container)
    return _tidy(blocks)


@dataclass(slots=True)
class _Paragraph:
    node: Node
    chars: int
    points: float
    start: Node | None
    """The first element it credits (its parent; the node itself for text with ``<br>``s)."""


def _paragraphs(nodes: list[Node], *, cjk: bool = False) -> list[_Paragraph]:
    """Paragraph-like texts with their readability points.

    ``<br>``-separated text written straight into a ``<div>`` counts as a
    paragraph of that div (old CMSes do that), as readability does by
    wrapping such runs in ``<p>``. On a ``cjk`` page a character weighs
    about a word, so lengths are counted in Latin-letter terms.
    """
    minimum = _MIN_PARAGRAPH_CHARS // 3 if cjk else _MIN_PARAGRAPH_CHARS
    found: list[_Paragraph] = []
    br_parents: set[int] = set()
    for node in nodes:
        tag = node.tag
        if tag == "br":
            parent = node.parent
            if parent is None or parent.mem_id in br_parents or parent.tag in ("p", "td", "li"):
                continue
            br_parents.add(parent.mem_id)
            text = "".join(_inline_text(child) for child in parent.iter(include_text=True))
            node = parent
        else:
            text = node.text()
        if len(text) < minimum:
            continue
        start = node if node.tag in ("div", "section") else node.parent
        if (para := _paragraph(node, start, text, cjk=cjk)) is not None:
            found.append(para)
    return found


def _paragraph(node: Node, start: Node | None, text: str, *, cjk: bool) -> _Paragraph | None:
    chars = nonspace_len(text)
    if cjk:
        chars += 2 * len(CJK_RE.findall(text))
    if chars < _MIN_PARAGRAPH_CHARS:
        return None
    commas = text.count(",")
    if not text.isascii():
        commas += text.count("，") + text.count("、") + text.count("،")
    points = 1 + commas + min(chars / 100, 3)
    return _Paragraph(node, chars, points, start)


# A <div> with none of these inside is a paragraph written as a div.
_TEXT_DIV_QUERY: Final = (
    "div:not(:has(div, p, section, article, main, ul, ol, dl, table, blockquote, pre, "
    "h1, h2, h3, h4, h5, h6, form, figure, header, footer, nav, aside, li, td, br, "
    "script, style))"
)


def _div_paragraphs(body: Node, *, cjk: bool) -> list[_Paragraph]:
    """Text written straight into ``<div>``s, as paragraphs of their parents.

    Some editors and fiction sites write a whole chapter as one ``<div>``
    per paragraph without a single ``<p>``; readability reads such a div
    as a ``<p>``. One query finds them (lexbor's ``:has``), so the page is
    not walked in Python.
    """
    minimum = _MIN_PARAGRAPH_CHARS // 3 if cjk else _MIN_PARAGRAPH_CHARS
    found: list[_Paragraph] = []
    for node in select(body, _TEXT_DIV_QUERY):
        text = node.text()
        if len(text) < minimum:
            continue
        if (para := _paragraph(node, node.parent, text, cjk=cjk)) is not None:
            found.append(para)
    return found


def _inline_text(node: Node) -> str:
    """Text of a node that is inline content (text or non-block element), else ''."""
    if node.is_text_node:
        return str(node.text_content or "")
    if node.is_element_node and not is_block(node.tag) and node.tag not in SKIP_TAGS:
        return str(node.text() or "")
    return ""


@dataclass(slots=True)
class _Candidate:
    node: Node
    score: float = 0.0
    chars: int = 0  # paragraph characters inside
    blocks: bool = False  # reached by climbing to blocks of one kind


def _choose_container(
    body: Node, paragraphs: list[_Paragraph], scan: Scan, judge: Boilerplate, *, cjk: bool
) -> Node:
    """The element that holds the article.

    The readability winner is compared with its parent (climbing while the
    parent holds much more paragraph text, i.e. the article is split into
    sibling blocks) and with the page's semantic markup, and the one that
    holds the article's paragraphs most tightly wins. Text written straight
    into ``<div>``s joins the paragraphs when the winner is short and there
    is much more of it than the winner holds: the article was not in ``<p>``s,
    and what was (an author's note, a sidebar) must not win for want of
    competition.
    """
    body_id = body.mem_id
    cands = _score(paragraphs, judge, body_id)
    top = _climb(_best(cands, body_id), cands, body_id) if cands else None
    held = top.chars if top else 0
    divs = _div_paragraphs(body, cjk=cjk) if held < _DIV_CHALLENGE_CHARS else []
    if divs and sum(div.chars for div in divs) > 2 * held:
        cands = _score(paragraphs + divs, judge, body_id)
        top = _climb(_best(cands, body_id), cands, body_id) if cands else None
    if top is None:
        return body
    semantic = _semantic_container(scan, cands)
    if semantic is not None and scan.article_body_id == semantic.node.mem_id:
        # The publisher's own articleBody mark is the strongest hint there is.
        return semantic.node
    if semantic is not None and semantic.node.mem_id != top.node.mem_id:
        if _contains(semantic.node, top.node):
            # The scored block sits inside the article markup: keep the tighter
            # one unless the markup holds much more paragraph text, or any more
            # around blocks of one kind (the lead often sits in a block of its own).
            if top.chars < 0.8 * semantic.chars or (top.blocks and top.chars < semantic.chars):
                return semantic.node
        elif _contains(top.node, semantic.node):
            if semantic.chars >= 0.6 * top.chars:
                return semantic.node
        elif semantic.chars > top.chars:
            return semantic.node
    return top.node


def _score(paragraphs: list[_Paragraph], judge: Boilerplate, body_id: int) -> dict[int, _Candidate]:
    """Candidates by node: each paragraph credits its ancestors up to the body.

    Paragraphs under boilerplate credit nothing.
    """
    cands: dict[int, _Candidate] = {}
    clean: set[int] = {body_id}
    # Paragraphs mostly share a parent: credit each parent's ancestors once.
    groups: dict[int, tuple[Node, list[float]]] = {}
    for para in paragraphs:
        start = para.start
        if start is None:
            continue
        group = groups.get(start.mem_id)
        if group is None:
            group = groups[start.mem_id] = (start, [0.0, 0.0])
        group[1][0] += para.chars
        group[1][1] += para.points
    for start, (chars, points) in groups.values():
        if not _clean_chain(start, judge, clean):
            continue
        ancestor = start
        level = 0
        while ancestor is not None:
            key = ancestor.mem_id
            cand = cands.get(key)
            if cand is None:
                cand = cands[key] = _Candidate(ancestor)
            cand.chars += int(chars)
            if level < 3:
                cand.score += points / (1, 2, 6)[level]
            if key == body_id:
                break
            ancestor = ancestor.parent
            level += 1
    return cands


def _best(cands: dict[int, _Candidate], body_id: int) -> _Candidate:
    """The readability winner: score plus tag and class weight, scaled by link density."""
    ranked = sorted(cands.values(), key=lambda c: c.score, reverse=True)[:_RANKED]
    best, best_score = ranked[0], -math.inf
    for cand in ranked:
        if cand.node.mem_id == body_id:
            final = cand.score * 0.5
        else:
            raw = cand.score + _initial_score(cand.node)
            if max(raw, 0.0) <= best_score:
                continue  # cannot win whatever its links: skip measuring them
            final = raw * (1 - link_density(cand.node))
        if final > best_score:
            best, best_score = cand, final
    return best


def _climb(top: _Candidate, cands: dict[int, _Candidate], body_id: int) -> _Candidate:
    """Move up while a near ancestor holds much more paragraph text.

    Articles split into sibling blocks (around figures, ads, pull quotes)
    score each block apart; their common ancestor is the article. Looking
    further than ``_CLIMB_LEVELS`` up reaches page wrappers that also hold
    teasers, which costs more than it saves, except through wrappers that
    add no paragraph text to an ancestor whose text comes in blocks of one
    kind (a how-to's steps, each ``<div class="step">`` scored apart).
    """
    while True:
        node = top.node.parent
        found: _Candidate | None = None
        child = top.node
        levels = 0
        while node is not None and node.mem_id != body_id:
            up = cands.get(node.mem_id)
            if up is None:
                break
            if top.chars < _CLIMB_RATIO * up.chars:
                if levels < _CLIMB_LEVELS:
                    found = up
                elif _repeated(child):
                    found = up
                    up.blocks = True
                break
            levels += 1
            if up.chars > top.chars:
                break
            child, node = node, node.parent
        if found is None:
            return top
        top = found


def _repeated(node: Node) -> bool:
    """Whether ``node`` is one of at least three sibling blocks with its tag and class."""
    kind = (node.tag, node.attributes.get("class"))
    if not kind[1]:
        return False
    parent = node.parent
    child = parent.first_child if parent is not None else None
    alike = 0
    while child is not None:
        if child.tag == kind[0] and child.attributes.get("class") == kind[1]:
            alike += 1
            if alike >= 3:
                return True
        child = child.next
    return False


def _clean_chain(node: Node | None, judge: Boilerplate, clean: set[int]) -> bool:
    """True if no element from ``node`` up to the body is boilerplate."""
    seen: list[int] = []
    while node is not None:
        key = node.mem_id
        if key in clean:
            break
        if judge.is_bad(node):
            return False
        seen.append(key)
        node = node.parent
    clean.update(seen)
    return True


def _semantic_container(scan: Scan, cands: dict[int, _Candidate]) -> _Candidate | None:
    """The page's own article markup, as a candidate, if it holds enough text."""
    options: list[_Candidate] = []
    if scan.article_body_id is not None:
        cand = cands.get(scan.article_body_id)
        if cand is not None and cand.chars >= _SEMANTIC_MIN_CHARS:
            return cand
    for cand in cands.values():
        tag = cand.node.tag
        if tag in ("article", "main") and cand.chars >= _SEMANTIC_MIN_CHARS:
            options.append(cand)
    if not options:
        return None
    articles = [c for c in options if c.node.tag == "article"]
    return max(articles or options, key=lambda c: c.chars)


def _contains(outer: Node, inner: Node) -> bool:
    node = inner.parent
    target = outer.mem_id
    while node is not None:
        if node.mem_id == target:
            return True
        node = node.parent
    return False


def _initial_score(node: Node) -> float:
    tag = node.tag
    if tag == "div":
        score = 5.0
    elif tag in ("pre", "td", "blockquote", "article"):
        score = 3.0
    elif tag in ("address", "ol", "ul", "dl", "dd", "dt", "li", "form"):
        score = -3.0
    elif tag in HEADINGS or tag == "th":
        score = -5.0
    else:
        score = 0.0
    return score + class_weight(node)


def _tidy(blocks: list[Block]) -> list[Block]:
    """Drop repeated blocks (galleries and sticky bars repeat their text).

    Short lines before the first paragraph are what sits between a headline
    and the text (kickers, dates, categories, credits), not the article.
    """
    start = 0
    for index, block in enumerate(blocks):
        size = visual_len(block.text)
        if size >= _LEAD_PARAGRAPH_CHARS:
            start = index
            break
        if size >= _LEAD_SHORT_CHARS or block.heading:
            break
    blocks = blocks[start:]
    seen: set[str] = set()
    out: list[Block] = []
    for block in blocks:
        if len(block.text) >= 20:
            if block.text in seen:
                continue
            seen.add(block.text)
        out.append(block)
    return out


def _ld_body_blocks(
    ld: dict[str, Any] | None, base: str | None, meta: Meta, *, markdown: bool
) -> list[Block]:
    """Blocks from JSON-LD ``articleBody`` when it is long enough to be the article."""
    body = ld.get("articleBody") if ld else None
    if not isinstance(body, str) or len(body.strip()) < _LD_BODY_MIN_CHARS:
        return []
    if _HTML_BLOCK_RE.search(body):
        fragment = parse(body).body
        if fragment is None:
            return []
        return Renderer(base, meta.headlines, markdown=markdown).render(fragment)
    paragraphs = (ws(part) for part in _LINES_RE.split(body))
    return [Block(p, p) for p in paragraphs if p]


def _text_len(blocks: list[Block]) -> int:
    return sum(len(block.text) for block in blocks)
