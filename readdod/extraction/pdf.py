"""The text of a PDF, with its title, author and page count (pure: bytes in).

Read with pypdf: on the documents of ``bench/pdf.py`` (headings, two columns,
a table) it recovered every word in reading order, where pdfminer.six's
layout analysis put a table's columns one after the other, and it was about
six times faster; it is pure Python with no dependencies of its own.

A PDF whose pages hold no text (a scan without OCR) is refused with
``UNSUPPORTED_CONTENT``: there is nothing to read until it is run through
OCR. A PDF that cannot be parsed is ``EXTRACTION_PARSE_FAILED``.
"""

from __future__ import annotations

import datetime
import io
import logging
from typing import Final, Literal

import msgspec
import pypdf
from pypdf.errors import FileNotDecryptedError, PyPdfError

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.extract import extract_document
from readdod.models import Extraction, ProvidedDocument

__all__ = ["EXTRACTOR", "MAX_PAGES", "PDF_TYPES", "document_of", "extract_pdf", "is_pdf"]

EXTRACTOR: Final = f"pypdf/{pypdf.__version__}"
#: Media types a PDF is served as.
PDF_TYPES: Final = frozenset({"application/pdf", "application/x-pdf"})
#: Pages read at most: a document past this is refused rather than read for minutes.
MAX_PAGES: Final = 2_000
#: Fewer words than this (and than one a page) is no text layer, only stray marks.
_MIN_WORDS: Final = 5
#: What PDF writers put in the metadata when nobody gave a value.
_PLACEHOLDERS: Final = frozenset({"", "(unspecified)", "unspecified", "anonymous", "untitled"})

# pypdf logs every oddity of a damaged file as a warning; readdod reports one error instead.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def is_pdf(data: bytes) -> bool:
    """Whether ``data`` starts like a PDF (allowing the junk some writers put before it)."""
    return b"%PDF-" in data[:1024]


def _meta(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return None if text.lower() in _PLACEHOLDERS else text[:500]


def _created(reader: pypdf.PdfReader) -> str | None:
    try:
        when = reader.metadata.creation_date if reader.metadata else None
    except (PyPdfError, ValueError, TypeError):
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
    source: Literal["fetched", "provided_html", "provided_text"] = "fetched",
    http_status: int | None = None,
    final_url: str | None = None,
    fetched_at: str | None = None,
) -> Extraction:
    """The document's text, page after page, as an :class:`Extraction`."""
    where = url or "the PDF"
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError(
                f"{where} is encrypted with a password; readdod cannot read it. Save an"
                " unprotected copy and capture that.",
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
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        title = _meta(info.title) if info else None
        author = _meta(info.author) if info else None
    except ExtractionError:
        raise
    except FileNotDecryptedError as exc:
        raise ExtractionError(
            f"{where} is encrypted; readdod cannot read it. Save an unprotected copy and"
            " capture that.",
            code=ErrorCode.UNSUPPORTED_CONTENT,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise _unreadable(where, exc) from exc
    except RecursionError as exc:
        raise _unreadable(where, exc) from exc
    body = "\n\n".join(p for p in pages if p)
    if len(body.split()) < max(_MIN_WORDS, count):
        raise ExtractionError(
            f"{where} has no text layer ({count} page{'s' if count != 1 else ''} of images,"
            " as a scanner makes them): it needs OCR before readdod can read it. Run it"
            " through OCR (for example ocrmypdf) and capture the result.",
            code=ErrorCode.UNSUPPORTED_CONTENT,
            retryable=False,
        )
    document = ProvidedDocument(
        content_type="application/pdf",
        extractor=EXTRACTOR,
        byline=author,
        published_at=_created(reader),
        page_count=count,
    )
    return msgspec.structs.replace(
        extract_document(body, document, title=title, url=url),
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
