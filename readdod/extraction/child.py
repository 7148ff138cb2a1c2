"""A parser run in a child process bounded in CPU time and memory, so it cannot hold the daemon.

pypdf and feedparser are pure Python: a hostile document keeps a thread busy
for minutes with the interpreter lock held, and every other task of the
daemon waits. So such a document is read by ``python -m <module>``, which
sets ``RLIMIT_CPU`` and ``RLIMIT_AS`` on itself before reading
(:func:`serve`); the parent also kills it at a wall-clock deadline, or at
once when the caller is cancelled, and only waits on pipes meanwhile.

One msgpack job goes in on stdin and one answer comes out on stdout; what
they hold is the caller's (:mod:`.pdf_process`,
:mod:`readdod.capture.feed_process`). A child that dies without answering is
judged by :meth:`Ended.refusal`: over its budget it is
``EXTRACTION_TOO_LARGE``, else ``EXTRACTION_PARSE_FAILED``; never an
internal error.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Final, NamedTuple

import anyio
import msgspec

from readdod.errors import ErrorCode, ExtractionError

#: The wall-clock deadline is this many times the CPU budget, plus a start-up allowance:
#: a loaded machine gives the child less than one core.
_WALL_FACTOR: Final = 4.0
_WALL_EXTRA_S: Final = 20.0
#: The last bytes of the child's stderr kept for the log.
STDERR_TAIL: Final = 4096


class Bounds(msgspec.Struct, frozen=True, kw_only=True):
    """What one child may cost, and the settings that set it (named in refusals)."""

    cpu_s: float
    memory_mb: int
    cpu_setting: str
    memory_setting: str

    @property
    def wall_s(self) -> float:
        return self.cpu_s * _WALL_FACTOR + _WALL_EXTRA_S


class Ended(NamedTuple):
    """How a child ended: its status (None: killed at the wall-clock deadline) and output."""

    returncode: int | None
    out: bytes
    err: bytes

    @property
    def err_tail(self) -> str:
        return self.err[-STDERR_TAIL:].decode("utf-8", "replace")

    def refusal(
        self, where: str, per: str, bounds: Bounds, how: str, *, retryable: bool, hint: str = ""
    ) -> ExtractionError:
        """The error for a child that gave no answer: over budget, or ended ``how``.

        ``per`` names what the budget is given to ("one document", "one poll");
        ``retryable`` and ``hint`` are for a child that died of anything else.
        """
        if self.returncode in (-signal.SIGXCPU, -signal.SIGKILL, None):
            return ExtractionError(
                f"{where} took more than {bounds.cpu_s:g} s of CPU to read and was stopped;"
                f" readdod gives {per} at most that ({bounds.cpu_setting}).",
                code=ErrorCode.EXTRACTION_TOO_LARGE,
                retryable=False,
                debug=f"returncode={self.returncode}",
            )
        if b"MemoryError" in self.err:
            return ExtractionError(
                f"{where} needs more than {bounds.memory_mb} MiB of memory to read;"
                f" readdod gives {per} at most that ({bounds.memory_setting}).",
                code=ErrorCode.EXTRACTION_TOO_LARGE,
                retryable=False,
                debug=self.err_tail,
            )
        return ExtractionError(
            f"{where} could not be read: the process reading it {how}.{hint}",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=retryable,
            debug=self.err_tail,
        )


def _command(module: str, bounds: Bounds) -> list[str]:
    return [
        sys.executable,
        "-P",  # not the working directory on the import path: only readdod's own modules
        "-m",
        module,
        str(bounds.cpu_s),
        str(bounds.memory_mb),
    ]


def _cannot_start(where: str, exc: OSError) -> ExtractionError:
    return ExtractionError(
        f"{where} could not be read: no process could be started to read it ({exc}).",
        code=ErrorCode.EXTRACTION_PARSE_FAILED,
        retryable=True,
        debug=repr(exc),
    )


async def run(module: str, job: bytes, bounds: Bounds, where: str) -> Ended:
    """``python -m module`` fed ``job``, for the daemon; cancelling the caller kills it."""
    out = bytearray()
    err = bytearray()
    try:
        process = await anyio.open_process(
            _command(module, bounds),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise _cannot_start(where, exc) from exc
    returncode: int | None = None
    try:
        with anyio.move_on_after(bounds.wall_s):
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
                    del err[:-STDERR_TAIL]

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
    return Ended(returncode, bytes(out), bytes(err))


def run_blocking(module: str, job: bytes, bounds: Bounds, where: str) -> Ended:
    """The same, blocking, for a command line."""
    try:
        done = subprocess.run(
            _command(module, bounds),
            input=job,
            capture_output=True,
            timeout=bounds.wall_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Ended(None, b"", b"")
    except OSError as exc:
        raise _cannot_start(where, exc) from exc
    return Ended(done.returncode, done.stdout, done.stderr)


def serve(argv: list[str], answer: Callable[[bytes], bytes]) -> int:
    """The child's ``main``: limits first (from ``argv``), then one job from stdin,
    one answer to stdout."""
    import resource

    cpu_s, memory_mb = float(argv[0]), int(argv[1])
    soft = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 2))
    size = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
    sys.stdout.buffer.write(answer(sys.stdin.buffer.read()))
    sys.stdout.buffer.flush()
    return 0
