"""A PDF read in a child process, bounded in CPU time and memory, so it cannot hold the daemon.

pypdf is pure Python: a hostile file (pages sharing one huge content stream,
a font program that takes a minute to walk) keeps a thread busy with the
interpreter lock held, and every other task of the daemon waits. So each
document is read by ``python -m readdod.extraction.pdf_process`` with
``RLIMIT_CPU`` at the budget (the kernel ends it there) and ``RLIMIT_AS`` at
the memory limit; the parent also kills it at a wall-clock deadline, or at
once when the step is cancelled. The parent only waits on pipes, so the
event loop stays free the whole time.

The child answers one msgpack message on stdout: the :class:`Extraction`, or
the error it was refused with. A child that dies without answering is
judged by how it died: over its CPU budget or memory it is
``EXTRACTION_TOO_LARGE``, anything else ``EXTRACTION_PARSE_FAILED``; never an
internal error.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Final, Literal

import anyio
import msgspec

from readdod.errors import ErrorCode, ExtractionError
from readdod.models import Extraction

__all__ = [
    "DEFAULT_CPU_S",
    "DEFAULT_MEMORY_MB",
    "PdfLimits",
    "extract_pdf_bounded",
    "extract_pdf_isolated",
]

#: CPU seconds one document may take (``fetch.pdf_cpu_s``).
DEFAULT_CPU_S: Final = 30.0
#: Address space one reading process may map (``fetch.pdf_memory_mb``).
DEFAULT_MEMORY_MB: Final = 1024
#: The wall-clock deadline is this many times the CPU budget, plus a start-up allowance:
#: a loaded machine gives the child less than one core.
_WALL_FACTOR: Final = 4.0
_WALL_EXTRA_S: Final = 20.0
#: The last bytes of the child's stderr kept for the log.
_STDERR_TAIL: Final = 4096

Source = Literal["fetched", "provided_html", "provided_text"]


class PdfLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What one document may cost: text characters, CPU seconds, memory."""

    max_chars: int
    cpu_s: float = DEFAULT_CPU_S
    memory_mb: int = DEFAULT_MEMORY_MB

    @property
    def wall_s(self) -> float:
        return self.cpu_s * _WALL_FACTOR + _WALL_EXTRA_S


class _Job(msgspec.Struct, frozen=True, kw_only=True):
    data: bytes
    url: str | None
    max_chars: int
    source: Source
    http_status: int | None = None
    final_url: str | None = None
    fetched_at: str | None = None


class _Refusal(msgspec.Struct, frozen=True, kw_only=True):
    message: str
    code: str
    retryable: bool
    debug: str | None = None


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    extraction: Extraction | None = None
    refusal: _Refusal | None = None


def _command(limits: PdfLimits) -> list[str]:
    return [
        sys.executable,
        "-P",  # not the working directory on the import path: only readdod's own modules
        "-m",
        "readdod.extraction.pdf_process",
        str(limits.cpu_s),
        str(limits.memory_mb),
    ]


def _judge(
    where: str, limits: PdfLimits, returncode: int | None, out: bytes, err: bytes
) -> Extraction:
    """The child's answer as an extraction, or the refusal that fits how it ended."""
    if returncode == 0:
        try:
            answer = msgspec.msgpack.decode(out, type=_Answer)
        except msgspec.DecodeError as exc:
            raise _died(where, "answered what readdod cannot read", err) from exc
        if answer.extraction is not None:
            return answer.extraction
        if answer.refusal is not None:
            r = answer.refusal
            raise ExtractionError(
                r.message, code=ErrorCode(r.code), retryable=r.retryable, debug=r.debug
            )
        raise _died(where, "answered nothing", err)
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL, None):
        raise ExtractionError(
            f"{where} took more than {limits.cpu_s:g} s of CPU to read and was stopped;"
            " readdod gives one document at most that (fetch.pdf_cpu_s).",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
            debug=f"returncode={returncode}",
        )
    if b"MemoryError" in err:
        raise ExtractionError(
            f"{where} needs more than {limits.memory_mb} MiB of memory to read; readdod gives"
            " one document at most that (fetch.pdf_memory_mb).",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
            debug=err[-_STDERR_TAIL:].decode("utf-8", "replace"),
        )
    raise _died(where, f"ended with status {returncode}", err)


def _died(where: str, how: str, err: bytes) -> ExtractionError:
    return ExtractionError(
        f"{where} could not be read: the process reading it {how}. The file may be damaged.",
        code=ErrorCode.EXTRACTION_PARSE_FAILED,
        retryable=False,
        debug=err[-_STDERR_TAIL:].decode("utf-8", "replace"),
    )


def _job(
    data: bytes,
    url: str | None,
    limits: PdfLimits,
    source: Source,
    http_status: int | None,
    final_url: str | None,
    fetched_at: str | None,
) -> bytes:
    return msgspec.msgpack.encode(
        _Job(
            data=data,
            url=url,
            max_chars=limits.max_chars,
            source=source,
            http_status=http_status,
            final_url=final_url,
            fetched_at=fetched_at,
        )
    )


async def extract_pdf_isolated(
    data: bytes,
    url: str | None = None,
    *,
    limits: PdfLimits,
    source: Source = "fetched",
    http_status: int | None = None,
    final_url: str | None = None,
    fetched_at: str | None = None,
) -> Extraction:
    """:func:`readdod.extraction.pdf.extract_pdf` in a child process, for the daemon.

    Cancelling the caller kills the child at once.
    """
    where = url or "the PDF"
    job = _job(data, url, limits, source, http_status, final_url, fetched_at)
    out = bytearray()
    err = bytearray()
    try:
        process = await anyio.open_process(
            _command(limits),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise ExtractionError(
            f"{where} could not be read: no process could be started to read it ({exc}).",
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
            stdout, stderr = process.stdout, process.stderr

            async def feed() -> None:
                try:
                    await process.stdin.send(job)  # type: ignore[union-attr]
                    await process.stdin.aclose()  # type: ignore[union-attr]
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
    return _judge(where, limits, returncode, bytes(out), bytes(err))


def extract_pdf_bounded(
    data: bytes,
    url: str | None = None,
    *,
    limits: PdfLimits,
    source: Source = "provided_text",
) -> Extraction:
    """The same, blocking, for a command line (``capture --pdf``)."""
    where = url or "the PDF"
    job = _job(data, url, limits, source, None, None, None)
    try:
        done = subprocess.run(
            _command(limits),
            input=job,
            capture_output=True,
            timeout=limits.wall_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _judge(where, limits, None, b"", b"")
    except OSError as exc:
        raise ExtractionError(
            f"{where} could not be read: no process could be started to read it ({exc}).",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc
    return _judge(where, limits, done.returncode, done.stdout, done.stderr)


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
    from readdod.extraction.pdf import extract_pdf

    try:
        extraction = extract_pdf(
            job.data,
            job.url,
            max_chars=job.max_chars,
            source=job.source,
            http_status=job.http_status,
            final_url=job.final_url,
            fetched_at=job.fetched_at,
        )
        answer = _Answer(extraction=extraction)
    except ExtractionError as exc:
        answer = _Answer(
            refusal=_Refusal(
                message=exc.message, code=exc.code.value, retryable=exc.retryable, debug=exc.debug
            )
        )
    sys.stdout.buffer.write(msgspec.msgpack.encode(answer))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
