"""The feed loop: poll each followed feed when it is due, capture its new entries once.

A poll is a conditional GET (the feed's ETag and Last-Modified), so an
unchanged feed costs one small 304. Entries are read from the bytes
(:mod:`readdod.capture.feeds`); those the feed showed before are skipped by
their key, and each new one is captured through the core like any capture,
with a capture_id derived from the feed and the entry, and remembered at
once, so a poll cut short captures nothing twice. A feed that fails waits
longer after each failure (:func:`readdod.core.feeds.next_poll`), and says
why in ``feed ls`` and ``health``. Time comes from the injected clock.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import msgspec
from anyio.abc import TaskStatus

from readdod.capture.feeds import FeedEntry, NotAFeed, capture_id, parse
from readdod.clock import Clock
from readdod.config import FeedsConfig
from readdod.core.commands import Commands
from readdod.core.feeds import Feeds, next_poll
from readdod.errors import (
    ErrorCode,
    ExtractionError,
    IdempotencyConflict,
    ReaddodError,
    RequestError,
    ShuttingDown,
)
from readdod.extraction.fetch import FetchClient, fetch_feed
from readdod.logging import get_logger
from readdod.models import CaptureOrigin, CaptureRequest
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
        doc = await fetch_feed(
            feed.url, client=self.http, etag=feed.etag, last_modified=feed.last_modified
        )
        if doc.not_modified:
            await self.feeds.polled(feed.id, next_at=self._next(0), captured=0)
            log.info("feed.polled", feed_id=feed.id, url=feed.url, not_modified=True, captured=0)
            return
        parsed = await anyio.to_thread.run_sync(parse, doc.data, doc.final_url)
        seen = await self.feeds.seen(feed.id, [e.key for e in parsed.entries])
        fresh = [e for e in parsed.entries if e.key not in seen]
        captured = 0
        cap = self.cfg.max_entries_per_poll
        for entry in fresh[:cap]:
            captured += await self._capture(feed, entry)
        # Entries left for the next poll: ask for the whole feed then, not "if changed".
        left = len(fresh) > cap
        await self.feeds.polled(
            feed.id,
            next_at=self._next(0),
            captured=captured,
            title=parsed.title,
            validators=(None, None) if left else (doc.etag, doc.last_modified),
        )
        log.info(
            "feed.polled",
            feed_id=feed.id,
            url=feed.url,
            not_modified=False,
            entries=len(parsed.entries),
            new=len(fresh),
            captured=captured,
            skipped=parsed.skipped,
            final_url=doc.final_url if doc.final_url != feed.url else None,
        )

    async def _capture(self, feed: FeedRow, entry: FeedEntry) -> int:
        """Capture one entry; 1 if that made a new item. Remembered as seen either way,
        unless the daemon is stopping (the next poll tries it again)."""
        req = CaptureRequest(
            intent=feed.intent,
            url=entry.url[:URL_MAX],
            title=entry.title[:TITLE_MAX] if entry.title else None,
            tags=msgspec.json.decode(feed.tags, type=list[str]),
            capture_id=capture_id(feed.id, entry.key),
            origin=CaptureOrigin(source=f"feed:{feed.url}", saved_at=entry.published),
        )
        item_id: str | None = None
        created = False
        try:
            item, created = await self.commands.capture(req)
            item_id = item.id
        except IdempotencyConflict:
            pass  # captured before, with other details: the entry is in readdod
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
        await self.feeds.captured(feed.id, entry.key, item_id)
        return int(created)
