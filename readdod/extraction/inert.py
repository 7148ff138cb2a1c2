"""Script and style bodies cut out before parsing: text the extractor never reads.

About half the characters of a typical page are JavaScript and CSS. Encoding
them to UTF-8 for the parser and tokenizing them is about a fifth of an
extraction, though nothing the extractor reads lies in them (JSON-LD aside,
which is kept). :func:`empty_inert` cuts them out and leaves the ``<script>``
and ``<style>`` elements in place, empty, so the parsed tree is the same tree
less that text, and only what is kept is encoded.

A scan that followed the tokenizer would cost more than the parsing it saves,
so the cuts are found with plain searches: each ``<script`` (then each
``<style``) and, by ``<`` alone, the first ``</`` after it. A body is cut
only when that is its end tag and nothing in the body could change where the
tokenizer ends it or an enclosing comment (:func:`_bodies`); an element kept
whole is skipped to where the tokenizer ends it. A start tag met where it is
not a tag (in a comment, an attribute value, a ``<textarea>``) has its cut
inside that comment, value or element, none of which is read; a ``<title>``
is read, and is kept whole. What would mislead it is a stray end tag: a
``</script>`` with no start tag, after a ``<script`` that is not a tag; the
text between them would be cut. Tests hold the parsed trees alike over
generated pages and over every page of the extraction benches.
"""

from __future__ import annotations

from typing import Final

#: Bodies shorter than this are kept: cutting them saves less than it costs.
_MIN_CUT: Final = 64
_NAME_ENDS: Final = "\t\n\f\r />"
_NAME_ENDS_NONEMPTY: Final = frozenset(_NAME_ENDS)

#: A stretch of the page, as ``(start, end)`` offsets.
Span = tuple[int, int]


def empty_inert(page: str) -> bytes:
    """``page`` as the parser's UTF-8, less the text of its scripts and styles.

    JSON-LD scripts keep their text. Only what is kept is encoded.
    """
    cuts = _cuts(page)
    if not cuts:
        return page.encode("utf-8", "ignore")  # as the parser encodes text
    # Encoded piece by piece: a piece in ASCII (most of them, a page's other characters
    # being in its text) is copied, not encoded.
    pieces: list[bytes] = []
    kept = 0
    for start, end in cuts:
        pieces.append(page[kept:start].encode("utf-8", "ignore"))
        kept = end
    pieces.append(page[kept:].encode("utf-8", "ignore"))
    return b"".join(pieces)


def _outside_title(page: str, cuts: list[Span], scripts: list[Span]) -> list[Span]:
    """The cuts that do not lie in the page's ``<title>``: it is read, and script markup
    written in it is text.

    The title is the first ``<title`` that is not in a script's body (``scripts``, in
    page order), looked for no further than the last cut: near the top of a page, where
    it is found quickly. Later titles (an SVG's) are not read. A ``<title`` written in a
    comment before the page's own would stand for it here.
    """
    if not cuts:
        return cuts
    limit = cuts[-1][0]
    pos = i = 0
    while (title := page.find("<title", pos, limit)) >= 0:
        while i < len(scripts) and scripts[i][1] <= title:
            i += 1
        if i < len(scripts) and scripts[i][0] <= title:
            pos = scripts[i][1]
            continue
        title_end = page.find("</title", title)
        if title_end < 0:
            title_end = len(page)
        return [cut for cut in cuts if not title < cut[0] < title_end]
    return cuts


def _cuts(page: str) -> list[Span]:
    """Where the bodies to cut lie, as ``(start, end)`` offsets in page order."""
    scripts, script_spans = _bodies(page, "script", [])
    styles, _ = _bodies(page, "style", script_spans)
    found = sorted(scripts + styles)
    cuts: list[Span] = []
    for body, end in found:
        if cuts and cuts[-1][1] > body:
            continue  # a "<style>…</style>" written in a script's text, inside its cut
        cuts.append((body, end))
    return _outside_title(page, cuts, script_spans)


def _bodies(page: str, name: str, within: list[Span]) -> tuple[list[Span], list[Span]]:
    """The bodies of ``name`` elements to cut, each from its start tag to the first ``</``.

    The body is cut only when that ``</`` is the element's end tag written
    ``</name>`` (the tokenizer ends a raw-text element at the first such tag)
    and when the body holds no ``<!--`` and no ``-->`` (nor, in a style, a
    ``<script``). Those move a script's tokenizer between its escaped states,
    which decide whether an end tag ends it, and they end a comment: a body
    without them parses alike cut or whole, wherever the search met its start
    tag, a style's in a script's text included. An element kept whole is
    skipped to where the tokenizer ends it (:func:`_end_tag`), so that no
    later search starts inside it, nor inside the bodies ``within`` (the
    scripts', when styles are looked for). Returns the cuts, and the bodies of
    all the elements found.
    """
    found: list[Span] = []
    spans: list[Span] = []
    opener, closer = "<" + name, "</" + name + ">"
    size = len(page)
    style = name == "style"
    start = page.find(opener)
    i = 0
    while start >= 0:
        while i < len(within) and within[i][1] <= start:
            i += 1
        if i < len(within) and within[i][0] <= start:
            start = page.find(opener, within[i][1])
            continue
        name_end = start + len(opener)
        if name_end >= size or page[name_end] not in _NAME_ENDS:
            start = page.find(opener, name_end)
            continue
        tag_end = page.find(">", name_end)
        if tag_end < 0:
            break
        # The first "</" after the start tag (or a "<!--" before it), found by "<"
        # alone: a search for one character runs fastest, and "<" is rare in a body.
        end = page.find("<", tag_end)
        while end >= 0 and page[end + 1 : end + 2] != "/":
            if page.startswith("<!--", end) or (style and _named(page, end + 1, "script")):
                break
            end = page.find("<", end + 1)
        if end < 0:
            break
        if not page.startswith(closer, end):
            end = _end_tag(page, name, tag_end + 1)
            if end < 0:
                spans.append((tag_end + 1, size))
                break
        elif (
            end - tag_end > _MIN_CUT
            and not page.count('"', start, tag_end) % 2
            and not page.count("'", start, tag_end) % 2
            and "ld+json" not in page[start:tag_end].lower()
            and not _ends_comment(page, tag_end + 1, end)
        ):
            found.append((tag_end + 1, end))
        spans.append((tag_end + 1, end))
        start = page.find(opener, end)
    return found, spans


def _end_tag(page: str, name: str, pos: int) -> int:
    """Where the tokenizer ends the raw-text element ``name`` whose body starts at ``pos``.

    Its first ``</name`` (any case, then a space, ``/`` or ``>``); in a script,
    the first one outside a ``<!--`` … ``<script`` … ``-->`` stretch (the HTML
    standard's escaped states). -1 when the element runs to the end of the page.
    """
    n = len(name)
    state = 0  # 0 script data, 1 escaped, 2 double escaped
    while True:
        lt = page.find("<", pos)
        if state:
            dashes = page.find("-->", pos, lt if lt >= 0 else len(page))
            if dashes >= 0:
                state, pos = 0, dashes + 3
                continue
        if lt < 0:
            return -1
        if page[lt + 1 : lt + 2] == "/":
            if _named(page, lt + 2, name):
                if state != 2:
                    return lt
                state = 1
            pos = lt + 2 + n
        elif name == "script" and state == 0 and page.startswith("<!--", lt):
            state, pos = 1, lt + 2  # "<!-->" opens and closes at once
        elif state == 1 and _named(page, lt + 1, name):
            state, pos = 2, lt + 1 + n
        else:
            pos = lt + 1


def _named(page: str, at: int, name: str) -> bool:
    """Whether ``page`` names ``name`` at ``at`` as a tag name: any case, then an end."""
    n = len(name)
    return page[at : at + n].lower() == name and page[at + n : at + n + 1] in _NAME_ENDS_NONEMPTY


def _ends_comment(page: str, start: int, end: int) -> bool:
    """Whether ``page[start:end]`` holds a ``-->`` (or ``--!>``, which ends a comment too),
    found by its ``>`` (see :func:`_bodies`)."""
    gt = page.find(">", start, end)
    while gt >= 0:
        if page[gt - 2 : gt] == "--" or page[gt - 3 : gt] == "--!":
            return True
        gt = page.find(">", gt + 1, end)
    return False
