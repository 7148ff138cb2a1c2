"""Article extraction from an HTML or plain-text string.

Pure: no network, no files, no event loop. The fetcher (:mod:`.fetch`) and
the ``html``/``text`` capture paths all end here, so one page gives one
:class:`~readdod.models.Extraction` however it arrived.

The pipeline, each stage its own function so that a better extractor can
replace stages one at a time:

1. parse with selectolax/lexbor and read metadata (before anything is removed:
   the headline and byline usually live in ``<header>``);
2. strip boilerplate elements (scripts, navigation, chrome, hidden things);
3. choose the main container (semantic markup first, then a readability-style
   score), then clean junk (comments, share bars, link lists) inside it;
4. render the container into blocks, each with a plain-text and a markdown
   form; ``text`` and ``markdown`` are those blocks joined.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from readdod.errors import ErrorCode, ExtractionError
from readdod.models import Extraction

__all__ = ["EXTRACTOR", "extract", "extract_text"]

EXTRACTOR: Final = "readdod-basic/1"

# selectolax ships no type stubs; name the node type for readers.
Node = Any

EMPTY_HTML_MESSAGE: Final = (
    "The page has no readable article text (it may be built by JavaScript, "
    "behind a login or paywall, or not an article at all). "
    "Capture it again with --text and paste the article text yourself."
)
EMPTY_TEXT_MESSAGE: Final = "The provided text is empty; there is nothing to read."

# --- tag sets ----------------------------------------------------------------

_BOILERPLATE_TAGS: Final = (
    "script, style, noscript, template, svg, iframe, button, object, embed, dialog, "
    "nav, header, footer, aside, form"
)
# Page chrome that is sometimes (ASP.NET forms, modal snapshots) wrapped
# around the whole page; those are only dropped when they do not hold the article.
_CHROME_SELECTOR: Final = (
    "[hidden], [aria-hidden=true i], [role=navigation i], [role=banner i], "
    "[role=contentinfo i], [role=complementary i], [role=dialog i], "
    '[style*="display:none" i], [style*="display: none" i]'
)
_GUARDED_TAGS: Final = frozenset({"nav", "header", "footer", "aside", "form"})
_ARTICLE_SELECTOR: Final = "main, [role=main i], [itemprop=articleBody i]"

_BLOCK_TAGS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center",
        "col", "colgroup", "dd", "details", "dialog", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
        "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li",
        "main", "menu", "nav", "ol", "p", "pre", "search", "section", "summary",
        "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
# Elements that carry no readable text of their own (or whose text is a caption).
_SKIP_TAGS: Final = frozenset(
    {
        "area", "audio", "canvas", "embed", "figcaption", "head", "hr", "img",
        "input", "link", "map", "meta", "object", "option", "picture", "select",
        "source", "textarea", "title", "track", "video",
    }
)  # fmt: skip
_HEADINGS: Final = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_CODE_TAGS: Final = frozenset({"code", "kbd", "samp", "tt"})
_STRONG_TAGS: Final = frozenset({"strong", "b"})
_EM_TAGS: Final = frozenset({"em", "i"})

# --- class/id heuristics ---------------------------------------------------
# Token-bounded so that "header" or "shadow" never reads as "ad".
_NEGATIVE_RE: Final = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|banner|combx|comment\w*|com|contact|footer|footnote"
    r"|masthead|media|meta|nav\w*|newsletter|outbrain|promo\w*|related|scroll|share\w*"
    r"|shoutbox|sidebar|skyscraper|sponsor\w*|shopping|social|subscribe\w*|tags?|tool\w*"
    r"|widget\w*)(?=$|[\s_-])",
    re.IGNORECASE,
)
_POSITIVE_RE: Final = re.compile(
    r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story", re.IGNORECASE
)
_UNLIKELY_RE: Final = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|agegate|banner|breadcrumbs?|colophon|combx|comment\w*"
    r"|community|cookie\w*|disqus|footer|gdpr|header|masthead|menu|newsletter|pager"
    r"|pagination|popup|promo\w*|related"
    r"|remark|repl(?:y|ies)|rss|share\w*|sharing|shoutbox|sidebar|skyscraper|social"
    r"|sponsor\w*|subscribe\w*|supplemental)(?=$|[\s_-])",
    re.IGNORECASE,
)
_MAYBE_RE: Final = re.compile(r"and|article|body|column|content|main|shadow", re.IGNORECASE)
_JUNK_RE: Final = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|breadcrumbs?|comment\w*|cookie\w*|disqus|modal"
    r"|newsletter|outbrain|paywall|popup|promo\w*|recommend\w*|related|repl(?:y|ies)"
    r"|share\w*|sharing|signup|social|sponsor\w*|subscribe\w*|taboola)(?=$|[\s_-])",
    re.IGNORECASE,
)
_JUNK_TAGS: Final = "div, section, ul, ol, table, dl, details, p"

# --- thresholds --------------------------------------------------------------
_MIN_SEMANTIC_CHARS: Final = 200  # a shorter <article> is probably a teaser card
_MIN_PARAGRAPH_CHARS: Final = 25
_LD_BODY_MIN_CHARS: Final = 500
_LD_BODY_PREFERRED_RATIO: Final = 0.7
_MAX_BYLINE_CHARS: Final = 100
_SHORT_TITLE_CHARS: Final = 120
_EXCERPT_CHARS: Final = 200

_WS_RE: Final = re.compile(r"\s+")
_INVISIBLE: Final = dict.fromkeys(map(ord, "\u200b\u2060\ufeff\u00ad"))
_CJK_RE: Final = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]"
)
_TITLE_SEP_RE: Final = re.compile(r"\s+[|\-–—·•»~/]\s+")
_BY_RE: Final = re.compile(r"^(?:by|von|por|par)\s+", re.IGNORECASE)
_CODE_LANG_RE: Final = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.IGNORECASE)
_LD_ARTICLE_TYPES: Final = frozenset(
    {
        "Article", "NewsArticle", "BlogPosting", "TechArticle", "ScholarlyArticle",
        "Report", "AnalysisNewsArticle", "OpinionNewsArticle", "ReportageNewsArticle",
        "ReviewNewsArticle", "BackgroundNewsArticle", "LiveBlogPosting",
        "SocialMediaPosting", "DiscussionForumPosting", "MedicalScholarlyArticle",
        "APIReference", "HowTo", "Recipe", "Review",
    }
)  # fmt: skip


# --- public API --------------------------------------------------------------


def extract(
    html: str,
    url: str | None = None,
    *,
    source: Literal["fetched", "provided_html"] = "provided_html",
    http_status: int | None = None,
    content_type: str | None = None,
    final_url: str | None = None,
    fetched_at: str | None = None,
) -> Extraction:
    """Find the article in ``html`` and describe it.

    ``url``/``final_url`` only resolve relative links and fill provenance;
    nothing is fetched. Raises :class:`ExtractionError` with
    ``EXTRACTION_EMPTY`` when no article text is found, because a summary of
    navigation links would be worse than an honest failure.
    """
    try:
        tree = LexborHTMLParser(html)
    except Exception as exc:  # lexbor refuses only pathological input
        raise ExtractionError(
            "The page could not be parsed as HTML.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc

    base_url = _base_url(tree, final_url or url)
    ld_objects = _json_ld_objects(tree)
    ld_article = _ld_article(ld_objects)
    meta = _read_meta(tree, ld_article, ld_objects, base_url)

    try:
        blocks = _article_blocks(tree, base_url, meta)
        ld_blocks = _ld_body_blocks(ld_article, base_url, meta)
    except RecursionError as exc:
        raise ExtractionError(
            "The page is nested too deeply to be read.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
        ) from exc
    if ld_blocks and _text_len(blocks) < _LD_BODY_PREFERRED_RATIO * _text_len(ld_blocks):
        # The DOM lost most of the article (JS rendering, teaser markup):
        # the publisher's own articleBody is the better source.
        blocks = ld_blocks

    text = "\n\n".join(block.text for block in blocks)
    if not text.strip():
        raise ExtractionError(EMPTY_HTML_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    return Extraction(
        url=url,
        final_url=final_url,
        http_status=http_status,
        content_type=content_type,
        title=meta.title,
        byline=meta.byline,
        site_name=meta.site_name,
        published_at=meta.published_at,
        lang=meta.lang,
        canonical_url=meta.canonical_url,
        text=text,
        markdown=_join_markdown(blocks),
        word_count=word_count(text),
        excerpt=_excerpt(meta.description or text),
        source=source,
        extractor=EXTRACTOR,
        fetched_at=fetched_at,
    )


def extract_text(text: str, *, title: str | None = None, url: str | None = None) -> Extraction:
    """Wrap text the user provided (or a text/plain page) as an extraction.

    The text is trusted as the article: only line endings and runs of blank
    lines are normalised, so the user's paragraphs survive.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").translate(_INVISIBLE).split("\n")
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in lines)).strip()
    if not body:
        raise ExtractionError(EMPTY_TEXT_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    clean_title = _ws(title) if title is not None else ""
    if not clean_title:
        first_line = _ws(body.split("\n", 1)[0])
        clean_title = first_line if len(first_line) <= _SHORT_TITLE_CHARS else ""
    return Extraction(
        url=url,
        title=clean_title or None,
        text=body,
        markdown=body,
        word_count=word_count(body),
        excerpt=_excerpt(body),
        source="provided_text",
        extractor=EXTRACTOR,
    )


def word_count(text: str) -> int:
    """Words for reading-time estimates.

    Whitespace-separated tokens with a letter or digit; CJK scripts have no
    spaces, so each two of their characters count as one word.
    """
    cjk = len(_CJK_RE.findall(text))
    rest = _CJK_RE.sub(" ", text)
    words = sum(1 for token in rest.split() if any(ch.isalnum() for ch in token))
    return words + math.ceil(cjk / 2)


# --- metadata ----------------------------------------------------------------


@dataclass(slots=True)
class _Meta:
    title: str | None = None
    headlines: frozenset[str] = frozenset()
    byline: str | None = None
    published_at: str | None = None
    lang: str | None = None
    site_name: str | None = None
    canonical_url: str | None = None
    description: str | None = None


def _read_meta(
    tree: Node,
    ld_article: dict[str, Any] | None,
    ld_objects: list[dict[str, Any]],
    base: str | None,
) -> _Meta:
    """Collect page metadata while the whole document is still intact."""
    ld = ld_article or {}
    site_name = _meta_content(tree, "og:site_name", "application-name") or _ld_name(
        ld.get("publisher")
    )
    h1_node = tree.css_first("article h1") or tree.css_first("main h1") or tree.css_first("h1")
    h1 = _ws(h1_node.text()) if h1_node is not None else ""
    og_title = _meta_content(tree, "og:title", "twitter:title") or _ld_str(ld.get("headline"))
    title_node = tree.css_first("title")
    doc_title = _ws(title_node.text()) if title_node is not None else ""

    if og_title:
        title = _strip_title_suffix(og_title, site_name, guess=False)
    elif h1:
        title = h1
    elif doc_title:
        title = _strip_title_suffix(doc_title, site_name, guess=True)
    else:
        title = ""
    headlines = frozenset(_fold(t) for t in (title, og_title or "", h1) if t)

    canonical = tree.css_first("link[rel~=canonical i][href]")
    canonical_url = _resolve(base, canonical.attributes.get("href")) if canonical else None

    return _Meta(
        title=title or None,
        headlines=headlines,
        byline=_byline(tree, ld),
        published_at=_published_at(tree, ld, ld_objects),
        lang=_lang(tree),
        site_name=site_name,
        canonical_url=canonical_url,
        description=_meta_content(tree, "description", "og:description", "twitter:description"),
    )


def _meta_content(tree: Node, *names: str) -> str | None:
    """First non-blank ``<meta name|property|itemprop=...>`` content among ``names``."""
    for name in names:
        for attr in ("property", "name", "itemprop"):
            node = tree.css_first(f'meta[{attr}="{name}" i][content]')
            if node is not None:
                value = _ws(node.attributes.get("content") or "")
                if value:
                    return value
    return None


def _byline(tree: Node, ld: dict[str, Any]) -> str | None:
    """Author names, from the most to the least deliberate markup."""
    candidates: list[str | None] = [
        _meta_content(tree, "author", "article:author", "parsely-author", "sailthru.author"),
        _ld_name(ld.get("author")),
    ]
    for selector in ("[rel~=author i]", "[itemprop=author i]", ".byline", ".author"):
        node = tree.css_first(selector)
        if node is not None:
            name_node = (
                node.css_first("[itemprop=name i]") if selector.startswith("[item") else None
            )
            candidates.append(_ws((name_node or node).text()))
    for candidate in candidates:
        if not candidate or candidate.startswith(("http://", "https://")):
            continue
        cleaned = _BY_RE.sub("", candidate).strip(" ,|·–—-")
        if cleaned and len(cleaned) <= _MAX_BYLINE_CHARS:
            return cleaned
    return None


def _published_at(tree: Node, ld: dict[str, Any], ld_objects: list[dict[str, Any]]) -> str | None:
    """Publication time as the page states it (usually ISO 8601)."""
    value = _meta_content(
        tree, "article:published_time", "datePublished", "date", "pubdate", "publish-date",
        "dc.date", "dcterms.created",
    )  # fmt: skip
    if value:
        return value
    for obj in (ld, *ld_objects):
        found = _ld_str(obj.get("datePublished")) or _ld_str(obj.get("dateCreated"))
        if found:
            return found
    for selector in ("[itemprop=datePublished i][datetime]", "article time[datetime]",
                     "time[datetime]"):  # fmt: skip
        node = tree.css_first(selector)
        if node is not None:
            stamp = _ws(node.attributes.get("datetime") or "")
            if stamp:
                return stamp
    return None


def _lang(tree: Node) -> str | None:
    root = tree.root
    lang = _ws(root.attributes.get("lang") or root.attributes.get("xml:lang") or "") if root else ""
    if not lang:
        node = tree.css_first('meta[http-equiv="content-language" i][content]')
        lang = _ws(node.attributes.get("content") or "").split(",")[0] if node else ""
    if not lang:
        lang = (_meta_content(tree, "og:locale") or "").replace("_", "-")
    return lang or None


def _strip_title_suffix(title: str, site_name: str | None, *, guess: bool) -> str:
    """Drop a " | Site" style suffix (or "Site | " prefix) from a page title.

    A known site name is removed wherever it sits. With ``guess`` (titles from
    ``<title>``, which nearly always carry the site) a short last segment is
    taken for the site name even when the name is unknown.
    """
    matches = list(_TITLE_SEP_RE.finditer(title))
    if not matches:
        return title
    first, last = matches[0], matches[-1]
    head, tail = title[: last.start()].strip(), title[last.end() :].strip()
    if site_name:
        site = _fold(site_name)
        if _fold(tail) == site:
            return head
        if _fold(title[: first.start()]) == site:
            return title[first.end() :].strip()
    if not guess:
        return title
    if head and len(tail.split()) <= 5 and (len(head.split()) >= 2 or len(head) > len(tail)):
        return head
    return title


# --- JSON-LD -----------------------------------------------------------------


def _json_ld_objects(tree: Node) -> list[dict[str, Any]]:
    """Every JSON object in the page's ld+json scripts, ``@graph`` flattened."""
    found: list[dict[str, Any]] = []
    for script in tree.css('script[type="application/ld+json" i]'):
        raw = script.text() or ""
        try:
            data = json.loads(raw, strict=False)
        except ValueError:
            continue
        found.extend(_flatten_ld(data))
    return found


def _flatten_ld(data: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 4:
        return
    if isinstance(data, list):
        for entry in data:
            yield from _flatten_ld(entry, depth + 1)
    elif isinstance(data, dict):
        yield data
        for key in ("@graph", "mainEntity", "mainEntityOfPage"):
            if isinstance(data.get(key), list | dict):
                yield from _flatten_ld(data[key], depth + 1)


def _ld_types(obj: dict[str, Any]) -> set[str]:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)}


def _ld_article(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The object describing the article itself, if the page has one."""
    for obj in objects:
        if _ld_types(obj) & _LD_ARTICLE_TYPES:
            return obj
    for obj in objects:
        if isinstance(obj.get("articleBody"), str):
            return obj
    return None


def _ld_str(value: Any) -> str | None:
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, str) and value.strip():
        return _ws(value)
    return None


def _ld_name(value: Any) -> str | None:
    """A person or organisation name; several authors are joined with commas."""
    items = value if isinstance(value, list) else [value]
    names: list[str] = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name.strip() and not name.startswith(("http:", "https:")):
            names.append(_ws(name))
    return ", ".join(dict.fromkeys(names)) or None


def _ld_body_blocks(ld: dict[str, Any] | None, base: str | None, meta: _Meta) -> list[_Block]:
    """Blocks from JSON-LD ``articleBody`` when it is long enough to be the article."""
    body = ld.get("articleBody") if ld else None
    if not isinstance(body, str) or len(body.strip()) < _LD_BODY_MIN_CHARS:
        return []
    if re.search(r"<(?:p|br|div|h[2-6]|li)\b", body, re.IGNORECASE):
        fragment = LexborHTMLParser(body).body
        return _Renderer(base, meta.headlines).render(fragment) if fragment is not None else []
    paragraphs = (_ws(part) for part in re.split(r"\n\s*\n|\n", body))
    return [_Block(p, p) for p in paragraphs if p]


# --- boilerplate and container choice ----------------------------------------


def _article_blocks(tree: Node, base: str | None, meta: _Meta) -> list[_Block]:
    """Strip the chrome, pick the article container and render it."""
    body = tree.body
    if body is None:
        return []
    _strip_boilerplate(body)
    _remove_unlikely(body)
    container = _choose_container(body)
    _clean_container(container)
    return _Renderer(base, meta.headlines).render(container)


def _strip_boilerplate(body: Node) -> None:
    """Remove elements that are never article text.

    Structural chrome (nav, header, form, hidden or ARIA-landmark elements)
    is kept when it wraps the article, which some sites do to the whole page.
    """
    total = _node_text_len(body)
    doomed: list[Node] = []
    for node in body.css(_BOILERPLATE_TAGS):
        if node.tag in _GUARDED_TAGS and _wraps_article(node, total):
            continue
        doomed.append(node)
    _decompose_all(doomed)
    doomed = [node for node in body.css(_CHROME_SELECTOR) if not _wraps_article(node, total)]
    _decompose_all(doomed)


def _remove_unlikely(body: Node) -> None:
    """Drop blocks whose class/id names them comments, share bars, menus...

    Readability's "unlikely candidates" rule, guarded the same way: a name
    that also says content/article/main keeps the element.
    """
    total = _node_text_len(body)
    doomed = []
    for node in body.css("div, section, ul, ol, table, dl, details, center"):
        names = _class_and_id(node)
        if not names or not _UNLIKELY_RE.search(names) or _MAYBE_RE.search(names):
            continue
        if (node.attributes.get("role") or "").lower() == "main" or _wraps_article(node, total):
            continue
        doomed.append(node)
    _decompose_all(doomed)


def _wraps_article(node: Node, total_chars: int) -> bool:
    """True if removing ``node`` would likely remove the article itself.

    Either it holds the main-content markup, or most of the page's text in
    paragraphs that are not mostly links (a page that is only a menu keeps
    nothing, and so fails as empty).
    """
    if node.css_first(_ARTICLE_SELECTOR) is not None:
        return True
    return (
        total_chars > 0
        and _node_text_len(node) > total_chars / 2
        and node.css_first("p") is not None
        and _link_density(node) < 0.5
    )


def _choose_container(body: Node) -> Node:
    """The element that holds the article: semantic markup, else the best score."""
    semantic: Node | None = None
    for selector in ("[itemprop=articleBody i]", "article", "main, [role=main i]"):
        candidates = body.css(selector)
        if candidates:
            best = max(candidates, key=_node_text_len)
            if _node_text_len(best) >= _MIN_SEMANTIC_CHARS:
                semantic = best
                break
    if semantic is not None and _node_text_len(semantic) >= 2 * _MIN_SEMANTIC_CHARS:
        return semantic
    scored = _score_candidates(body)
    if semantic is None:
        return scored if scored is not None else body
    if scored is not None and _node_text_len(scored) > 2 * _node_text_len(semantic):
        return scored
    return semantic


def _score_candidates(body: Node) -> Node | None:
    """Readability-style scoring.

    Each paragraph credits its parent fully and its grandparent half, by its
    length and commas; each candidate starts from its tag and class/id words
    and is finally scaled down by its link density, so link farms lose.
    """
    scores: dict[int, float] = {}
    nodes: dict[int, Node] = {}
    for text, ancestor in _paragraphs(body):
        points = 1 + text.count(",") + text.count("，") + text.count("、") + min(len(text) / 100, 3)
        for divisor in (1, 2):
            if ancestor is None or not ancestor.is_element_node or ancestor.tag == "html":
                break
            key = ancestor.mem_id
            if key not in scores:
                scores[key] = _initial_score(ancestor)
                nodes[key] = ancestor
            scores[key] += points / divisor
            ancestor = ancestor.parent
    best: Node | None = None
    best_score = 0.0
    for key, score in scores.items():
        final = score * (1 - _link_density(nodes[key]))
        if final > best_score:
            best, best_score = nodes[key], final
    return best


def _paragraphs(body: Node) -> Iterator[tuple[str, Node]]:
    """Paragraph-like texts, each with the element to credit first.

    Besides ``<p>``-like elements, text written straight into a ``<div>``
    between block children counts as a paragraph of that div (old CMSes
    do that), as readability does by wrapping such runs in ``<p>``.
    """
    for node in body.css("p, pre, td, blockquote, div, section"):
        tag = node.tag
        if tag in ("div", "section") and _has_block_child(node):
            own = _ws(" ".join(_inline_text(child) for child in node.iter(include_text=True)))
            if len(own) >= _MIN_PARAGRAPH_CHARS:
                yield own, node
            continue
        if tag == "section":
            continue
        text = _ws(node.text())
        if len(text) >= _MIN_PARAGRAPH_CHARS:
            yield text, node.parent


def _inline_text(node: Node) -> str:
    """Text of a node that is inline content (text or non-block element), else ''."""
    if node.is_text_node:
        return str(node.text_content or "")
    if node.is_element_node and not _is_block(node.tag) and node.tag not in _SKIP_TAGS:
        return str(node.text() or "")
    return ""


def _initial_score(node: Node) -> float:
    tag = node.tag
    if tag == "div":
        score = 5.0
    elif tag in ("pre", "td", "blockquote"):
        score = 3.0
    elif tag in ("address", "ol", "ul", "dl", "dd", "dt", "li", "form"):
        score = -3.0
    elif tag in _HEADINGS or tag == "th":
        score = -5.0
    else:
        score = 0.0
    return score + _class_weight(node)


def _class_weight(node: Node) -> float:
    weight = 0.0
    for value in (node.attributes.get("class"), node.attributes.get("id")):
        if not value:
            continue
        if _NEGATIVE_RE.search(value):
            weight -= 25
        if _POSITIVE_RE.search(value):
            weight += 25
    return weight


def _clean_container(container: Node) -> None:
    """Remove junk that sits inside the article: share bars, comments, link lists."""
    total = _node_text_len(container)
    doomed = []
    for node in container.css(_JUNK_TAGS):
        if node.mem_id == container.mem_id:
            continue
        length = _node_text_len(node)
        if length > total / 2 or node.css_first("pre") is not None:
            continue
        names = _class_and_id(node)
        if (names and _JUNK_RE.search(names)) or (
            node.tag in ("div", "section", "ul", "ol", "table")
            and length < total / 4
            and _link_density(node) > 0.6
        ):
            doomed.append(node)
    _decompose_all(doomed)


def _decompose_all(nodes: Iterable[Node]) -> None:
    """Remove nodes, skipping those inside another doomed node (already freed)."""
    pending = list(nodes)
    ids = {node.mem_id for node in pending}
    for node in pending:
        ancestor = node.parent
        nested = False
        while ancestor is not None:
            if ancestor.mem_id in ids:
                nested = True
                break
            ancestor = ancestor.parent
        if not nested:
            node.decompose()


def _find_inside(node: Node, selector: str) -> Node | None:
    """First match strictly inside ``node`` (lexbor's css() also matches the node itself)."""
    for match in node.css(selector):
        if match.mem_id != node.mem_id:
            return match
    return None


def _has_block_child(node: Node) -> bool:
    return any(child.tag in _BLOCK_TAGS for child in node.iter())


def _class_and_id(node: Node) -> str:
    attrs = node.attributes
    return f"{attrs.get('class') or ''} {attrs.get('id') or ''}".strip()


def _node_text_len(node: Node) -> int:
    return len(_ws(node.text()))


def _link_density(node: Node) -> float:
    total = _node_text_len(node)
    if total == 0:
        return 0.0
    linked = sum(_node_text_len(link) for link in node.css("a"))
    return min(linked / total, 1.0)


# --- rendering ---------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    """One paragraph-level unit of the article.

    ``group`` ties blocks that markdown must join with a single newline
    (items of one list, rows of one table).
    """

    text: str
    md: str
    group: int | None = None


class _Renderer:
    """Walks a container and emits blocks with plain and markdown forms together.

    Inline content accumulates in two parallel buffers and becomes a block at
    the next block boundary, so text directly inside a ``<div>`` is not lost.
    """

    def __init__(self, base_url: str | None, headlines: frozenset[str]) -> None:
        self.blocks: list[_Block] = []
        self._plain: list[str] = []
        self._md: list[str] = []
        self._base = base_url
        self._headlines = headlines
        self._group: int | None = None
        self._groups = 0

    def render(self, node: Node) -> list[_Block]:
        self._children(node)
        self._flush()
        return self.blocks

    # dispatch

    def _children(self, node: Node) -> None:
        for child in node.iter(include_text=True):
            self._node(child)

    def _node(self, node: Node) -> None:
        if node.is_text_node:
            text = _collapse(node.text_content or "")
            self._push(text, text)
            return
        if not node.is_element_node:
            return
        tag: str = node.tag
        if tag in _SKIP_TAGS:
            return
        if tag == "br":
            self._push("\n", "\n")
        elif not _is_block(tag):
            parts = self._inline(node)
            if parts is None:  # an inline element wrapping blocks: look through it
                self._children(node)
            else:
                self._push(*parts)
        elif tag in _HEADINGS:
            self._heading(node, _HEADINGS[tag])
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
            self._flush()
            self._children(node)
            self._flush()

    # inline content

    def _push(self, plain: str, md: str) -> None:
        self._plain.append(plain)
        self._md.append(md)

    def _flush(self) -> None:
        plain = _clean_lines("".join(self._plain))
        md = _clean_lines("".join(self._md))
        self._plain.clear()
        self._md.clear()
        if plain:
            self.blocks.append(_Block(plain, md or plain, self._group))

    def _inline(self, node: Node) -> tuple[str, str] | None:
        """Plain and markdown forms of an inline subtree; None if it holds blocks."""
        plain: list[str] = []
        md: list[str] = []
        for child in node.iter(include_text=True):
            if child.is_text_node:
                text = _collapse(child.text_content or "")
                plain.append(text)
                md.append(text)
                continue
            if not child.is_element_node or child.tag in _SKIP_TAGS:
                continue
            if child.tag == "br":
                plain.append("\n")
                md.append("\n")
                continue
            if _is_block(child.tag):
                return None
            parts = self._inline(child)
            if parts is None:
                return None
            plain.append(parts[0])
            md.append(parts[1])
        text, markdown = "".join(plain), "".join(md)
        return text, self._decorate(node, text, markdown)

    def _decorate(self, node: Node, text: str, markdown: str) -> str:
        """Markdown for one inline element, keeping its outer whitespace outside."""
        inner = markdown.strip()
        if not inner:
            return markdown
        lead = markdown[: len(markdown) - len(markdown.lstrip())]
        trail = markdown[len(markdown.rstrip()) :]
        tag = node.tag
        if tag == "a":
            href = _link_target(self._base, node.attributes.get("href"))
            if href:
                inner = f"[{inner}]({href})"
        elif tag in _CODE_TAGS:
            code = _ws(text)
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
        text = _ws(node.text())
        if not text:
            return
        if level == 1 and (not self.blocks or _fold(text) in self._headlines):
            return  # the headline is metadata (title), not body text
        self.blocks.append(_Block(text, f"{'#' * level} {text}", self._group))

    def _pre(self, node: Node) -> None:
        self._flush()
        raw = (node.text() or "").replace("\r\n", "\n").translate(_INVISIBLE)
        code = textwrap.dedent("\n".join(line.rstrip() for line in raw.split("\n"))).strip("\n")
        if not code.strip():
            return
        fence = "````" if "```" in code else "```"
        md = f"{fence}{_code_language(node)}\n{code}\n{fence}"
        self.blocks.append(_Block(code, md, self._group))

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
        pad = " " * len(marker)
        lines = _join_markdown(inner).split("\n")
        md = "\n".join([marker + lines[0]] + [pad + line if line else "" for line in lines[1:]])
        text = "\n\n".join(block.text for block in inner)
        self.blocks.append(_Block(text, md, self._group))

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
        md = "\n".join(f"> {line}" if line else ">" for line in _join_markdown(inner).split("\n"))
        text = "\n\n".join(block.text for block in inner)
        self.blocks.append(_Block(text, md, self._group))

    def _table(self, node: Node) -> None:
        """Data tables become one block per row; layout tables are read through."""
        self._flush()
        if _find_inside(node, "table, p, div, ul, ol, pre, blockquote, h2, h3, h4") is not None:
            self._children(node)
            self._flush()
            return
        self._groups += 1
        group = self._group if self._group is not None else self._groups
        header_done = False
        for row in node.css("tr"):
            cells = []
            for cell in row.css("th, td"):
                parts = self._inline(cell)
                cells.append(_ws(parts[1] if parts is not None else cell.text()))
            if not any(cells):
                continue
            escaped = [cell.replace("|", "\\|") for cell in cells]
            md = "| " + " | ".join(escaped) + " |"
            if not header_done:
                md += "\n|" + "|".join(" --- " for _ in cells) + "|"
                header_done = True
            plain = " | ".join(_ws(cell.text()) for cell in row.css("th, td") if _ws(cell.text()))
            self.blocks.append(_Block(plain, md, group))


def _join_markdown(blocks: list[_Block]) -> str:
    """Blank lines between blocks, single newlines inside a list or table."""
    out: list[str] = []
    previous: _Block | None = None
    for block in blocks:
        if previous is not None:
            tight = block.group is not None and block.group == previous.group
            out.append("\n" if tight else "\n\n")
        out.append(block.md)
        previous = block
    return "".join(out)


def _is_block(tag: str) -> bool:
    # Custom elements (<x-paragraph>) are treated as blocks: joining them
    # inline would glue separate paragraphs together.
    return tag in _BLOCK_TAGS or "-" in tag


def _code_language(node: Node) -> str:
    for candidate in (node, node.css_first("code")):
        if candidate is None:
            continue
        attrs = candidate.attributes
        match = _CODE_LANG_RE.search(attrs.get("class") or "")
        if match:
            return str(match.group(1)).lower()
        if attrs.get("data-lang"):
            return _ws(attrs["data-lang"]).lower()
    return ""


def _int_attr(node: Node, name: str, default: int) -> int:
    try:
        return int(node.attributes.get(name) or default)
    except ValueError:
        return default


# --- small helpers -----------------------------------------------------------


def _base_url(tree: Node, page_url: str | None) -> str | None:
    """The URL relative links resolve against (``<base href>`` wins)."""
    base = tree.css_first("base[href]")
    href = base.attributes.get("href") if base is not None else None
    if href:
        return urljoin(page_url or "", href.strip()) or page_url
    return page_url


def _resolve(base: str | None, href: str | None) -> str | None:
    if not href or not href.strip():
        return None
    return urljoin(base, href.strip()) if base else href.strip()


def _link_target(base: str | None, href: str | None) -> str | None:
    """Where a link points, or None for in-page and script links."""
    if not href or href.strip().startswith("#"):
        return None
    if href.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
        return None
    target = _resolve(base, href)
    return target.replace(" ", "%20").replace(")", "%29") if target else None


def _collapse(text: str) -> str:
    """Inline whitespace runs become one space (newlines included)."""
    return _WS_RE.sub(" ", text.translate(_INVISIBLE))


def _ws(text: str | None) -> str:
    return _collapse(text or "").strip()


def _clean_lines(text: str) -> str:
    """Normalise a block: trim each line, drop empty ones (only ``<br>`` makes lines)."""
    lines = (_WS_RE.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _fold(text: str) -> str:
    return _ws(text).casefold()


def _text_len(blocks: list[_Block]) -> int:
    return sum(len(block.text) for block in blocks)


def _excerpt(text: str) -> str:
    """About the first 200 characters, cut at a word boundary."""
    flat = _ws(text)
    if len(flat) <= _EXCERPT_CHARS:
        return flat
    cut = flat[:_EXCERPT_CHARS]
    space = cut.rfind(" ")
    if space > _EXCERPT_CHARS * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
