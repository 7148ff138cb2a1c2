"""A feed read in a child process bounded in CPU time and memory (:mod:`readdod.extraction.child`).

feedparser is pure Python: a document of a hundred thousand entries, or one
entry of millions of tiny elements, keeps a thread busy for a minute with the
interpreter lock held. So each poll's document is read by
``python -m readdod.capture.feed_process`` with ``RLIMIT_CPU`` at
``feeds.parse_cpu_s`` and ``RLIMIT_AS`` at ``feeds.parse_memory_mb``. What
the child reads is already bounded (``feeds.max_bytes``, and only the first
``feeds.max_entries_read`` entries: :func:`readdod.capture.feeds.first_entries`);
the budget is for what those bounds cannot see.

The child answers one msgpack message: the :class:`ParsedFeed`, or why the
bytes are no feed.
"""

from __future__ import annotations

import sys

import msgspec

from readdod.capture.feeds import NotAFeed, ParsedFeed, parse
from readdod.extraction import child

MODULE = "readdod.capture.feed_process"


class FeedLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What reading one document may cost."""

    max_entries: int
    cpu_s: float
    memory_mb: int

    @property
    def bounds(self) -> child.Bounds:
        return child.Bounds(
            cpu_s=self.cpu_s,
            memory_mb=self.memory_mb,
            cpu_setting="feeds.parse_cpu_s",
            memory_setting="feeds.parse_memory_mb",
        )

    @property
    def wall_s(self) -> float:
        return self.bounds.wall_s


class _Job(msgspec.Struct, frozen=True, kw_only=True):
    data: bytes
    url: str
    content_type: str | None
    max_entries: int


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    feed: ParsedFeed | None = None
    not_a_feed: str | None = None
    found: str | None = None


def _judge(url: str, limits: FeedLimits, ended: child.Ended) -> ParsedFeed:
    how = f"ended with status {ended.returncode}"
    if ended.returncode == 0:
        try:
            answer = msgspec.msgpack.decode(ended.out, type=_Answer)
        except msgspec.DecodeError:
            answer = _Answer()
        if answer.feed is not None:
            return answer.feed
        if answer.not_a_feed is not None:
            raise NotAFeed(answer.not_a_feed, answer.found)
        how = "answered nothing readdod can read"
    raise ended.refusal(f"the feed {url}", "one poll", limits.bounds, how, retryable=True)


async def parse_isolated(
    data: bytes, url: str, *, content_type: str | None, limits: FeedLimits
) -> ParsedFeed:
    """:func:`readdod.capture.feeds.parse` in a child process; cancelling kills it at once."""
    job = msgspec.msgpack.encode(
        _Job(data=data, url=url, content_type=content_type, max_entries=limits.max_entries)
    )
    ended = await child.run(MODULE, job, limits.bounds, f"the feed {url}")
    return _judge(url, limits, ended)


def _answer(raw: bytes) -> bytes:
    job = msgspec.msgpack.decode(raw, type=_Job)
    try:
        answer = _Answer(
            feed=parse(
                job.data, job.url, content_type=job.content_type, max_entries=job.max_entries
            )
        )
    except NotAFeed as exc:
        answer = _Answer(not_a_feed=str(exc), found=exc.found)
    return msgspec.msgpack.encode(answer)


if __name__ == "__main__":
    raise SystemExit(child.serve(sys.argv[1:], _answer))
