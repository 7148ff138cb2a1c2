"""What a fetched body is read as: the declared type against the bytes, judged binary by
the same test captured content passes (readdod.items.sniff)."""

from __future__ import annotations

import pytest

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.mediatypes import page_type, parse_content_type

URL = "https://example.com/p"


@pytest.mark.parametrize(
    ("declared", "body", "expected"),
    [
        (None, b"<!doctype html><p>Hello</p>", "text/html"),
        (None, b"Just some notes.", "text/plain"),
        ("application/octet-stream", b"<html><p>Hi</p></html>", "text/html"),
        ("text/xml", b"<?xml version='1.0'?><html><p>Hi</p></html>", "application/xhtml+xml"),
        ("text/plain", b"<p>not parsed</p>", "text/plain"),
        # As in captured content, one stray control byte or a format's name is still text.
        ("text/html", b"<p>" + b"x" * 200 + b"\x00" + b"y" * 200 + b"</p>", "text/html"),
        ("text/plain", b"RIFF rafts and ID3 tags, explained.", "text/plain"),
        # A PDF is read as one when declared or unlabelled; a "PDF" that is a page is a page.
        (None, b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf"),
        ("application/octet-stream", b"%PDF-1.4\n", "application/pdf"),
        ("application/pdf", b"<html><p>Sign in to download</p></html>", "text/html"),
    ],
)
def test_readable_bodies(declared: str | None, body: bytes, expected: str) -> None:
    assert page_type(URL, declared, body) == expected


@pytest.mark.parametrize(
    ("declared", "body", "says"),
    [
        (
            "text/html",
            b"\x7fELF\x02\x01\x01\x00" + bytes(64),
            "says it is text/html but sent binary",
        ),
        ("application/pdf", b"\x00\x01\x02 neither a PDF nor a page", "binary data"),
        ("application/octet-stream", b"\x00\x01\x02binary", "is application/octet-stream"),
        ("application/xml", b"<?xml version='1.0'?><rss/>", "is application/xml"),
    ],
)
def test_binary_or_foreign_bodies_are_refused(declared: str | None, body: bytes, says: str) -> None:
    with pytest.raises(ExtractionError) as info:
        page_type(URL, declared, body)
    assert info.value.code is ErrorCode.EXTRACTION_UNSUPPORTED_TYPE and not info.value.retryable
    assert says in info.value.message


def test_content_type_header() -> None:
    assert parse_content_type('TEXT/HTML; Charset="Shift_JIS"') == ("text/html", "Shift_JIS")
    assert parse_content_type("  ") == (None, None)
    assert parse_content_type("text/plain;q=1") == ("text/plain", None)
