"""Binary or text: file signatures and the share of control characters, on bytes and on text."""

from __future__ import annotations

import codecs
import random

import pytest

from readdod.items.sniff import BINARY_DATA, UNDECODABLE, binary_kind

RANDOM = random.Random(11).randbytes(20_000)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(64)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF" + RANDOM[:2000]
CP1251 = "Журнал записи ".encode("cp1251")
HTML = '<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><p>Hi</p>'

BYTES_CASES: list[tuple[str, bytes, str | None]] = [
    ("html", HTML.encode(), None),
    ("empty", b"", None),
    ("utf-8 prose", "Ünïcödé prose, 日本語の文章、emoji 🎉.\n".encode() * 100, None),
    ("cp1251 prose", "Журнал упреждающей записи.\r\n".encode("cp1251") * 100, None),
    ("utf-16 with BOM", codecs.BOM_UTF16_LE + "<p>Hello</p>".encode("utf-16-le"), None),
    ("ansi colours", b"\x1b[31mred\x1b[0m\tand\fmore\n" * 100, None),
    ("a stray control character", b"x" * 100 + b"\x00" + b"y" * 100, None),
    ("text that merely names a format", b"Convert WEBP images to PNG. RIFF rafts.", None),
    ("elf", ELF, "an ELF executable"),
    ("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a PNG image"),
    ("jpeg", JPEG, "a JPEG image"),
    ("gif", b"GIF89a\x01\x00\x01\x00", "a GIF image"),
    ("pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF document"),
    ("zip", b"PK\x03\x04\x14\x00", "a ZIP archive (or an office document)"),
    ("gzip", b"\x1f\x8b\x08\x00", "gzip-compressed data"),
    ("webp", b"RIFF\x24\x00\x00\x00WEBPVP8 ", "a WebP image"),
    ("mp4", b"\x00\x00\x00\x20ftypisom", "an MP4 video or HEIF image"),
    ("tar", b"notes.txt".ljust(257, b"\x00") + b"ustar\x0000", "a tar archive"),
    ("sqlite", b"SQLite format 3\x00\x10\x00", "an SQLite database"),
    ("random bytes", RANDOM, BINARY_DATA),
    ("utf-16 without BOM", "<p>Hello there</p>".encode("utf-16-le") * 10, BINARY_DATA),
]


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=name) for name, c, e in BYTES_CASES],
)
def test_bytes(content: bytes, expected: str | None) -> None:
    assert binary_kind(content) == expected


TEXT_CASES: list[tuple[str, str, str | None]] = [
    ("html", HTML, None),
    ("empty", "", None),
    ("prose in any script", "Журнал, 日本語, Ünïcödé, emoji 🎉.\n" * 100, None),
    ("a few bad bytes", "Caf\ufffd au lait. " * 10 + "plain words " * 100, None),
    ("ansi colours", "\x1b[31mred\x1b[0m\tand more\n" * 100, None),
    ("text that merely names a format", "Convert WEBP images to PNG. ELF binaries.", None),
    # A signature survives however a client decoded the bytes.
    ("elf as utf-8", ELF.decode("utf-8", "replace"), "an ELF executable"),
    ("png as utf-8", b"\x89PNG\r\n\x1a\n\x00\x00".decode("utf-8", "replace"), "a PNG image"),
    ("png as latin-1", b"\x89PNG\r\n\x1a\n\x00\x00".decode("latin-1"), "a PNG image"),
    ("png as cp1252", b"\x89PNG\r\n\x1a\n\x00\x00".decode("cp1252"), "a PNG image"),
    ("pdf", "%PDF-1.4\n%\ufffd\ufffd\n", "a PDF document"),
    # All of a signature's bytes above 0x7F: too loose to trust in text.
    ("jpeg as utf-8 is judged by its bytes", JPEG.decode("utf-8", "replace"), UNDECODABLE),
    ("three CJK characters are not a JPEG", "日本語の文章です。" * 10, None),
    ("random as latin-1", RANDOM.decode("latin-1"), BINARY_DATA),
    ("random as utf-8", RANDOM.decode("utf-8", "replace"), UNDECODABLE),
    ("cp1251 read as utf-8", CP1251.decode("utf-8", "replace") * 50, UNDECODABLE),
    ("nul-padded", "ab\x00\x00" * 100, BINARY_DATA),
]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=name) for name, c, e in TEXT_CASES],
)
def test_text(content: str, expected: str | None) -> None:
    assert binary_kind(content) == expected


def test_only_the_head_is_looked_at() -> None:
    assert binary_kind("words " * 5_000 + "\x00" * 10_000) is None
    assert binary_kind(b"\x00" * 10_000 + b"words " * 5_000) == BINARY_DATA
