"""Feeds: read from RSS and Atom, polled on the injected clock against a loopback feed
server that changes, answers 304, fails and redirects; and followed through the daemon."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from readdod.capture.feeds import NotAFeed, parse
from readdod.core import Core
from readdod.core.feeds import next_poll
from readdod.errors import IdempotencyConflict, NotFound, ValidationFailed
from readdod.extraction.fetch import make_client
from readdod.loops.feeds import FeedPoller
from readdod.runtime.clock import ManualClock, iso
from readdod.settings.config import FeedsConfig, FetchConfig
from readdod.store import SqliteStore
from tests.daemon_proc import DaemonProc, run_cli
from tests.pageserver import Exchange, PageServer, fast_fetch, serve

RSS = "application/rss+xml"


def rss(items: list[tuple[str, str | None, str]], *, title: str = "The blog") -> bytes:
    """An RSS 2.0 document of (title, guid or None, link) items."""
    body = "".join(
        f"<item><title>{t}</title>{f'<guid>{g}</guid>' if g else ''}<link>{link}</link>"
        f"<pubDate>Mon, 0{i + 1} Mar 2021 10:00:00 +0000</pubDate></item>"
        for i, (t, g, link) in enumerate(items)
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>{title}</title>'
        f"<link>https://blog.example/</link>{body}</channel></rss>"
    ).encode()


# --- reading a feed (pure) -------------------------------------------------------------


def test_rss_entries_by_guid_else_canonical_link_newest_first() -> None:
    got = parse(
        rss(
            [
                ("Old", "tag:blog,1", "/posts/1"),
                ("New", None, "https://blog.example/posts/2?utm_source=rss#top"),
                ("Twice", "tag:blog,1", "/posts/1-again"),
            ]
        ),
        "https://blog.example/feed.xml",
    )
    assert got.title == "The blog"
    assert [(e.key, e.url, e.title) for e in got.entries] == [
        ("https://blog.example/posts/2", "https://blog.example/posts/2?utm_source=rss#top", "New"),
        ("tag:blog,1", "https://blog.example/posts/1", "Old"),
    ]
    assert got.entries[0].published == "2021-03-02T10:00:00Z"


def test_atom_and_rss1_and_entries_without_link() -> None:
    atom = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom side</title><id>urn:feed</id>
<updated>2022-01-02T00:00:00Z</updated>
<entry><title>A1</title><id>urn:a1</id><link rel="alternate" href="https://a.example/1"/>
<updated>2022-01-01T00:00:00Z</updated></entry>
<entry><title>No link</title><id>urn:a2</id><updated>2022-01-02T00:00:00Z</updated></entry>
<entry><title>Mail</title><id>urn:a3</id><link href="mailto:x@a.example"/></entry>
</feed>"""
    got = parse(atom, "https://a.example/atom")
    assert [(e.key, e.url) for e in got.entries] == [("urn:a1", "https://a.example/1")]
    assert got.skipped == 2
    rdf = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="https://r.example/"><title>RDF</title><link>https://r.example/</link></channel>
<item rdf:about="https://r.example/x"><title>X</title><link>https://r.example/x</link></item>
</rdf:RDF>"""
    assert [e.url for e in parse(rdf, "https://r.example/rss").entries] == ["https://r.example/x"]


@pytest.mark.parametrize("body", [b"<html><body><p>a page</p></body></html>", b"\x00\x01\x02", b""])
def test_what_is_not_a_feed_says_so(body: bytes) -> None:
    with pytest.raises(NotAFeed, match="is not an RSS, Atom or JSON feed"):
        parse(body, "https://x.example/feed")


def test_a_web_page_that_names_its_feed_says_where_it_is() -> None:
    page = (
        b'<html><head><link rel="stylesheet" href="/s.css">'
        b"<link rel='alternate' type='application/atom+xml' title='Posts'"
        b" href='/atom.xml?a=1&amp;b=2'>"
        b"</head><body><p>Welcome</p></body></html>"
    )
    with pytest.raises(NotAFeed, match="follow that instead") as info:
        parse(page, "https://blog.example/home/")
    assert "https://blog.example/atom.xml?a=1&b=2" in str(info.value)


def test_backoff_doubles_from_the_interval_up_to_its_cap() -> None:
    waits = [(next_poll(0, interval_s=60, failures=n, max_backoff_s=500) // 1000) for n in range(6)]
    assert waits == [60, 60, 120, 240, 480, 500]
    assert next_poll(5, interval_s=60, failures=200, max_backoff_s=10) == 5 + 60_000


# --- polling, in process, on a manual clock ---------------------------------------------


class FeedSite:
    """One feed on the page server: its document, its ETag, what each request asked."""

    def __init__(self, srv: PageServer, path: str) -> None:
        self.srv = srv
        self.path = path
        self.doc = rss([])
        self.version = 0
        self.status = 200
        self.validators = "etag"
        #: Answer ``status`` only after this many requests have been answered well.
        self.good_first = 0
        self.asked: list[dict[str, str | None]] = []
        srv.route(path, self._answer)

    @property
    def url(self) -> str:
        return self.srv.url(self.path)

    def publish(self, doc: bytes) -> None:
        self.doc = doc
        self.version += 1

    def _answer(self, ex: Exchange) -> None:
        inm, ims = ex.headers.get("If-None-Match"), ex.headers.get("If-Modified-Since")
        self.asked.append({"If-None-Match": inm, "If-Modified-Since": ims})
        if self.status != 200 and len(self.asked) > self.good_first:
            ex.send("<p>down</p>", status=self.status)
            return
        etag = f'"v{self.version}"'
        stamp = f"Mon, 0{self.version + 1} Mar 2021 10:00:00 GMT"
        if (self.validators == "etag" and inm == etag) or (
            self.validators == "date" and ims == stamp
        ):
            ex.send(b"", status=304, content_type=None)
            return
        header = {"ETag": etag} if self.validators == "etag" else {"Last-Modified": stamp}
        ex.send(self.doc, content_type=RSS, headers=header)


CFG = FeedsConfig(interval_s=600, max_backoff_s=3600, max_entries_per_poll=3, concurrency=2)


class Rig:
    def __init__(self, core: Core, poller: FeedPoller, clock: ManualClock) -> None:
        self.core = core
        self.poller = poller
        self.clock = clock

    async def poll(self) -> int:
        return await self.poller.poll_due(100)

    async def feed(self, feed_id: str) -> Any:
        (found,) = [f for f in await self.core.feeds.all() if f.id == feed_id]
        return found

    async def items(self) -> list[Any]:
        items, _ = await self.core.reads.list_items(limit=1000)
        return list(items)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    clock = ManualClock()
    async with SqliteStore.open(tmp_path / "readdod.db") as store:
        core = Core(store, clock, auto_process=False)
        async with make_client(FetchConfig(allow_private=True, timeout_s=5)) as http:
            yield Rig(core, FeedPoller(core.feeds, core.commands, http, CFG, clock), clock)


@pytest.mark.anyio
async def test_a_feed_is_polled_when_due_and_each_entry_captured_once(rig: Rig) -> None:
    with serve() as srv:
        site = FeedSite(srv, "/feed.xml")
        site.publish(rss([("One", "g1", "/1"), ("Two", "g2", "/2")]))
        feed, created, _ = await rig.core.feeds.add(site.url, "keep up with the blog", ["blog"])
        assert created
        assert await rig.poll() == 1
        items = await rig.items()
        assert sorted(i.title for i in items) == ["One", "Two"]
        assert {i.intent for i in items} == {"keep up with the blog"}
        assert {tuple(i.tags) for i in items} == {("blog",)}
        got = await rig.feed(feed.id)
        assert (got.title, got.entries_captured, got.failures) == ("The blog", 2, 0)

        # Asked twice: once by `add` (it is a feed), once by the first poll.
        assert len(site.asked) == 2
        # Not due yet: nothing is asked of the server.
        rig.clock.advance(599_000)
        assert await rig.poll() == 0 and len(site.asked) == 2
        # Due: a conditional GET, answered 304; nothing new.
        rig.clock.advance(1_000)
        assert await rig.poll() == 1
        assert site.asked[-1]["If-None-Match"] == '"v1"'
        assert len(await rig.items()) == 2

        # The feed changes: only the new entry is captured; a known entry whose title
        # changed is not captured again.
        site.publish(rss([("One, edited", "g1", "/1"), ("Two", "g2", "/2"), ("Three", "g3", "/3")]))
        rig.clock.advance(600_000)
        assert await rig.poll() == 1
        assert sorted(i.title for i in await rig.items()) == ["One", "Three", "Two"]
        assert (await rig.feed(feed.id)).entries_captured == 3
        assert site.asked[-1]["If-None-Match"] == '"v1"'


@pytest.mark.anyio
async def test_a_failing_feed_backs_off_says_why_and_recovers(rig: Rig) -> None:
    with serve() as srv:
        site = FeedSite(srv, "/flaky.xml")
        site.publish(rss([("One", "g1", "/1")]))
        feed, _, _ = await rig.core.feeds.add(site.url, "watch it")
        site.status = 500
        start = rig.clock.now_ms()
        for n in range(1, 6):
            assert await rig.poll() == 1
            got = await rig.feed(feed.id)
            assert got.failures == n and got.last_error_code == "EXTRACTION_FETCH_FAILED"
            assert "HTTP 500" in got.last_error
            now = rig.clock.now_ms()
            wait_ms = int(
                CFG.interval_s * 1000 * min(2 ** (n - 1), CFG.max_backoff_s / CFG.interval_s)
            )
            assert got.next_poll_at == iso(now + wait_ms)
            # Just before it is due, nothing is polled.
            rig.clock.advance(wait_ms - 1)
            assert await rig.poll() == 0
            rig.clock.advance(1)
            assert rig.clock.now_ms() == now + wait_ms
        assert rig.clock.now_ms() - start == 1000 * (600 + 1200 + 2400 + 3600 + 3600)
        assert len(site.asked) == 1 + 5
        failing = await rig.core.feeds.failing(3)
        assert [f.id for f in failing] == [feed.id]

        site.status = 200
        assert await rig.poll() == 1
        got = await rig.feed(feed.id)
        assert (got.failures, got.last_error, got.entries_captured) == (0, None, 1)
        assert await rig.core.feeds.failing(1) == []


@pytest.mark.anyio
async def test_redirects_not_a_feed_and_last_modified(rig: Rig) -> None:
    with serve() as srv:
        site = FeedSite(srv, "/new-home.xml")
        site.validators = "date"
        site.publish(rss([("Moved", "m1", "/m")]))
        srv.redirect("/old.xml", "/new-home.xml", 301)
        # A feed when it is added, a web page (naming no feed) at its polls.
        turned = {"page": False}

        def feed_then_page(ex: Exchange) -> None:
            if turned["page"]:
                ex.send("<html><body><p>not a feed</p></body></html>")
            else:
                ex.send(rss([]), content_type=RSS)

        srv.route("/page", feed_then_page)
        moved, _, _ = await rig.core.feeds.add(srv.url("/old.xml"), "follow")
        page, _, _ = await rig.core.feeds.add(srv.url("/page"), "follow")
        turned["page"] = True
        assert await rig.poll() == 2
        assert [i.title for i in await rig.items()] == ["Moved"]
        # The entry's relative link is read against where the redirect led.
        assert (await rig.items())[0].url == srv.url("/m")
        bad = await rig.feed(page.id)
        assert bad.last_error_code == "EXTRACTION_PARSE_FAILED"
        assert "not an RSS, Atom or JSON feed" in bad.last_error
        rig.clock.advance(600_000)  # a first failure waits one interval too
        assert await rig.poll() == 2
        assert site.asked[-1]["If-Modified-Since"] == "Mon, 02 Mar 2021 10:00:00 GMT"
        assert (await rig.feed(moved.id)).failures == 0
        assert (await rig.feed(page.id)).failures == 2


@pytest.mark.anyio
async def test_at_most_max_entries_per_poll_newest_first_the_rest_later(rig: Rig) -> None:
    with serve() as srv:
        site = FeedSite(srv, "/many.xml")
        site.publish(rss([(f"E{i}", f"g{i}", f"/{i}") for i in range(5)]))
        await rig.core.feeds.add(site.url, "read all")
        await rig.poll()
        assert sorted(i.title for i in await rig.items()) == ["E2", "E3", "E4"]
        # The rest come at the next poll, though the feed did not change: it is asked for
        # whole (no If-None-Match), then conditionally again.
        rig.clock.advance(600_000)
        await rig.poll()
        assert site.asked[-1]["If-None-Match"] is None
        assert sorted(i.title for i in await rig.items()) == ["E0", "E1", "E2", "E3", "E4"]
        rig.clock.advance(600_000)
        await rig.poll()
        assert site.asked[-1]["If-None-Match"] == '"v1"'
        assert len(await rig.items()) == 5


@pytest.mark.anyio
async def test_feed_add_checks_and_remove(rig: Rig) -> None:
    with pytest.raises(ValidationFailed, match="http"):
        await rig.core.feeds.add("ftp://x.example/feed", "x")
    with pytest.raises(ValidationFailed, match="intent is required"):
        await rig.core.feeds.add("https://x.example/feed", "  ")
    with serve() as srv:
        site = FeedSite(srv, "/feed")
        url = site.url
        feed, created, probed = await rig.core.feeds.add(url + "?utm_source=a", "read")
        assert created and feed.url == url and probed is not None
        assert (probed.found_on, probed.title) == (None, "The blog")
        # Followed already: found again without asking the server.
        again, created, probed = await rig.core.feeds.add(
            url.replace("127.0.0.1", "127.0.0.1."), "read"
        )
        assert again.id == feed.id and not created and probed is None
        assert len(site.asked) == 1
        with pytest.raises(IdempotencyConflict, match="feed rm"):
            await rig.core.feeds.add(url, "something else")
        assert (await rig.core.feeds.remove(url)).id == feed.id
        with pytest.raises(NotFound):
            await rig.core.feeds.remove(feed.id)


# --- through the daemon -------------------------------------------------------------


def test_the_daemon_follows_a_feed_and_health_names_a_failing_one(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    with serve() as srv:
        site = FeedSite(srv, "/feed.xml")
        site.publish(rss([("One", "g1", "/1"), ("Two", "g2", "/2")]))
        down = FeedSite(srv, "/down.xml")
        down.status, down.good_first = 503, 1
        d = DaemonProc(
            tmp_path,
            daemon={"auto_process": False},
            fetch=fast_fetch(attempts=1),
            feeds={"failures_degraded": 1},
        )
        daemons.append(d)
        d.start()
        out = run_cli(d, "feed", "add", site.url, "-i", "keep up", "--tag", "blog", "--json")
        assert out.returncode == 0, out.stderr
        feed = json.loads(out.stdout)["feed"]
        d.wait_log(lambda e: e["event"] == "feed.polled" and e["feed_id"] == feed["id"])
        items = d.call("list", {})["items"]
        assert sorted(i["title"] for i in items) == ["One", "Two"]
        capture = d.call("get", {"id": items[0]["id"], "history": True})["events"][0]
        assert capture["detail"]["origin"]["source"] == f"feed:{site.url}"

        # A feed when it is added (`feed add` fetches it once), down at its polls.
        added = run_cli(d, "feed", "add", down.url, "-i", "watch")
        assert added.returncode == 0, added.stderr
        d.wait_log(lambda e: e["event"] == "feed.failed")
        health = run_cli(d, "health", "--json")
        assert health.returncode == 1  # degraded
        report = json.loads(health.stdout)
        assert report["checks"]["failing_feeds"]["value"] == 1
        assert any("down.xml" in r and "HTTP 503" in r for r in report["reasons"])
        listing = run_cli(d, "feed", "ls")
        assert "FAILING (1 in a row)" in listing.stdout and "HTTP 503" in listing.stdout
        assert "2 entries captured" in listing.stdout
        # When it failed, and since when it has not answered.
        assert "           at 20" in listing.stdout and "last good poll never" in listing.stdout

        gone = run_cli(d, "feed", "rm", srv.url("/down.xml"))
        assert gone.returncode == 0
        assert json.loads(run_cli(d, "health", "--json").stdout)["status"] == "ok"
        assert d.stop() == 0
