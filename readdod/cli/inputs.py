"""The files a verb reads for its argument (``FILE`` or ``-`` for standard input).

A file that cannot be read, is too large or is binary is refused here, naming
it, before anything is sent to the daemon.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from readdod.errors import (
    ErrorCode,
    ExtractionError,
    PayloadTooLarge,
    ReaddodError,
    UnsupportedContent,
)
from readdod.items import sniff
from readdod.items.models import Extraction

if TYPE_CHECKING:
    from readdod.settings.config import FetchConfig


def shown(value: str) -> str:
    """A file name as a message quotes it: whole when short, cut when it is long or odd."""
    return value if len(value) <= 120 and "\n" not in value else f"{value[:60]!r}…"


def _unreadable(value: str, exc: OSError) -> ReaddodError:
    return ReaddodError(
        f"cannot read the file {shown(value)}: {exc.strerror or exc}"
        " (--html and --text take a file name, or - for standard input)"
    )


def read_source(value: str) -> str:
    """A file's text, or standard input's for ``-``; undecodable bytes replaced."""
    if value == "-":
        return sys.stdin.read()
    try:
        return Path(value).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _unreadable(value, exc) from exc


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _read_limited(value: str, max_bytes: int) -> tuple[bytes, int]:
    """The bytes of ``FILE`` or standard input, at most ``max_bytes + 1``, with the size."""
    try:
        if value == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
            return data, len(data)
        with Path(value).open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            return (f.read(max_bytes + 1) if size <= max_bytes else b""), size
    except OSError as exc:
        raise _unreadable(value, exc) from exc


def read_capture_source(value: str, *, html: bool, max_bytes: int, verb: str = "captures") -> str:
    """The page or text of ``--html``/``--text``, decoded as a fetched page would be.

    The bytes go through the fetcher's own decoding (:func:`decode_body`: BOM,
    ``<meta charset>``, then detection), so a page saved in windows-1252 reads
    the same from a file as from its server. A file over ``max_bytes`` or one
    that is binary is refused here, naming it, before anything is sent.
    """
    from readdod.extraction.charsets import decode_body

    name = "standard input" if value == "-" else shown(value)
    data, size = _read_limited(value, max_bytes)
    if max(size, len(data)) > max_bytes:
        what = f"is {_mb(size)}" if value != "-" else f"is over {_mb(max_bytes)}"
        raise PayloadTooLarge(
            f"{name} {what}; readdod {verb} at most {_mb(max_bytes)} of"
            f" {'html' if html else 'text'} (fetch.max_bytes)"
        )
    kind = sniff.binary_kind(data)
    if kind is not None:
        pdf = " (a PDF: `readdod capture --pdf FILE`)" if kind == sniff.PDF_KIND else ""
        takes = "HTML pages (--html) and plain text (--text)" if verb == "captures" else "HTML"
        raise UnsupportedContent(
            f"{name} looks like {kind}, not {'a web page' if html else 'text'}: readdod"
            f" {verb} {takes} only{pdf}"
        )
    return decode_body(data, None)


def read_pdf_source(value: str, *, fetch: FetchConfig) -> Extraction:
    """The text, title and author of ``--pdf FILE``, extracted here (the capture carries text).

    A file over ``fetch.max_bytes``, not a PDF, damaged, without a text layer
    or over its CPU or memory budget is refused here, naming it, before
    anything is sent. It is read in a child process, as the daemon reads one.
    """
    from readdod.extraction.pdf import is_pdf
    from readdod.extraction.pdf_process import PdfLimits, extract_pdf_bounded

    max_bytes = fetch.max_bytes
    name = "standard input" if value == "-" else shown(value)
    try:
        if value == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with Path(value).open("rb") as f:
                data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ReaddodError(f"cannot read the file {name}: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise PayloadTooLarge(
            f"{name} is over {_mb(max_bytes)}; readdod reads PDFs of at most"
            f" {_mb(max_bytes)} (fetch.max_bytes)"
        )
    if not is_pdf(data):
        kind = sniff.binary_kind(data) or "text"
        raise UnsupportedContent(f"{name} is not a PDF (it looks like {kind}); --pdf takes a PDF")
    try:
        limits = PdfLimits(
            max_chars=max_bytes, cpu_s=fetch.pdf_cpu_s, memory_mb=fetch.pdf_memory_mb
        )
        return extract_pdf_bounded(data, limits=limits, source="provided_text")
    except ExtractionError as exc:
        message = exc.message.replace("the PDF", name, 1)
        if exc.code is ErrorCode.EXTRACTION_TOO_LARGE:
            raise PayloadTooLarge(message) from exc
        raise UnsupportedContent(message) from exc
