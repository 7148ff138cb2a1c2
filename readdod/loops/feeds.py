"""The feed loop: poll each followed feed when it is due, capture its new entries once.

A poll is a conditional GET (the feed's ETag and Last-Modified, kept only
when they are clean), so an unchanged feed costs one small 304. Entries are
read from the bytes, at most ``feeds.max_bytes`` of them and the first
``feeds.max_entries_read`` entries, in a child process bounded in CPU and
memory (:mod:`readdod.capture.feed_process`); those the feed showed before
are skipped by their key, and each new one is captured through the core
like any capture, with a capture_id derived from the feed and the entry,
and remembered at once, so a poll cut short captures nothing twice. An
entry whose link is not its own page (shared with other entries, or the
feed's home, or the page another entry of the feed became) is captured with
its own content, so each entry is an item of its own. A feed that fails
waits longer after each failure (:func:`readdod.core.feeds.next_poll`), and
says why in ``feed ls`` and ``health``. Time comes from the injected clock.

:meth:`FeedPoller.probe` is what ``feed add`` asks first: the URL fetched
once, and a web page's own feed found (``<link rel="alternate">``).
"""

from __future__ import annotations

import anyio
import msgspec
from anyio.abc import TaskStatus

from readdod.capture.feed_process import FeedLimits, parse_isolated
from readdod.capture.feeds import (
    CAPTURE_ID_PREFIX,
    FeedEntry,
    NotAFeed,
    ParsedFeed,
    capture_id,
    entry_html,
)
from readdod.core.commands import Commands
from readdod.core.feeds import Feeds, Probed, next_poll
from readdod.errors import (
    ErrorCode,
    ExtractionError,
    IdempotencyConflict,
    ReaddodError,
    RequestError,
    ShuttingDown,
    SourceRefused,
    UnsupportedContent,
)
from readdod.extraction.fetch import FeedDocument, FetchClient, fetch_feed
from readdod.items.models import CaptureOrigin, CaptureRequest
from readdod.runtime.clock import Clock
from readdod.runtime.logging import get_logger
from readdod.settings.config import FeedsConfig
from readdod.store.rows import FeedRow

log = get_logger("readdod.feeds")

#: The longest sleep: a safety net should a wake-up ever be missed.
MAX_SLEEP_S = 60.0
#: The shortest sleep between passes, so a clock that disagrees with the database
#: cannot spin the loop.
MIN_SLEEP_S = 0.05
TITLE_MAX = 500
URL_MAX = 8_192


class FeedPoller:
    def __init__(
        self,
        feeds: Feeds,
        commands: Commands,
        http: FetchClient,
        cfg: FeedsConfig,
        clock: Clock,
        *,
        max_sleep_s: float = MAX_SLEEP_S,
    ) -> None:
        self.feeds = feeds
        self.commands = commands
        self.http = http
        self.cfg = cfg
        self.clock = clock
        self.max_sleep_s = max_sleep_s
        self._wake = anyio.Event()
        feeds.on_added(self.wake)
        feeds.use_probe(self.probe)

    @property
    def limits(self) -> FeedLimits:
        cfg = self.cfg
        return FeedLimits(
            max_entries=cfg.max_entries_read, cpu_s=cfg.parse_cpu_s, memory_mb=cfg.parse_memory_mb
        )

    def _max_bytes(self) -> int:
        return min(self.cfg.max_bytes, self.http.config.max_bytes)

    async def _read(
        self, url: str, etag: str | None = None, last_modified: str | None = None
    ) -> tuple[FeedDocument, ParsedFeed | None]:
        """Fetch ``url`` once (conditionally) and read it within the bounds; a feed larger
        than ``feeds.max_bytes`` says so."""
        try:
            doc = await fetch_feed(
                url,
                client=self.http,
                etag=etag,
                last_modified=last_modified,
                max_bytes=self._max_bytes(),
            )
        except ExtractionError as exc:
            if exc.code is not ErrorCode.EXTRACTION_TOO_LARGE:
                raise
            raise ExtractionError(
                f"the feed {url} is larger than {self._max_bytes():,} bytes, the most readdod"
                " fetches of a feed (feeds.max_bytes, at most fetch.max_bytes); raise it to"
                " follow this feed",
                code=ErrorCode.EXTRACTION_TOO_LARGE,
                retryable=False,
            ) from None
        if doc.not_modified:
            return doc, None
        parsed = await parse_isolated(
            doc.data, doc.final_url, content_type=doc.content_type, limits=self.limits
        )
        return doc, parsed

    async def probe(self, url: str) -> Probed:
        """What ``feed add`` checks first: ``url`` fetched once and read as a feed; a web
        page that names its feed (``<link rel="alternate">``) leads to that feed, read
        in turn. Refused (:class:`SourceRefused`, :class:`UnsupportedContent`) otherwise."""
        found_on: str | None = None
        try:
            try:
                doc, parsed = await self._read(url)
            except NotAFeed as exc:
                if exc.found is None:
                    raise
                found_on, url = url, exc.found
                doc, parsed = await self._read(url)
        except NotAFeed as exc:
            raise UnsupportedContent(
                f"{exc}; `feed add` takes an RSS, Atom or JSON feed, or a web page naming one"
                ' in <link rel="alternate">'
            ) from None
        except ExtractionError as exc:
            raise SourceRefused(
                f"{url} could not be followed: {exc.message}", code=exc.code
            ) from None
        assert parsed is not None
        return Probed(
            url=doc.final_url if found_on else url,
            found_on=found_on,
            title=parsed.title,
            entries=len(parsed.entries),
        )

    def wake(self) -> None:
        self._wake.set()

    def sleep_for(self, next_due_ms: int | None) -> float:
        """Seconds until ``next_due_ms`` by the injected clock, bounded."""
        if next_due_ms is None:
            return self.max_sleep_s
        left = (next_due_ms - self.clock.now_ms()) / 1000
        return min(max(left, MIN_SLEEP_S), self.max_sleep_s)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._wake = anyio.Event()
            batch = self.cfg.concurrency * 4
            try:
                polled = await self.poll_due(batch)
                next_due = await self.feeds.next_due()
            except ReaddodError as exc:
                log.warning("feed.scan_failed", error_code=exc.error_code, error=exc.message)
                polled, next_due = 0, None
            if polled >= batch:
                continue
            with anyio.move_on_after(self.sleep_for(next_due)):
                await self._wake.wait()

    async def poll_due(self, limit: int) -> int:
        """Poll every feed due now (at most ``limit``), ``cfg.concurrency`` at a time."""
        due = await self.feeds.due(limit)
        if not due:
            return 0
        limiter = anyio.CapacityLimiter(self.cfg.concurrency)

        async def one(feed: FeedRow) -> None:
            async with limiter:
                await self.poll(feed)

        async with anyio.create_task_group() as tg:
            for feed in due:
                tg.start_soon(one, feed)
        return len(due)

    def _next(self, failures: int) -> int:
        return next_poll(
            self.clock.now_ms(),
            interval_s=self.cfg.interval_s,
            failures=failures,
            max_backoff_s=self.cfg.max_backoff_s,
        )

    async def poll(self, feed: FeedRow) -> None:
        """One poll of ``feed``; whatever goes wrong is the feed's failure, never the loop's."""
        try:
            await self._poll(feed)
            return
        except ShuttingDown:
            return  # the daemon is stopping: nothing to record, the next start polls again
        except (ExtractionError, RequestError) as exc:
            code, message = exc.error_code, exc.message
        except NotAFeed as exc:
            code, message = ErrorCode.EXTRACTION_PARSE_FAILED.value, str(exc)
        except Exception as exc:
            log.exception("feed.poll_crashed", feed_id=feed.id, url=feed.url)
            code, message = ErrorCode.INTERNAL_ERROR.value, f"{type(exc).__name__}: {exc}"
        try:
            await self._failed(feed, code, message)
        except ReaddodError as exc:
            # The database refused even that: the feed stays due and is tried at the next pass.
            log.warning("feed.scan_failed", error_code=exc.error_code, error=exc.message)

    async def _failed(self, feed: FeedRow, code: str, message: str) -> None:
        failures = feed.failures + 1
        next_at = self._next(failures)
        await self.feeds.failed(feed.id, code=code, message=message, next_at=next_at)
        log.warning(
            "feed.failed",
            feed_id=feed.id,
            url=feed.url,
            error_code=code,
            error=message,
            failures=failures,
            next_poll_in_s=round((next_at - self.clock.now_ms()) / 1000, 3),
        )

    async def _poll(self, feed: FeedRow) -> None:
        doc, parsed = await self._read(feed.url, feed.etag, feed.last_modified)
        if parsed is None:
            await self.feeds.polled(feed.id, next_at=self._next(0))
            log.info("feed.polled", feed_id=feed.id, url=feed.url, not_modified=True, captured=0)
            return
        keys = [e.key for e in parsed.entries]
        keys += [e.legacy_key for e in parsed.entries if e.legacy_key]
        seen = await self.feeds.seen(feed.id, keys)
        fresh = [e for e in parsed.entries if e.key not in seen and e.legacy_key not in seen]
        captured = 0
        cap = self.cfg.max_entries_per_poll
        for entry in fresh[:cap]:
            captured += await self._capture(feed, entry, parsed.title)
        # Entries left for the next poll: ask for the whole feed then, not "if changed".
        left = len(fresh) > cap
        await self.feeds.polled(
            feed.id,
            next_at=self._next(0),
            title=parsed.title,
            validators=(None, None) if left else (doc.etag, doc.last_modified),
        )
        log.info(
            "feed.polled",
            feed_id=feed.id,
            url=feed.url,
            not_modified=False,
            entries=len(parsed.entries),
            cut=parsed.cut,
            new=len(fresh),
            captured=captured,
            skipped=parsed.skipped,
            final_url=doc.final_url if doc.final_url != feed.url else None,
        )

    def _request(self, feed: FeedRow, entry: FeedEntry, own: str | None) -> CaptureRequest:
        return CaptureRequest(
            intent=feed.intent,
            url=entry.url[:URL_MAX],
            html=own,
            title=entry.title[:TITLE_MAX] if entry.title else None,
            tags=msgspec.json.decode(feed.tags, type=list[str]),
            capture_id=capture_id(feed.id, entry.key),
            origin=CaptureOrigin(source=f"feed:{feed.url}", saved_at=entry.published),
        )

    async def _capture(self, feed: FeedRow, entry: FeedEntry, feed_title: str | None) -> int:
        """Capture one entry; 1 if it is an item of its own (made now, or by a poll cut
        short). Remembered as seen either way, unless the daemon is stopping (the next
        poll tries it again).

        An entry whose link is shared is captured with its own content; so is one whose
        link the core finds already captured by another entry of this feed (the link was
        shared across polls): either way the page behind the link is not this entry. An
        item another feed made of the page is the same item, as for any capture."""
        own = entry_html(entry, feed_title)
        req = self._request(feed, entry, own if entry.shared_link else None)
        item_id: str | None = None
        made = False
        try:
            item, _ = await self.commands.capture(req)
            if (
                item.capture_id != req.capture_id
                and req.html is None
                and (item.capture_id or "").startswith(CAPTURE_ID_PREFIX)
                and await self.feeds.made_here(feed.url, item.id)
            ):
                req = self._request(feed, entry, own)
                item, _ = await self.commands.capture(req)
            item_id = item.id
            made = item.capture_id == req.capture_id
        except IdempotencyConflict:
            made = True  # its capture_id made an item before, with other details
        except ShuttingDown:
            raise
        except RequestError as exc:
            log.warning(
                "feed.entry_refused",
                feed_id=feed.id,
                url=entry.url,
                error_code=exc.error_code,
                error=exc.message,
            )
        await self.feeds.captured(feed.id, entry.key, item_id, made=made)
        return int(made)
