"""Feeds as the world serves them: validators a server spoils, documents of any size,
podcasts whose episodes share a link, pages that name their feed, charsets only the
response's Content-Type tells. Real SQLite, loopback servers, the real daemon."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from readdod.capture.feeds import first_entries, parse
from readdod.core import Core
from readdod.errors import SourceRefused, UnsupportedContent
from readdod.extraction.fetch import clean_validator, make_client
from readdod.loops.feeds import FeedPoller
from readdod.runtime.clock import ManualClock
from readdod.settings.config import FeedsConfig, FetchConfig
from readdod.store import SqliteStore
from tests.daemon_proc import DaemonProc, run_cli
from tests.pageserver import Exchange, fast_fetch, serve
from tests.test_feeds import RSS, FeedSite, Rig, rss

FIXTURES = Path(__file__).parent / "fixtures" / "feeds"
PODCAST = (FIXTURES / "podcast-shared-link.rss").read_bytes()
SHOW = "https://baywatch-berlin.podigee.io/"


def many(n: int, *, start: int = 0) -> bytes:
    return rss([(f"E{i}", f"g{i}", f"/{i}") for i in range(start, start + n)])


# --- pure ------------------------------------------------------------------------------


def test_validators_are_kept_only_when_clean() -> None:
    assert clean_validator(' W/"abc-1" ') == 'W/"abc-1"'
    assert clean_validator("Mon, 01 Mar 2021 10:00:00 GMT") == "Mon, 01 Mar 2021 10:00:00 GMT"
    for spoiled in ('"caf\u00e9"', '"a\x1b]0;x\x07"', "a\r\nX-Evil: 1", "", "x" * 2000, None):
        assert clean_validator(spoiled) is None


def test_only_the_first_entries_are_read_and_the_document_stays_whole() -> None:
    doc = many(10)
    cut, was_cut = first_entries(doc, 3)
    assert was_cut and cut.endswith(b"</channel></rss>") and len(cut) < len(doc) / 2
    got = parse(doc, "https://blog.example/feed", max_entries=3)
    assert got.cut and [e.title for e in got.entries] == ["E2", "E1", "E0"]
    assert not parse(doc, "https://blog.example/feed", max_entries=10).cut
    # An entry tag inside CDATA or a comment is no entry; a CDATA never closed is
    # stepped over to the end in one pass.
    tricky = doc.replace(
        b"<item>", b"<!-- <item> --><item><description><![CDATA[<item>]]></description>", 1
    )
    assert first_entries(tricky, 3)[0].count(b"<title>E") == 3
    unclosed = b"<rss><channel>" + b"<![CDATA[<item>" * 200_000
    started = time.process_time()
    assert first_entries(unclosed, 3) == (unclosed, False)
    assert time.process_time() - started < 5


def test_podcast_episodes_are_known_by_guid_and_a_shared_link_is_marked() -> None:
    got = parse(PODCAST, "https://baywatch-berlin.podigee.io/feed/mp3")
    assert got.title == "Baywatch Berlin"
    assert [e.title for e in got.entries] == [
        "Folge 3: Kontakt zur echten Welt",
        "Folge 2: Der Flipperautomat",
        "Folge 1: Jet Set Spaß",
        "Trailer",
    ]
    assert len({e.key for e in got.entries}) == 4
    assert got.entries[3].key == "cc973b648d6fb41e4e5ef7e4b4ee7604"
    assert [e.shared_link for e in got.entries] == [True, True, True, False]
    assert got.entries[1].content and "Flipperautomaten" in got.entries[1].content
    assert got.entries[1].enclosure and "episode_3.mp3" in got.entries[1].enclosure


def test_entries_without_guid_are_known_by_their_enclosure() -> None:
    doc = rss([("A", None, "/show"), ("B", None, "/show")]).replace(
        b"</item>", b'<enclosure url="/a.mp3" type="audio/mpeg" length="1"/></item>', 1
    )
    doc = doc.replace(
        b"<title>B</title>",
        b'<title>B</title><enclosure url="/b.mp3" type="audio/mpeg" length="1"/>',
    )
    got = parse(doc, "https://blog.example/feed")
    assert sorted(e.key for e in got.entries) == [
        "https://blog.example/a.mp3",
        "https://blog.example/b.mp3",
    ]
    assert all(e.shared_link for e in got.entries)


def test_the_charset_of_the_content_type_reads_bytes_without_a_declaration() -> None:
    # feedparser's own test file, with a link so that its entry is captured.
    data = (FIXTURES / "feedparser-windows1255.xml").read_bytes()
    data = data.replace(b"<item>", b"<item><link>https://he.example/1</link>")
    got = parse(data, "https://he.example/feed", content_type="text/xml; charset=windows-1255")
    (entry,) = got.entries
    assert entry.content and "האם תדפיס נייר של אתר אינטרנט" in entry.content


def test_a_json_feed_is_read_and_every_feed_type_is_discovered() -> None:
    doc = json.dumps(
        {
            "version": "https://jsonfeed.org/version/1.1",
            "title": "JSON side",
            "home_page_url": "https://j.example/",
            "items": [
                {
                    "id": "1",
                    "url": "/posts/1",
                    "title": "One",
                    "content_html": "<p>Hi</p>",
                    "date_published": "2021-03-01T10:00:00+02:00",
                },
                {"id": 2, "url": "https://j.example/posts/2", "title": "Two"},
                {"id": "3", "title": "No link"},
            ],
        }
    ).encode()
    got = parse(doc, "https://j.example/feed.json", content_type="application/feed+json")
    assert got.title == "JSON side" and got.skipped == 1
    assert [(e.key, e.url, e.published) for e in got.entries] == [
        ("1", "https://j.example/posts/1", "2021-03-01T08:00:00Z"),
        ("2", "https://j.example/posts/2", None),
    ]
    from readdod.capture.feeds import discover

    for kind in ("application/rss+xml", "application/atom+xml", "application/feed+json"):
        page = f'<html><head><link rel="alternate" type="{kind}" href="/f"></head></html>'.encode()
        assert discover(page, "https://j.example/a/b") == "https://j.example/f"


# --- polled in process, on a manual clock ------------------------------------------------


def cfg(**overrides: object) -> FeedsConfig:
    base: dict[str, object] = {
        "interval_s": 600,
        "max_backoff_s": 3600,
        "max_entries_per_poll": 100,
        "concurrency": 2,
    }
    return FeedsConfig(**{**base, **overrides})  # type: ignore[arg-type]


@pytest.fixture
async def make_rig(tmp_path: Path) -> AsyncIterator[object]:
    clock = ManualClock()
    async with SqliteStore.open(tmp_path / "readdod.db") as store:
        core = Core(store, clock, auto_process=False)
        async with make_client(FetchConfig(allow_private=True, timeout_s=30)) as http:

            def build(feeds: FeedsConfig) -> Rig:
                return Rig(core, FeedPoller(core.feeds, core.commands, http, feeds, clock), clock)

            yield build


@pytest.mark.anyio
async def test_a_non_ascii_etag_is_neither_kept_nor_sent_and_the_feed_keeps_polling(
    make_rig: object,
) -> None:
    rig: Rig = make_rig(cfg())  # type: ignore[operator]
    with serve() as srv:
        asked: list[str | None] = []
        state = {"n": 1}

        def spoiled(ex: Exchange) -> None:
            asked.append(ex.headers.get("If-None-Match"))
            headers = {"ETag": '"caf\u00e9"', "Last-Modified": "Mon, 01 M\u00e4r 2021"}
            ex.send(many(state["n"]), content_type=RSS, headers=headers)

        srv.route("/spoiled.xml", spoiled)
        feed, _, _ = await rig.core.feeds.add(srv.url("/spoiled.xml"), "read")
        for n in (1, 2, 3):
            state["n"] = n
            assert await rig.poll() == 1
            got = await rig.feed(feed.id)
            assert (got.failures, got.last_error_code, got.entries_captured) == (0, None, n)
            rig.clock.advance(600_000)
        assert asked == [None] * 4  # the add, then three whole polls
        # A spoiled validator kept by an earlier version is not sent either: the feed recovers.
        await rig.core.store.write(
            lambda tx: tx.set_feed(feed.id, etag='"\u00e9t\u00e9"', last_modified="\x1b[2J")
        )
        assert await rig.poll() == 1
        assert (await rig.feed(feed.id)).failures == 0
        assert asked[-1] is None


@pytest.mark.anyio
async def test_a_feed_over_its_byte_cap_fails_saying_so_and_recovers(make_rig: object) -> None:
    rig: Rig = make_rig(cfg(max_bytes=4096))  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/big.xml")
        site.publish(many(3))
        feed, _, _ = await rig.core.feeds.add(site.url, "read")
        site.publish(many(200))
        assert await rig.poll() == 1
        got = await rig.feed(feed.id)
        assert got.last_error_code == "EXTRACTION_TOO_LARGE"
        assert "feeds.max_bytes" in got.last_error and "4,096" in got.last_error
        # Refused at add too, saying why.
        big = FeedSite(srv, "/bigger.xml")
        big.publish(many(200))
        with pytest.raises(SourceRefused, match=r"feeds\.max_bytes") as refused:
            await rig.core.feeds.add(big.url, "read")
        assert refused.value.error_code == "EXTRACTION_TOO_LARGE"
        site.publish(many(3))
        rig.clock.advance(600_000)
        assert await rig.poll() == 1
        got = await rig.feed(feed.id)
        assert (got.failures, got.last_error_code, got.entries_captured) == (0, None, 3)


@pytest.mark.anyio
async def test_a_poll_reads_only_the_first_entries_of_a_huge_feed(make_rig: object) -> None:
    rig: Rig = make_rig(cfg(max_entries_read=50, max_entries_per_poll=25))  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/huge.xml")
        # Newest first, as feeds list them: g19999 ... g0.
        site.publish(rss([(f"E{i}", f"g{i}", f"/{i}") for i in reversed(range(5_000))]))
        feed, _, probed = await rig.core.feeds.add(site.url, "read")
        assert probed is not None and probed.entries == 50
        for _ in range(3):
            await rig.poll()
            rig.clock.advance(600_000)
        titles = sorted(int(i.title[1:]) for i in await rig.items())
        assert titles == list(range(4_950, 5_000))
        assert (await rig.feed(feed.id)).entries_captured == 50


@pytest.mark.anyio
async def test_a_feed_that_takes_too_much_cpu_to_read_is_stopped(make_rig: object) -> None:
    rig: Rig = make_rig(cfg(parse_cpu_s=1))  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/bomb.xml")
        site.publish(many(1))
        feed, _, _ = await rig.core.feeds.add(site.url, "read")
        # One entry of two million tiny elements: a minute of feedparser's time.
        site.publish(
            many(1).replace(
                b"</item>", b"<description>" + b"<x/>" * 2_000_000 + b"</description></item>"
            )
        )
        await rig.poll()
        got = await rig.feed(feed.id)
        assert got.last_error_code == "EXTRACTION_TOO_LARGE"
        assert "feeds.parse_cpu_s" in got.last_error


@pytest.mark.anyio
async def test_an_episode_whose_link_another_one_had_is_an_item_of_its_own(
    make_rig: object,
) -> None:
    rig: Rig = make_rig(cfg())  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/show.xml")
        site.publish(rss([("Episode 1", "ep-1", "/episodes")]))
        feed, _, _ = await rig.core.feeds.add(site.url, "listen")
        await rig.poll()
        # The feed shows only its latest episode, on the same page as the one before.
        site.publish(rss([("Episode 2", "ep-2", "/episodes")]))
        rig.clock.advance(600_000)
        await rig.poll()
        items = await rig.items()
        assert sorted(i.title for i in items) == ["Episode 1", "Episode 2"]
        assert (await rig.feed(feed.id)).entries_captured == 2
        # Another feed followed with the same intent, naming the same page: the same item.
        other = FeedSite(srv, "/planet.xml")
        other.publish(rss([("Episode 2 (planet)", "planet-2", "/episodes")]))
        planet, _, _ = await rig.core.feeds.add(other.url, "listen")
        await rig.poll()
        assert len(await rig.items()) == 2
        assert (await rig.feed(planet.id)).entries_captured == 0


@pytest.mark.anyio
async def test_a_poll_reads_the_feed_in_the_charset_its_server_names(make_rig: object) -> None:
    rig: Rig = make_rig(cfg())  # type: ignore[operator]
    with serve() as srv:
        # feedparser's own windows-1255 file, given a title and a link (the show's page).
        title = "חדשות הרשת"
        data = (FIXTURES / "feedparser-windows1255.xml").read_bytes()
        data = data.replace(
            b"<channel>", b"<channel><title>" + title.encode("cp1255") + b"</title>"
        )
        data = data.replace(b"<item>", b"<item><link>" + srv.url("/he.xml").encode() + b"</link>")
        srv.page("/he.xml", data, content_type="application/rss+xml; charset=windows-1255")
        feed, _, _ = await rig.core.feeds.add(srv.url("/he.xml"), "read")
        await rig.poll()
        assert (await rig.feed(feed.id)).title == title
        (item,) = await rig.items()
        # Captured with its own words (its link is the feed's own address), read aright.
        html, _ = await rig.core.store.read(lambda tx: tx.source(item.id))
        assert html is not None and "האם תדפיס נייר של אתר אינטרנט" in html


@pytest.mark.anyio
async def test_entries_known_by_their_link_before_are_not_captured_again(
    make_rig: object,
) -> None:
    """Entries without id but with an enclosure are keyed by it now; one an earlier
    readdod remembered by its link, on a page of its own, stays captured once."""
    rig: Rig = make_rig(cfg())  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/casts.xml")
        doc = rss([("Old", None, "/old"), ("New", None, "/new")])
        for name in (b"Old", b"New"):
            enclosure = b'<enclosure url="/%s.mp3" type="audio/mpeg" length="1"/>' % name.lower()
            doc = doc.replace(b"<title>%s</title>" % name, b"<title>%s</title>" % name + enclosure)
        site.publish(doc)
        feed, _, _ = await rig.core.feeds.add(site.url, "listen")
        now = rig.clock.now_ms()
        await rig.core.store.write(
            lambda tx: tx.add_feed_entry(feed.id, srv.url("/old"), None, now)
        )
        await rig.poll()
        assert [i.title for i in await rig.items()] == ["New"]
        rig.clock.advance(600_000)
        await rig.poll()
        assert [i.title for i in await rig.items()] == ["New"]


@pytest.mark.anyio
async def test_feed_add_follows_the_feed_a_page_names_and_refuses_what_is_no_feed(
    make_rig: object,
) -> None:
    rig: Rig = make_rig(cfg())  # type: ignore[operator]
    with serve() as srv:
        site = FeedSite(srv, "/blog/feed.xml")
        site.publish(rss([("One", "g1", "/1")]))
        srv.page(
            "/blog/",
            '<html><head><link rel="alternate" type="application/rss+xml" href="feed.xml">'
            "</head><body><p>Hi</p></body></html>",
        )
        srv.page("/plain", "<html><body><p>no feed here</p></body></html>")
        feed, created, probed = await rig.core.feeds.add(srv.url("/blog/"), "read")
        assert created and feed.url == site.url and feed.title == "The blog"
        assert probed is not None and probed.found_on == srv.url("/blog/")
        with pytest.raises(UnsupportedContent, match="not an RSS, Atom or JSON feed"):
            await rig.core.feeds.add(srv.url("/plain"), "read")
        srv.page("/gone", "<p>gone</p>", status=404)
        with pytest.raises(SourceRefused, match="HTTP 404") as refused:
            await rig.core.feeds.add(srv.url("/gone"), "read")
        assert refused.value.error_code == "EXTRACTION_FETCH_FAILED"
        assert [f.url for f in await rig.core.feeds.all()] == [site.url]


# --- through the daemon ----------------------------------------------------------------


def test_the_daemon_makes_an_item_of_each_podcast_episode_and_counts_them(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with serve() as srv:
        srv.page("/feed/mp3", PODCAST, content_type="application/rss+xml; charset=utf-8")
        # The show's own site names its feed.
        srv.page(
            "/",
            '<html><head><link rel="alternate" type="application/rss+xml" title="Podcast"'
            ' href="/feed/mp3"></head><body><p>Baywatch Berlin</p></body></html>',
        )
        d = DaemonProc(tmp_path, daemon={"auto_process": False}, fetch=fast_fetch(attempts=1))
        daemons.append(d)
        d.start()
        out = run_cli(d, "feed", "add", srv.url("/"), "-i", "listen to the show")
        assert out.returncode == 0, out.stderr
        assert (
            f"{srv.url('/')} is a web page; it names its feed {srv.url('/feed/mp3')}" in out.stdout
        )
        assert "which shows 4 entries" in out.stdout
        d.wait_log(lambda e: e["event"] == "feed.polled")
        items = d.call("list", {})["items"]
        assert sorted(i["title"] for i in items) == [
            "Folge 1: Jet Set Spaß",
            "Folge 2: Der Flipperautomat",
            "Folge 3: Kontakt zur echten Welt",
            "Trailer",
        ]
        # The episodes on the show's page are captured with their own words.
        shared = [i for i in items if i["title"].startswith("Folge")]
        assert {i["source_type"] for i in shared} == {"html"}
        assert {i["url"] for i in shared} == {SHOW}
        listing = run_cli(d, "feed", "ls")
        assert "4 entries captured" in listing.stdout, listing.stdout

        refused = run_cli(d, "feed", "add", srv.url("/nothing"), "-i", "x", "--json")
        assert refused.returncode != 0
        assert "EXTRACTION_FETCH_FAILED" in refused.stdout + refused.stderr
        assert d.stop() == 0


def test_the_daemon_keeps_polling_a_feed_whose_etag_is_not_ascii(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with serve() as srv:
        count = {"n": 0}

        def spoiled(ex: Exchange) -> None:
            count["n"] += 1
            doc = rss([(f"E{i}", f"g{i}", f"/{i}") for i in range(count["n"])])
            ex.send(doc, content_type=RSS, headers={"ETag": '"\u00e9t\u00e9"'})

        srv.route("/feed.xml", spoiled)
        d = DaemonProc(
            tmp_path,
            daemon={"auto_process": False},
            fetch=fast_fetch(attempts=1),
            feeds={"interval_s": 1},
        )
        daemons.append(d)
        d.start()
        assert run_cli(d, "feed", "add", srv.url("/feed.xml"), "-i", "read").returncode == 0
        polled = d.wait_log(lambda e: e["event"] in ("feed.polled", "feed.failed"), count=3)
        assert [e["event"] for e in polled] == ["feed.polled"] * 3
        (feed,) = d.call("feed_list")["feeds"]
        assert feed["failures"] == 0 and feed["last_error_code"] is None
        assert d.stop() == 0
