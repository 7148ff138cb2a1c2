"""The extractor on hand-written pages shaped like the real web.

Each page mixes an article with the chrome real sites put around and inside
it (menus, share bars, captions, related links, comment threads), in several
languages, and checks that only the article comes out, with its metadata.
"""

from __future__ import annotations

import json

import pytest

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction import extract
from readdod.extraction.boilerplate import Boilerplate, _link_chars
from readdod.extraction.dom import nonspace_len, parse, select

# Paragraphs long enough to be scored as prose, in a few languages.
EN = [
    "The harbour authority approved the new ferry schedule on Tuesday, after months of "
    "complaints from commuters who waited, sometimes for an hour, in the rain.",
    "Under the plan, boats will leave every twenty minutes at peak times, and the last "
    "crossing will move from ten to half past eleven at night.",
    "Operators said the change needs two more crews, which they expect to hire by spring, "
    "although the union has asked for a longer training period.",
    "Residents on the island welcomed the decision, but several said that fares, not "
    "timetables, were the real problem for families.",
]
JA = [
    "東京都は火曜日、新しいフェリーの時刻表を承認した。通勤客からは、雨の中で一時間待たされることもあるという苦情が、数か月にわたって寄せられていた。",
    "計画では、ピーク時には二十分ごとに船が出航し、最終便は午後十時から午後十一時半に変更される。",
    "運航会社は、この変更には乗組員があと二組必要で、春までに採用する見込みだと述べた。",
]
RU = [
    "Портовое управление во вторник утвердило новое расписание паромов, после нескольких "
    "месяцев жалоб от пассажиров, которые иногда ждали под дождём целый час.",
    "По плану, в часы пик суда будут отправляться каждые двадцать минут, а последний рейс "
    "перенесут с десяти на половину двенадцатого вечера.",
    "Операторы заявили, что для этого нужны ещё две команды, которых они рассчитывают "
    "нанять к весне.",
]
PT = [
    "A autoridade portuária aprovou na terça-feira o novo horário das balsas, depois de "
    "meses de reclamações de passageiros que esperavam, às vezes, uma hora na chuva.",
    "Pelo plano, os barcos sairão a cada vinte minutos nos horários de pico, e a última "
    "travessia passará das dez para as onze e meia da noite.",
    "Os operadores disseram que a mudança exige mais duas tripulações, que esperam "
    "contratar até a primavera.",
]


def page(body: str, head: str = "", lang: str = "en") -> str:
    return f"<!DOCTYPE html><html lang='{lang}'><head>{head}</head><body>{body}</body></html>"


def paras(texts: list[str]) -> str:
    return "".join(f"<p>{t}</p>" for t in texts)


def chrome(words: str = "Home News Sport Weather Culture") -> str:
    links = "".join(f"<li><a href='/{w.lower()}'>{w}</a></li>" for w in words.split())
    return f"<header><div class='logo'>The Daily Tide</div><nav><ul>{links}</ul></nav></header>"


def related(n: int = 6) -> str:
    items = "".join(
        f"<li><a href='/story/{i}'>Another story worth reading about the coast, part {i}</a></li>"
        for i in range(n)
    )
    return f"<div class='related-stories'><h3>Read next</h3><ul>{items}</ul></div>"


FOOTER = "<footer><p>© 2024 The Daily Tide. All rights reserved. Contact us.</p></footer>"


# --- boilerplate ------------------------------------------------------------------


def test_only_the_article_survives_a_full_news_page() -> None:
    html = page(
        chrome()
        + "<div class='layout'><main><article>"
        + "<h1>Ferries every twenty minutes</h1>"
        + "<div class='byline'>By <a rel='author' href='/a/jo'>Jo Marsh</a></div>"
        + "<div class='share-bar'><a href='#'>Share on Mastodon</a><a href='#'>Email</a></div>"
        + "<figure><img src='f.jpg'><figcaption>A ferry at dawn. Photo: Ana Ruiz</figcaption>"
        + "</figure>"
        + paras(EN[:2])
        + "<div class='ad-slot'>Advertisement: Buy a boat today</div>"
        + paras(EN[2:])
        + "<div class='newsletter-signup'><p>Get the morning briefing in your inbox, free, "
        + "every weekday, from our newsroom.</p></div>"
        + "</article>"
        + related()
        + "</main><aside class='sidebar'><h3>Most read</h3><ol><li><a href='/x'>"
        + "Storm closes the bridge</a></li></ol></aside></div>"
        + FOOTER
    )
    result = extract(html, "https://tide.example/news/ferries")
    assert result.text == "\n\n".join(EN)
    assert result.title == "Ferries every twenty minutes"
    assert result.byline == "Jo Marsh"


def test_comment_thread_longer_than_the_post_is_not_the_article() -> None:
    comment = "<li class='comment'><article class='comment-body'><p>{}</p></article></li>"
    thread = "".join(
        comment.format(
            f"Comment {i}: I disagree with the council, because the ferries were always late, "
            "and twenty minutes will not change that, not for the evening crossings anyway."
        )
        for i in range(12)
    )
    html = page(
        chrome()
        + f"<article class='post'><h1>Open thread</h1>{paras(EN[:2])}</article>"
        + f"<div id='comments' class='comments-area'><ol class='comment-list'>{thread}</ol></div>"
    )
    text = extract(html).text
    assert text == "\n\n".join(EN[:2])


def test_a_page_wide_wrapper_named_as_chrome_is_read_through() -> None:
    """A layout wrapper whose class says "sidebar" holds the whole article: it is the
    page, not a sidebar, as long as the text around it is short (scripts count)."""
    texts = [f"{text} Part {n}." for n in range(4) for text in EN]  # over 2,000 characters
    wrapped = f"<div class='sidebar-layout'><div class='post'>{paras(texts)}</div></div>"
    script = "<script>var tracking = {site: 'tide', section: 'news'};</script>"
    assert extract(page(chrome() + wrapped + script + FOOTER)).text == "\n\n".join(texts)
    tree = parse(page(chrome() + wrapped + script + FOOTER))
    assert not Boilerplate(tree.body, set()).is_bad(tree.css_first(".sidebar-layout"))
    # The same wrapper beside a longer text elsewhere is a sidebar after all.
    story = [f"{text} Chapter {n}." for n in range(9) for text in EN]
    elsewhere = f"<div class='story'>{paras(story)}</div>"
    tree = parse(page(chrome() + elsewhere + wrapped + FOOTER))
    assert Boilerplate(tree.body, set()).is_bad(tree.css_first(".sidebar-layout"))
    assert extract(page(chrome() + elsewhere + wrapped + FOOTER)).text == "\n\n".join(story)
    # Past some hundreds of nodes read, the body's text is read whole: the same answers.
    crumbs = "<span></span>" * 600
    tree = parse(page(chrome() + wrapped + crumbs + FOOTER))
    assert not Boilerplate(tree.body, set()).is_bad(tree.css_first(".sidebar-layout"))
    tree = parse(page(chrome() + wrapped + crumbs + f"<div>{' '.join(story)}</div>" + FOOTER))
    assert Boilerplate(tree.body, set()).is_bad(tree.css_first(".sidebar-layout"))


def test_article_split_into_sibling_blocks_is_read_whole() -> None:
    # Publishers split long bodies into several blocks around inline ads.
    html = page(
        chrome()
        + "<div id='story'>"
        + f"<div class='text-block'>{paras(EN[:2])}</div>"
        + "<div class='inline-ad'><a href='/ad'>Sponsored</a></div>"
        + f"<div class='text-block'>{paras(EN[2:])}</div>"
        + "</div>"
        + related(10)
    )
    assert extract(html).text == "\n\n".join(EN)


def test_link_heavy_lists_inside_the_article_are_pruned() -> None:
    links = "".join(f"<li><a href='/t/{i}'>Coastal story number {i}</a></li>" for i in range(8))
    html = page(f"<article>{paras(EN[:3])}<ul>{links}</ul>{paras(EN[3:])}</article>")
    text = extract(html).text
    assert "Coastal story" not in text
    assert text == "\n\n".join(EN)


def test_link_text_is_credited_to_every_ancestor_inside_the_container() -> None:
    """Each element's link characters, summed bottom-up, equal what a query of its
    own links finds (nested links, links straight in the container, deep menus)."""
    menu = "".join(
        f"<li><span><a href='/m/{i}'>Menu entry {i}</a> <b>new</b></span></li>" for i in range(30)
    )
    tree = parse(
        "<html><body><main id='c'><p>Intro with <a href='/x'>one link</a> and text.</p>"
        f"<div><nav><ul>{menu}</ul></nav><a href='/y'>straight in <a href='/z'>nested</a></a>"
        "<svg><a href='/s'><text>drawn link</text></a></svg></div><p>No links here.</p>"
        "</main></body></html>"
    )
    container = tree.css_first("main")
    nodes = list(container.traverse())
    linked = _link_chars(nodes, [node.tag for node in nodes], container.mem_id)
    for node in nodes:
        expected = sum(
            nonspace_len(link.text()) for link in select(node, "a") if link.mem_id != node.mem_id
        )
        assert linked.get(node.mem_id, 0) == expected, node.tag
    assert linked[container.mem_id] > 30 * len("Menuentry0")


def test_repeated_blocks_are_kept_once() -> None:
    caption = "<div class='photo-meta'><p>Image 1 of 3: the harbour office at noon.</p></div>"
    html = page(f"<article>{caption}{paras(EN)}{caption}</article>")
    text = extract(html).text
    assert text.count("the harbour office at noon") <= 1
    assert text.endswith(EN[-1])


def test_hidden_elements_and_never_text_elements_are_dropped() -> None:
    html = page(
        "<article>"
        + paras(EN[:2])
        + "<div hidden><p>Hidden paragraph that a screen never shows to any reader at all.</p>"
        + "</div><div style='display: none'><p>Also invisible, also not part of the article "
        + "that people read.</p></div><script>window.track('x')</script>"
        + "<button>Load more</button><noscript>Enable JavaScript to comment</noscript>"
        + paras(EN[2:])
        + "</article>"
    )
    assert extract(html).text == "\n\n".join(EN)


def test_dates_tags_and_microdata_about_the_article_are_dropped() -> None:
    html = page(
        "<article><span itemprop='datePublished'>Tuesday, 5 March 2024, 09:30</span>"
        + paras(EN[:2])
        + f"<p>{EN[2]} The vote on <b><a href='/v'><time datetime='2024-03-04'>Monday</time>"
        + "</a></b> was close.</p>"
        + "<div class='post-tags'>Filed under <a rel='tag' href='/t/ferries'>ferries</a>, "
        + "<a rel='tag' href='/t/harbour'>harbour</a></div>"
        + "<p>Filed under: <a rel='tag' href='/t/island'>island life</a></p>"
        + paras(EN[3:])
        + "</article>"
    )
    text = extract(html).text
    assert "Tuesday, 5 March" not in text
    assert "The vote on Monday was close." in text
    assert "ferries," not in text and "island life" not in text
    assert text.startswith(EN[0]) and text.endswith(EN[3])


def test_camel_case_class_names_are_read_as_words() -> None:
    html = page(
        "<article><div class='storyImage'><img src='a.jpg'>"
        "<span class='newsCaption'>Commuters queue on the north pier at dawn</span></div>"
        + paras(EN[:2])
        + "<div class='shareBar'><a href='/s'>Post it</a> <span>or send it to a friend</span></div>"
        + paras(EN[2:])
        + "<div class='relatedStories'><p>More about ferries and the coast, every week, "
        + "in our long-running series on island transport.</p></div></article>"
    )
    assert extract(html).text == "\n\n".join(EN)


def test_embedded_posts_are_article_text() -> None:
    tweet = (
        "<div class='social-embed'><blockquote class='twitter-tweet'><p>The new timetable "
        "is out and the last boat leaves at half past eleven, finally.</p>— Harbour Watch "
        "<a href='https://example.social/hw/1'>March 5, 2024</a></blockquote></div>"
    )
    share = "<div class='social-share'><a href='/s/1'>Share</a><a href='/s/2'>Post</a></div>"
    html = page(f"<article>{paras(EN[:2])}{tweet}{share}{paras(EN[2:])}</article>")
    text = extract(html).text
    assert "the last boat leaves at half past eleven, finally." in text
    assert "Share" not in text


def test_line_breaks_inside_a_block_stay_lines() -> None:
    html = page(
        f"<article>{paras(EN[:2])}<p>North pier<br>Harbour Road 1<br>Tide Bay</p></article>"
    )
    assert extract(html).text.endswith("\n\nNorth pier\nHarbour Road 1\nTide Bay")


# --- structure kept ---------------------------------------------------------------


def test_lists_tables_and_subheadings_inside_the_article_are_kept() -> None:
    html = page(
        "<article><h1>Timetable</h1>"
        + paras(EN[:1])
        + "<h2>What changes</h2>"
        + "<ul><li>Departures every twenty minutes at peak</li><li>Last boat at 23:30</li></ul>"
        + "<table><tr><th>Route</th><th>Minutes</th></tr><tr><td>North pier</td><td>20</td></tr>"
        + "</table>"
        + paras(EN[1:2])
        + "</article>"
    )
    assert extract(html).text == "\n\n".join(
        [
            EN[0],
            "What changes",
            "Departures every twenty minutes at peak",
            "Last boat at 23:30",
            "Route | Minutes",
            "North pier | 20",
            EN[1],
        ]
    )


def test_headline_and_captions_never_reach_the_text() -> None:
    html = page(
        "<article><header><h1>Ferries every twenty minutes</h1>"
        "<p class='standfirst-date'>Updated 10:01, 19 November</p></header>"
        "<div class='wp-caption'><img src='a.jpg'><p class='wp-caption-text'>The north pier "
        "at dawn, seen from the harbour office.</p></div>"
        + paras(EN)
        + "<figure><img src='b.jpg'><figcaption>Crew training on the new boats.</figcaption>"
        "</figure></article>"
    )
    text = extract(html).text
    assert "Ferries every twenty minutes" not in text
    assert "north pier at dawn" not in text
    assert "Crew training" not in text
    assert text == "\n\n".join(EN)


def test_blocks_never_glue_words_together() -> None:
    html = page(
        "<article><div>First block ends here.</div><div>Second block starts here, and it "
        "carries on for a while so it reads like prose.</div><span>Inline</span><span>"
        "Run</span>" + paras(EN[:2]) + "</article>"
    )
    text = extract(html).text
    assert "here.Second" not in text
    assert "First block ends here.\n\nSecond block starts here" in text


# --- languages --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "texts"), [("ja", JA), ("ru", RU), ("pt-BR", PT)], ids=["ja", "ru", "pt"]
)
def test_articles_in_other_languages(lang: str, texts: list[str]) -> None:
    menu = "".join(f"<li><a href='/c/{i}'>{texts[0][i * 3 : i * 3 + 6]}</a></li>" for i in range(8))
    html = page(
        f"<div class='menu'><ul>{menu}</ul></div>"
        f"<div class='content'>{paras(texts)}</div>"
        f"<div class='footer'>{texts[0][:20]}</div>",
        lang=lang,
    )
    result = extract(html)
    assert result.text == "\n\n".join(texts)
    assert result.lang == lang
    assert result.word_count > 20


def test_cjk_word_count_counts_characters_not_spaces() -> None:
    result = extract(page(f"<article>{paras(JA)}</article>", lang="ja"))
    cjk_chars = sum(1 for ch in "".join(JA) if "\u3040" <= ch <= "\u9fff")
    assert result.word_count >= cjk_chars // 2


# --- hints ------------------------------------------------------------------------


def test_itemprop_article_body_beats_longer_boilerplate() -> None:
    teasers = "".join(
        f"<div class='card'><p>Teaser {i}: a long summary of some other story, with commas, "
        "clauses, and enough words to look like an article paragraph to a naive scorer.</p></div>"
        for i in range(10)
    )
    html = page(f"<div class='grid'>{teasers}</div><div itemprop='articleBody'>{paras(EN)}</div>")
    assert extract(html).text == "\n\n".join(EN)


def test_json_ld_article_body_replaces_a_teaser_dom() -> None:
    body = "\n\n".join(EN * 2)
    ld = {"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Ferries",
          "articleBody": body}  # fmt: skip
    html = page(
        "<div class='paywall'><p>Subscribe to read the rest of this story.</p></div>"
        f"<article><p>{EN[0]}</p></article>",
        head=f"<script type='application/ld+json'>{json.dumps(ld)}</script>",
    )
    assert extract(html).text == body


# --- metadata ---------------------------------------------------------------------


def test_metadata_from_meta_tags() -> None:
    head = (
        "<title>Ferries every twenty minutes | The Daily Tide</title>"
        "<meta property='og:title' content='Ferries every twenty minutes'>"
        "<meta property='og:site_name' content='The Daily Tide'>"
        "<meta name='author' content='Jo Marsh'>"
        "<meta property='article:published_time' content='2024-03-05T09:30:00Z'>"
        "<meta name='description' content='Boats will leave every twenty minutes.'>"
        "<link rel='canonical' href='/news/ferries'>"
    )
    result = extract(page(f"<article>{paras(EN)}</article>", head=head),
                     "https://tide.example/news/ferries?utm=x")  # fmt: skip
    assert result.title == "Ferries every twenty minutes"
    assert result.site_name == "The Daily Tide"
    assert result.byline == "Jo Marsh"
    assert result.published_at == "2024-03-05T09:30:00Z"
    assert result.canonical_url == "https://tide.example/news/ferries"
    assert result.excerpt == "Boats will leave every twenty minutes."
    assert result.lang == "en"
    assert result.word_count == len(" ".join(EN).split())


def test_metadata_from_json_ld() -> None:
    ld = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "WebSite", "name": "Tide"},
            {
                "@type": "NewsArticle",
                "headline": "Ferry plan approved",
                "datePublished": "2024-03-05",
                "author": [{"@type": "Person", "name": "Jo Marsh"}, {"name": "Li Wei"}],
                "publisher": {"@type": "Organization", "name": "The Daily Tide"},
            },
        ],
    }
    head = f"<script type='application/ld+json'>{json.dumps(ld)}</script>"
    result = extract(page(f"<article>{paras(EN)}</article>", head=head))
    assert result.title == "Ferry plan approved"
    assert result.byline == "Jo Marsh, Li Wei"
    assert result.published_at == "2024-03-05"
    assert result.site_name == "The Daily Tide"


def test_metadata_from_the_document_itself() -> None:
    html = page(
        "<article><h1>Ferry plan approved</h1>"
        "<p class='byline'>Von Anna Schmidt</p>"
        "<time datetime='2024-03-05T08:00:00+01:00'>5. März</time>" + paras(EN) + "</article>",
        head="<title>Ferry plan approved – Tide</title>",
        lang="de",
    )
    result = extract(html)
    assert result.title == "Ferry plan approved"
    assert result.byline == "Anna Schmidt"
    assert result.published_at == "2024-03-05T08:00:00+01:00"
    assert result.lang == "de"
    assert "Anna Schmidt" not in result.text
    assert result.excerpt.startswith(EN[0][:40])


def test_title_from_document_title_drops_the_site_suffix() -> None:
    html = page(f"<div>{paras(EN)}</div>", head="<title>Ferry plan approved | Tide News</title>")
    assert extract(html).title == "Ferry plan approved"


# --- markdown ---------------------------------------------------------------------


def test_markdown_keeps_headings_lists_links_code_and_quotes() -> None:
    html = page(
        "<article><h1>Guide</h1>"
        f"<p>{EN[0]} See <a href='/timetable'>the timetable</a>.</p>"
        "<h2>Steps</h2><ol><li>Buy a ticket</li><li>Board at <b>pier 2</b></li></ol>"
        "<ul><li>Bikes allowed<ul><li>front deck only</li></ul></li></ul>"
        "<pre><code class='language-bash'>tide-cli book --route north\n  --time 08:20</code>"
        "</pre>"
        "<blockquote><p>Twenty minutes is a promise.</p></blockquote>"
        f"<p>{EN[1]}</p></article>"
    )
    result = extract(html, "https://tide.example/guide/")
    md = result.markdown
    assert "# Guide" not in md  # the headline is the title, not the body
    assert "[the timetable](https://tide.example/timetable)" in md
    assert "\n\n## Steps\n\n1. Buy a ticket\n2. Board at **pier 2**\n\n" in md
    assert "- Bikes allowed\n  - front deck only" in md
    assert "```bash\ntide-cli book --route north\n  --time 08:20\n```" in md
    assert "> Twenty minutes is a promise." in md
    assert "tide-cli book --route north\n  --time 08:20" in result.text


def test_page_of_only_chrome_is_extraction_empty() -> None:
    html = page(chrome() + related() + FOOTER)
    with pytest.raises(ExtractionError) as info:
        extract(html)
    assert info.value.code is ErrorCode.EXTRACTION_EMPTY
