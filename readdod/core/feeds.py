"""Feeds readdod follows: added, listed and removed for people; polled for the feed loop.

The loop (:mod:`readdod.loops.feeds`) asks which feeds are due, which of a
feed's entries were captured already, and records how each poll went; the
schedule (when a feed is next due, and how a failing one backs off) is the
pure :func:`next_poll`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

import msgspec

from readdod.core.unit import Units, dumps
from readdod.errors import IdempotencyConflict, NotFound, ValidationFailed
from readdod.items import urls
from readdod.items.models import Feed
from readdod.runtime import ids
from readdod.runtime.clock import Clock
from readdod.store.api import UnitOfWork
from readdod.store.rows import FeedRow
from readdod.wire.views import feed_view

#: The bounds a capture's intent and tags take (a feed's entries are captured with them).
INTENT_MAX: Final = 2_000
TAG_MAX: Final = 100
TAGS_MAX: Final = 50

T = TypeVar("T")


class Probed(msgspec.Struct, frozen=True, kw_only=True):
    """What fetching a URL to follow found: the feed's address (a web page's own feed
    when ``found_on`` names the page), its title and how many entries it shows."""

    url: str
    found_on: str | None = None
    title: str | None = None
    entries: int = 0


#: Fetches a URL once and reads it as a feed (the feed loop's :meth:`probe`).
Probe = Callable[[str], Awaitable[Probed]]


def next_poll(now_ms: int, *, interval_s: float, failures: int, max_backoff_s: float) -> int:
    """When a feed is polled next: ``interval_s`` after a good poll; after the n-th
    failure in a row ``interval_s × 2^(n-1)``, at most ``max_backoff_s``."""
    wait = interval_s if failures <= 0 else interval_s * 2 ** min(failures - 1, 32)
    return now_ms + int(min(wait, max(max_backoff_s, interval_s)) * 1000)


def _checked(url: str, intent: str, tags: Sequence[str]) -> tuple[str, str, list[str]]:
    try:
        canonical = urls.canonical(url.strip())
    except urls.BadURL as exc:
        raise ValidationFailed(
            f"a feed's url must be an absolute http(s) address such as"
            f" https://example.org/feed.xml, got {url!r}"
        ) from exc
    text = intent.strip()
    if not text:
        raise ValidationFailed(
            "intent is required: say why you follow this feed; each entry is captured with it"
        )
    if len(text) > INTENT_MAX:
        raise ValidationFailed(f"intent is {len(text)} characters; at most {INTENT_MAX}")
    clean = sorted({t.strip() for t in tags if t.strip()})
    if len(clean) > TAGS_MAX or any(len(t) > TAG_MAX for t in clean):
        raise ValidationFailed(f"at most {TAGS_MAX} tags of at most {TAG_MAX} characters each")
    return canonical, text, clean


class Feeds:
    """The feeds of one store, on the core's clock."""

    def __init__(self, units: Units, clock: Clock) -> None:
        self.units = units
        self.clock = clock
        self._added: list[Callable[[], None]] = []
        self._probe: Probe | None = None

    def use_probe(self, probe: Probe) -> None:
        """Check each new feed with ``probe`` before it is followed (the daemon's feed
        loop: without one, as in a store-only test, a URL is followed unread)."""
        self._probe = probe

    def on_added(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after a feed is added (the loop polls it at once)."""
        self._added.append(callback)

    async def _write(self, fn: Callable[[UnitOfWork], T]) -> T:
        return await self.units.commit(lambda work: fn(work.tx))

    # --- for people --------------------------------------------------------------

    async def add(
        self, url: str, intent: str, tags: Sequence[str] = ()
    ) -> tuple[Feed, bool, Probed | None]:
        """Follow a feed (created: True), or the same feed again (False); and what
        fetching it found (None when it was followed already, or there is no probe).

        A new URL is fetched once first: one that is no feed is refused, and a web page
        that names its feed leads to that feed, which is followed instead."""
        canonical, text, clean = _checked(url, intent, tags)
        found = await self.units.read(lambda tx: tx.feed_by_url(canonical))
        probed: Probed | None = None
        if found is None and self._probe is not None:
            probed = await self._probe(canonical)
            canonical, text, clean = _checked(probed.url, intent, tags)
        now = self.clock.now_ms()
        row = FeedRow(
            id=ids.ulid(now),
            url=canonical,
            intent=text,
            tags=dumps(clean),
            title=probed.title[:500] if probed and probed.title else None,
            etag=None,
            last_modified=None,
            created_at=now,
            next_poll_at=now,
            last_polled_at=None,
            last_ok_at=None,
            failures=0,
            last_error_code=None,
            last_error=None,
            entries_captured=0,
        )

        def unit(tx: UnitOfWork) -> tuple[FeedRow, bool]:
            if tx.insert_feed(row):
                return row, True
            found = tx.feed_by_url(canonical)
            assert found is not None
            return found, False

        got, created = await self._write(unit)
        if not created and (got.intent != text or got.tags != row.tags):
            raise IdempotencyConflict(
                f"{canonical} is followed already (feed {got.id}) with intent {got.intent!r};"
                f" `readdod feed rm {got.id}` first to follow it otherwise"
            )
        if created:
            for callback in self._added:
                callback()
        return feed_view(got), created, probed

    async def all(self) -> list[Feed]:
        return [feed_view(r) for r in await self.units.read(lambda tx: tx.feeds())]

    async def remove(self, ref: str) -> Feed:
        """Stop following a feed, named by its id or its URL; its items stay."""

        def unit(tx: UnitOfWork) -> FeedRow | None:
            found = tx.feed(ref)
            if found is None:
                try:
                    found = tx.feed_by_url(urls.canonical(ref.strip()))
                except urls.BadURL:
                    found = None
            if found is not None:
                tx.delete_feed(found.id)
            return found

        gone = await self._write(unit)
        if gone is None:
            raise NotFound(f"no feed {ref!r}; `readdod feed ls` lists the feeds followed")
        return feed_view(gone)

    async def failing(self, threshold: int) -> list[Feed]:
        """Feeds whose last ``threshold`` polls or more failed in a row."""
        rows = await self.units.read(lambda tx: tx.feeds())
        return [feed_view(r) for r in rows if r.failures >= threshold]

    # --- for the feed loop -------------------------------------------------------

    async def due(self, limit: int) -> list[FeedRow]:
        now = self.clock.now_ms()
        return await self.units.read(lambda tx: tx.feeds_due(now, limit))

    async def next_due(self) -> int | None:
        return await self.units.read(lambda tx: tx.next_feed_poll())

    async def made_here(self, feed_url: str, item_id: str) -> bool:
        """Whether an entry of the feed at ``feed_url`` made the item (its capture's
        origin names the feed): the entry's link was another entry's page."""
        source = f"feed:{feed_url}"

        def read(tx: UnitOfWork) -> bool:
            for event in tx.events_for(item_id):
                if event.kind != "capture":
                    continue
                try:
                    detail = msgspec.json.decode(event.detail)
                except msgspec.DecodeError:
                    return False
                origin = detail.get("origin") if isinstance(detail, dict) else None
                return isinstance(origin, dict) and origin.get("source") == source
            return False

        return await self.units.read(read)

    async def seen(self, feed_id: str, keys: Sequence[str]) -> set[str]:
        return await self.units.read(lambda tx: tx.feed_entries_seen(feed_id, keys))

    async def captured(
        self, feed_id: str, key: str, item_id: str | None, *, made: bool = False
    ) -> None:
        """Remember one entry as captured (at once, so a poll cut short loses nothing);
        ``made``: it is an item of its own, counted in ``entries_captured`` (once, with
        the entry, so the count is the items the feed made however its polls ended)."""
        now = self.clock.now_ms()

        def unit(tx: UnitOfWork) -> None:
            row = tx.feed(feed_id)
            if row is None or tx.feed_entries_seen(feed_id, [key]):
                return
            tx.add_feed_entry(feed_id, key, item_id, now)
            if made:
                tx.set_feed(feed_id, entries_captured=row.entries_captured + 1)

        await self._write(unit)

    async def polled(
        self,
        feed_id: str,
        *,
        next_at: int,
        title: str | None = None,
        validators: tuple[str | None, str | None] | None = None,
    ) -> None:
        """A good poll (a new document or 304): failures reset. ``validators``: the
        (ETag, Last-Modified) to send next time; None keeps the ones there are."""
        now = self.clock.now_ms()

        def unit(tx: UnitOfWork) -> None:
            row = tx.feed(feed_id)
            if row is None:
                return  # removed while it was polled
            fields: dict[str, object] = {
                "next_poll_at": next_at,
                "last_polled_at": now,
                "last_ok_at": now,
                "failures": 0,
                "last_error_code": None,
                "last_error": None,
            }
            if title:
                fields["title"] = title[:500]
            if validators is not None:
                fields["etag"], fields["last_modified"] = validators
            tx.set_feed(feed_id, **fields)

        await self._write(unit)

    async def failed(self, feed_id: str, *, code: str, message: str, next_at: int) -> int:
        """A failed poll: counted, said, and the next one put off. Its failures in a row."""
        now = self.clock.now_ms()

        def unit(tx: UnitOfWork) -> int:
            row = tx.feed(feed_id)
            if row is None:
                return 0
            tx.set_feed(
                feed_id,
                next_poll_at=next_at,
                last_polled_at=now,
                failures=row.failures + 1,
                last_error_code=code,
                last_error=message[:1000],
            )
            return row.failures + 1

        return await self._write(unit)
