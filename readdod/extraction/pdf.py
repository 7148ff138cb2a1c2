"""The text of a PDF, with its title, author and page count (pure: bytes in).

Read with pypdf: on the documents of ``bench/pdf.py`` (headings, two columns,
a table) it recovered every word in reading order, where pdfminer.six's
layout analysis put a table's columns one after the other, and it was about
six times faster; it is pure Python with no dependencies of its own.

A PDF whose pages hold no text (a scan without OCR) is refused with
``UNSUPPORTED_CONTENT``: there is nothing to read until it is run through
OCR; one with a few words only is ``EXTRACTION_EMPTY``, saying how many. A
PDF that needs a password to open is ``UNSUPPORTED_CONTENT``; one locked by
an owner password only is read. A PDF that cannot be parsed, whatever pypdf
raises, is ``EXTRACTION_PARSE_FAILED``: no file is an internal error.

The text is counted as it is read and reading stops at ``max_chars``
(``EXTRACTION_TOO_LARGE``): pages can share one content stream, so a small
file can hold far more text than its size. Time and memory are bounded by
the process this runs in (:mod:`readdod.extraction.pdf_process`).
"""

from __future__ import annotations

import datetime
import io
import logging
import math
import re
from typing import Any, Final, Literal

import msgspec
import pypdf
from pypdf.errors import DependencyError, FileNotDecryptedError

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.extract import extract_document
from readdod.items.models import Extraction, ProvidedDocument

__all__ = [
    "DEFAULT_MAX_CHARS",
    "EXTRACTOR",
    "MAX_PAGES",
    "PDF_TYPES",
    "document_of",
    "extract_pdf",
    "is_pdf",
]

EXTRACTOR: Final = f"pypdf/{pypdf.__version__}"
#: Media types a PDF is served as.
PDF_TYPES: Final = frozenset({"application/pdf", "application/x-pdf"})
#: Pages read at most: a document past this is refused rather than read for minutes.
MAX_PAGES: Final = 2_000
#: Fewer words than this (and than one a page) is no text layer, only stray marks.
_MIN_WORDS: Final = 5
#: Text read at most by default: ``fetch.max_bytes``'s default, as ``capture --text`` takes.
DEFAULT_MAX_CHARS: Final = 10 * 1024 * 1024
#: What PDF writers put in the metadata when nobody gave a value.
_PLACEHOLDERS: Final = frozenset(
    {
        "",
        "(unspecified)",
        "unspecified",
        "anonymous",
        "untitled",
        "untitled document",
        "no title",
        "title",
        "document",
        "document1",
        "slide 1",
        "powerpoint presentation",
        "presentation",
        "layout 1",
        "unknown",
        "none",
        "null",
        "admin",
        "administrator",
        "user",
        "owner",
    }
)
#: A tool's name for the file it printed ("Microsoft Word - report.docx", "untitled.tex").
_TOOL_TITLE: Final = re.compile(
    r"^(?:microsoft (?:word|powerpoint|excel|publisher) - |untitled\b)"
    r"|\.(?:docx?|pptx?|xlsx?|rtf|odt|odp|ods|pages|tex|dvi|ps|eps|pdf|indd|qxd|qxp|pub|wpd|"
    r"html?|txt|cdr|ai|fm|p65|pm\d?)$",
    re.IGNORECASE,
)
#: A program's value printed as text (Perl's ``ARRAY(0x2c7cf020)``, ``<object at 0x…>``).
_LEAKED_VALUE: Final = re.compile(
    r"^(?:ARRAY|HASH|SCALAR|CODE|REF|GLOB)\(0x[0-9a-f]+\)$|^<.* at 0x[0-9a-f]+>$|^0x[0-9a-f]+$",
    re.IGNORECASE,
)
#: A first page's largest text is its title when it is at most this long ...
_TITLE_MAX_CHARS: Final = 250
#: ... and this much larger than the page's body text.
_TITLE_SCALE: Final = 1.15
#: The first page's text looked at for a title.
_TITLE_SCAN_CHARS: Final = 6_000

# pypdf logs every oddity of a damaged file as a warning; readdod reports one error instead.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def is_pdf(data: bytes) -> bool:
    """Whether ``data`` starts like a PDF (allowing the junk some writers put before it)."""
    return b"%PDF-" in data[:1024]


def _meta(value: object) -> str | None:
    """A metadata value a person wrote: not empty, not a placeholder, not a leaked pointer."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if text.lower() in _PLACEHOLDERS or _LEAKED_VALUE.match(text):
        return None
    return text[:500]


def _meta_title(value: object) -> str | None:
    """The metadata title, unless it is the name a tool gave the file it printed."""
    text = _meta(value)
    if text is None or _TOOL_TITLE.search(text):
        return None
    return text


class _TooMuchText(Exception):
    """Raised from inside pypdf's text walk once the text passes the limit."""


class _Reading:
    """What the walk over the pages saw: the characters so far and the first page's type sizes.

    The first page's runs with their sizes give its title: the largest type at the top of
    the page, whole, where the text's first line would cut a title set on two lines.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.first_page = True
        self.runs: list[tuple[str, float]] = []
        self.scanned = 0

    def visit(self, text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise _TooMuchText
        if self.first_page and self.scanned < _TITLE_SCAN_CHARS and text.strip():
            self.scanned += len(text)
            self.runs.append((text, _type_size(cm, tm, size)))

    def title(self) -> str | None:
        """The run of the largest type among the first page's first text, if it stands out."""
        sized = [(t, s) for t, s in self.runs if s > 0]
        if len(sized) < 2:
            return None
        largest = max(s for _, s in sized)
        weights = sorted((s, len(t)) for t, s in sized)
        total = sum(n for _, n in weights)
        seen, body = 0, weights[-1][0]
        for s, n in weights:
            seen += n
            if seen * 2 >= total:
                body = s
                break
        if largest < body * _TITLE_SCALE:
            return None
        parts: list[str] = []
        for text, s in sized:
            if s >= largest * 0.97:
                parts.append(text)
            elif parts:
                break
        title = " ".join(" ".join(parts).split())
        if not 3 <= len(title) <= _TITLE_MAX_CHARS or not any(c.isalpha() for c in title):
            return None
        return title


def _type_size(cm: Any, tm: Any, size: Any) -> float:
    """The height of a run's type on the page: its font size through both matrices."""
    try:
        # The y axis of tm x cm (affine matrices as PDF writes them: a b c d e f).
        c = float(tm[2]) * float(cm[0]) + float(tm[3]) * float(cm[2])
        d = float(tm[2]) * float(cm[1]) + float(tm[3]) * float(cm[3])
        return abs(float(size)) * math.hypot(c, d)
    except (TypeError, ValueError, IndexError):
        return 0.0


def _created(reader: pypdf.PdfReader) -> str | None:
    try:
        when = reader.metadata.creation_date if reader.metadata else None
    except Exception:  # a date nobody can read is no date
        return None
    if not isinstance(when, datetime.datetime):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unreadable(where: str, exc: BaseException) -> ExtractionError:
    return ExtractionError(
        f"{where} is not a PDF readdod can read ({type(exc).__name__}: {exc}); it may be"
        " damaged or cut short.",
        code=ErrorCode.EXTRACTION_PARSE_FAILED,
        retryable=False,
        debug=repr(exc),
    )


def extract_pdf(
    data: bytes,
    url: str | None = None,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    source: Literal["fetched", "provided_html", "provided_text"] = "fetched",
    http_status: int | None = None,
    final_url: str | None = None,
    fetched_at: str | None = None,
) -> Extraction:
    """The document's text, page after page, as an :class:`Extraction`.

    Reading stops once the text passes ``max_chars`` (refused as too large).
    """
    where = url or "the PDF"
    reading = _Reading(max_chars)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError(
                f"{where} needs a password to open; readdod cannot read it. Save a copy"
                " without the password and capture that.",
                code=ErrorCode.UNSUPPORTED_CONTENT,
                retryable=False,
            )
        count = len(reader.pages)
        if count > MAX_PAGES:
            raise ExtractionError(
                f"{where} has {count} pages; readdod reads PDFs of at most {MAX_PAGES} pages.",
                code=ErrorCode.EXTRACTION_TOO_LARGE,
                retryable=False,
            )
        pages: list[str] = []
        for page in reader.pages:
            pages.append((page.extract_text(visitor_text=reading.visit) or "").strip())
            reading.chars = sum(len(p) for p in pages)
            if reading.chars > max_chars:
                raise _TooMuchText
            reading.first_page = False
        info = reader.metadata
        title = _meta_title(info.title) if info else None
        author = _meta(info.author) if info else None
        published = _created(reader)
    except ExtractionError:
        raise
    except _TooMuchText:
        raise ExtractionError(
            f"{where} holds more than {max_chars:,} characters of text (its pages can repeat"
            " one stream many times); readdod reads documents of at most that much"
            " (fetch.max_bytes), as it does a text.",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
        ) from None
    except FileNotDecryptedError as exc:
        raise ExtractionError(
            f"{where} needs a password to open; readdod cannot read it. Save a copy without"
            " the password and capture that.",
            code=ErrorCode.UNSUPPORTED_CONTENT,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except DependencyError as exc:
        raise ExtractionError(
            f"{where} uses a feature this installation cannot read ({exc}).",
            code=ErrorCode.UNSUPPORTED_CONTENT,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except MemoryError:
        raise ExtractionError(
            f"{where} needs more memory to read than readdod gives one document"
            " (fetch.pdf_memory_mb).",
            code=ErrorCode.EXTRACTION_TOO_LARGE,
            retryable=False,
        ) from None
    except Exception as exc:  # whatever pypdf raises, the file is unreadable
        raise _unreadable(where, exc) from exc
    body = "\n\n".join(p for p in pages if p)
    words = len(body.split())
    if words == 0:
        raise ExtractionError(
            f"{where} has no text layer ({count} page{'s' if count != 1 else ''} of images,"
            " as a scanner makes them): it needs OCR before readdod can read it. Run it"
            " through OCR (for example ocrmypdf) and capture the result.",
            code=ErrorCode.UNSUPPORTED_CONTENT,
            retryable=False,
        )
    if words < max(_MIN_WORDS, count):
        raise ExtractionError(
            f"{where} has too little text to read: {words} word{'s' if words != 1 else ''}"
            f" on {count} page{'s' if count != 1 else ''}. If its pages are scanned images,"
            " run it through OCR (for example ocrmypdf) and capture the result.",
            code=ErrorCode.EXTRACTION_EMPTY,
            retryable=False,
        )
    document = ProvidedDocument(
        content_type="application/pdf",
        extractor=EXTRACTOR,
        byline=author,
        published_at=published,
        page_count=count,
    )
    return msgspec.structs.replace(
        extract_document(body, document, title=title or reading.title(), url=url),
        source=source,
        http_status=http_status,
        final_url=final_url,
        fetched_at=fetched_at,
    )


def document_of(extraction: Extraction) -> ProvidedDocument:
    """What :func:`extract_pdf` read off the file, to send with its text."""
    return ProvidedDocument(
        content_type="application/pdf",
        extractor=extraction.extractor,
        byline=extraction.byline,
        published_at=extraction.published_at,
        page_count=extraction.page_count,
    )
