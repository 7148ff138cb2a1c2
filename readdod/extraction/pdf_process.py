"""A PDF read in a child process bounded in CPU time and memory (:mod:`.child`).

pypdf is pure Python: a hostile file (pages sharing one huge content stream,
a font program that takes a minute to walk) keeps a thread busy with the
interpreter lock held, and every other task of the daemon waits. So each
document is read by ``python -m readdod.extraction.pdf_process`` with
``RLIMIT_CPU`` at the budget and ``RLIMIT_AS`` at the memory limit.

The child answers one msgpack message on stdout: the :class:`Extraction`, or
the error it was refused with.
"""

from __future__ import annotations

import sys
from typing import Final, Literal

import msgspec

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction import child
from readdod.items.models import Extraction

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
MODULE: Final = "readdod.extraction.pdf_process"

Source = Literal["fetched", "provided_html", "provided_text"]


class PdfLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What one document may cost: text characters, CPU seconds, memory."""

    max_chars: int
    cpu_s: float = DEFAULT_CPU_S
    memory_mb: int = DEFAULT_MEMORY_MB

    @property
    def bounds(self) -> child.Bounds:
        return child.Bounds(
            cpu_s=self.cpu_s,
            memory_mb=self.memory_mb,
            cpu_setting="fetch.pdf_cpu_s",
            memory_setting="fetch.pdf_memory_mb",
        )

    @property
    def wall_s(self) -> float:
        return self.bounds.wall_s


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


def _judge(where: str, limits: PdfLimits, ended: child.Ended) -> Extraction:
    """The child's answer as an extraction, or the refusal that fits how it ended."""
    how = f"ended with status {ended.returncode}"
    if ended.returncode == 0:
        try:
            answer = msgspec.msgpack.decode(ended.out, type=_Answer)
        except msgspec.DecodeError:
            answer = _Answer()
            how = "answered what readdod cannot read"
        else:
            how = "answered nothing"
        if answer.extraction is not None:
            return answer.extraction
        if answer.refusal is not None:
            r = answer.refusal
            raise ExtractionError(
                r.message, code=ErrorCode(r.code), retryable=r.retryable, debug=r.debug
            )
    raise ended.refusal(
        where,
        "one document",
        limits.bounds,
        how,
        retryable=False,
        hint=" The file may be damaged.",
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
    return _judge(where, limits, await child.run(MODULE, job, limits.bounds, where))


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
    return _judge(where, limits, child.run_blocking(MODULE, job, limits.bounds, where))


def _answer(raw: bytes) -> bytes:
    job = msgspec.msgpack.decode(raw, type=_Job)
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
    return msgspec.msgpack.encode(answer)


if __name__ == "__main__":
    raise SystemExit(child.serve(sys.argv[1:], _answer))
