"""What a fetched body is: the declared ``Content-Type`` checked against the bytes.

Pure: no I/O. readdod reads HTML, XHTML, plain text and PDF (declared as
one, or bytes that start like one under a type that says nothing). A declared type that
says nothing (``application/octet-stream``, none at all) is replaced by what
the bytes look like; a declared text type is believed unless the bytes are
binary. Whether bytes are binary is :func:`readdod.items.sniff.binary_kind`, the
same test captured content passes, so a page is refused the same way whether
readdod fetched it or was handed it.
"""

from __future__ import annotations

import re
from typing import Final

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.refusals import unsupported
from readdod.items import sniff

__all__ = ["PDF", "SUPPORTED_TYPES", "check_declared", "page_type", "parse_content_type"]

SUPPORTED_TYPES: Final = frozenset(
    {"text/html", "application/xhtml+xml", "text/plain", "application/pdf", "application/x-pdf"}
)
PDF: Final = "application/pdf"
_PDF_TYPES: Final = frozenset({PDF, "application/x-pdf"})
#: Types that say nothing about the content; the body is sniffed instead.
_VAGUE_TYPES: Final = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/unknown", "unknown/unknown"}
)
#: XML is read only when it is XHTML under a generic label.
_XML_TYPES: Final = frozenset({"text/xml", "application/xml"})
#: How much of the body is looked at to tell HTML from plain text.
_SNIFF_BYTES: Final = 4096
_LOOKS_HTML_RE: Final = re.compile(
    rb"^\s*<|<(?:!doctype\s+html|html|head|body|p|div|title)\b", re.IGNORECASE
)
_HTML_ROOT_RE: Final = re.compile(rb"<html\b", re.IGNORECASE)


def parse_content_type(header: str | None) -> tuple[str | None, str | None]:
    """The bare media type and the charset parameter of a Content-Type header."""
    if not header or not header.strip():
        return None, None
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media_type.strip().lower() or None, charset


def check_declared(url: str, media_type: str | None) -> None:
    """Refuse a declared type readdod never reads, before any of the body is."""
    if (
        media_type is not None
        and media_type not in SUPPORTED_TYPES
        and media_type not in _VAGUE_TYPES
        and media_type not in _XML_TYPES
    ):
        raise unsupported(url, media_type)


def page_type(url: str, media_type: str | None, data: bytes) -> str:
    """The type to read ``data`` as, checking the declared type against the bytes."""
    pdf_allowed = media_type is None or media_type in _VAGUE_TYPES or media_type in _PDF_TYPES
    if pdf_allowed and data[:1024].find(b"%PDF-") >= 0:
        return PDF
    if media_type in _PDF_TYPES:
        # Declared a PDF, sent something else (often a login or error page): read what it is.
        media_type = None
    if sniff.binary_kind(data) is not None:
        if media_type is None or media_type in _VAGUE_TYPES:
            raise unsupported(url, "binary data" if media_type is None else media_type)
        raise ExtractionError(
            f"{url} says it is {media_type} but sent binary data; readdod reads HTML and"
            " plain text only.",
            code=ErrorCode.EXTRACTION_UNSUPPORTED_TYPE,
            retryable=False,
        )
    if media_type is not None and media_type in SUPPORTED_TYPES:
        return media_type
    head = data[:_SNIFF_BYTES]
    if media_type in _XML_TYPES:
        if _HTML_ROOT_RE.search(head):
            return "application/xhtml+xml"
        raise unsupported(url, media_type)
    return "text/html" if _LOOKS_HTML_RE.search(head) is not None else "text/plain"
