"""A feed read in a child process, bounded in CPU time and memory, so it cannot hold the daemon.

feedparser is pure Python: a document of a hundred thousand entries, or one
entry of millions of tiny elements, keeps a thread busy for a minute with the
interpreter lock held. So each poll's document is read by
``python -m readdod.capture.feed_process`` with ``RLIMIT_CPU`` at
``feeds.parse_cpu_s`` and ``RLIMIT_AS`` at ``feeds.parse_memory_mb``; the
parent kills it at a wall-clock deadline too, or at once when the poll is
cancelled, and only waits on pipes meanwhile. What the child reads is already
bounded (``feeds.max_bytes``, and only the first ``feeds.max_entries_read``
entries: :func:`readdod.capture.feeds.first_entries`); the budget is for what
those bounds cannot see.

The child answers one msgpack message: the :class:`ParsedFeed`, or why the
bytes are no feed. A child that dies without answering is judged by how it
died: over its budget it is ``EXTRACTION_TOO_LARGE``, else
``EXTRACTION_PARSE_FAILED``; never an internal error.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Final

import anyio
import msgspec

from readdod.capture.feeds import NotAFeed, ParsedFeed, parse
from readdod.errors import ErrorCode, ExtractionError

#: The wall-clock deadline: this many times the CPU budget, plus a start-up allowance
#: (a loaded machine gives the child less than one core).
_WALL_FACTOR: Final = 4.0
_WALL_EXTRA_S: Final = 20.0
_STDERR_TAIL: Final = 4096


class FeedLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What reading one document may cost."""

    max_entries: int
    cpu_s: float
    memory_mb: int

    @property
    def wall_s(self) -> float:
        return self.cpu_s * _WALL_FACTOR + _WALL_EXTRA_S


class _Job(msgspec.Struct, frozen=True, kw_only=True):
    data: bytes
    url: str
    content_type: str | None
    max_entries: int


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    feed: ParsedFeed | None = None
    not_a_feed: str | None = None
    found: str | None = None


def _command(limits: FeedLimits) -> list[str]:
    return [
        sys.executable,
        "-P",  # not the working directory on the import path: only readdod's own modules
        "-m",
        "readdod.capture.feed_process",
        str(limits.cpu_s),
        str(limits.memory_mb),
    ]


def _judge(
    url: str, limits: FeedLimits, returncode: int | None, out: bytes, err: bytes
) -> ParsedFeed:
    if returncode == 0:
        try:
            answer = msgspec.msgpack.decode(out, type=_Answer)
        except msgspec.DecodeError:
            answer = _Answer()
        if answer.feed is not None:
            return answer.feed
        if answer.not_a_feed is not None:
            raise NotAFeed(answer.not_a_feed, answer.found)
        how = "answered nothing readdod can read"
    elif returncode in (-signal.SIGXCPU, -signal.SIGKILL, None):
        raise ExtractionError(
            f"the feed {url} took more than {limits.cpu_s:g} s of CPU to read and was stopped;"
            " readdod gives one poll at most that (feeds.parse_cpu_s).",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
            debug=f"returncode={returncode}",
        )
    elif b"MemoryError" in err:
        raise ExtractionError(
            f"the feed {url} needs more than {limits.memory_mb} MiB of memory to read;"
            " readdod gives one poll at most that (feeds.parse_memory_mb).",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
            debug=err[-_STDERR_TAIL:].decode("utf-8", "replace"),
        )
    else:
        how = f"ended with status {returncode}"
    raise ExtractionError(
        f"the feed {url} could not be read: the process reading it {how}.",
        code=ErrorCode.EXTRACTION_PARSE_FAILED,
        retryable=True,
        debug=err[-_STDERR_TAIL:].decode("utf-8", "replace"),
    )


async def parse_isolated(
    data: bytes, url: str, *, content_type: str | None, limits: FeedLimits
) -> ParsedFeed:
    """:func:`readdod.capture.feeds.parse` in a child process; cancelling kills it at once."""
    job = msgspec.msgpack.encode(
        _Job(data=data, url=url, content_type=content_type, max_entries=limits.max_entries)
    )
    out = bytearray()
    err = bytearray()
    try:
        process = await anyio.open_process(
            _command(limits), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise ExtractionError(
            f"the feed {url} could not be read: no process could be started to read it ({exc}).",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc
    returncode: int | None = None
    try:
        with anyio.move_on_after(limits.wall_s):
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

            async def feed() -> None:
                try:
                    await stdin.send(job)
                    await stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the child ended early; how it ended says why

            async def drain_out() -> None:
                async for chunk in stdout:
                    out.extend(chunk)

            async def drain_err() -> None:
                async for chunk in stderr:
                    err.extend(chunk)
                    del err[:-_STDERR_TAIL]

            async with anyio.create_task_group() as tg:
                tg.start_soon(feed)
                tg.start_soon(drain_out)
                tg.start_soon(drain_err)
            returncode = await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()
    return _judge(url, limits, returncode, bytes(out), bytes(err))


def _limit_self(cpu_s: float, memory_mb: int) -> None:
    import resource

    soft = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 2))
    size = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


def _main(argv: list[str]) -> int:
    """The child: limits first, then one job from stdin, one answer to stdout."""
    _limit_self(float(argv[0]), int(argv[1]))
    job = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=_Job)
    try:
        answer = _Answer(
            feed=parse(
                job.data, job.url, content_type=job.content_type, max_entries=job.max_entries
            )
        )
    except NotAFeed as exc:
        answer = _Answer(not_a_feed=str(exc), found=exc.found)
    sys.stdout.buffer.write(msgspec.msgpack.encode(answer))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
