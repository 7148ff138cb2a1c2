"""Whether content handed in as a page or as text is binary, and what it looks like.

Pure: no I/O. Two tests, on the head of the content:

- a known file signature (magic number): an ELF executable, a PNG image, a
  PDF document...;
- else the share of characters no text contains: control characters other
  than whitespace and escape and, in decoded text, U+FFFD (bytes a decoder
  could not read). Raw bytes are not judged on being valid UTF-8: a page in
  a legacy encoding is text, and its charset is worked out when it is read.

It works on bytes (a file the CLI reads) and on text (what arrived over the
socket, already decoded by some client). In text a signature's bytes above
0x7F may have become any non-ASCII character (U+FFFD, or the byte's Latin-1
or windows-1252 character), so there they match any non-ASCII character,
and only signatures with at least :data:`LOOSE_MIN_ASCII` ASCII bytes are
trusted that way.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

#: A signature: (offset, bytes) parts that must all match, and what it is, as a person says it.
Signature = tuple[tuple[tuple[int, bytes], ...], str]


#: What :func:`binary_kind` calls a PDF (a capture of one is pointed to ``--pdf``).
PDF_KIND: Final = "a PDF document"


def _at0(magic: bytes, what: str) -> Signature:
    return ((0, magic),), what


def _riff(form: bytes, what: str) -> Signature:
    return ((0, b"RIFF"), (8, form)), what


SIGNATURES: Final[tuple[Signature, ...]] = (
    _at0(b"\x7fELF", "an ELF executable"),
    _at0(b"MZ\x90\x00", "a Windows executable"),
    _at0(b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    _at0(b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    _at0(b"\xca\xfe\xba\xbe", "a Java class file or Mach-O executable"),
    _at0(b"\x00asm", "a WebAssembly module"),
    _at0(b"\x89PNG\r\n\x1a\n", "a PNG image"),
    _at0(b"GIF87a", "a GIF image"),
    _at0(b"GIF89a", "a GIF image"),
    _at0(b"\xff\xd8\xff", "a JPEG image"),
    _at0(b"II*\x00", "a TIFF image"),
    _at0(b"MM\x00*", "a TIFF image"),
    _riff(b"WEBP", "a WebP image"),
    _riff(b"WAVE", "a WAV audio file"),
    _riff(b"AVI ", "an AVI video"),
    (((0, b"\x00\x00\x00"), (4, b"ftyp")), "an MP4 video or HEIF image"),
    _at0(b"\x1aE\xdf\xa3", "a Matroska or WebM video"),
    _at0(b"OggS\x00", "an Ogg audio or video file"),
    _at0(b"fLaC\x00", "a FLAC audio file"),
    _at0(b"ID3\x03\x00", "an MP3 audio file"),
    _at0(b"ID3\x04\x00", "an MP3 audio file"),
    _at0(b"%PDF-", PDF_KIND),
    _at0(b"PK\x03\x04", "a ZIP archive (or an office document)"),
    _at0(b"\x1f\x8b", "gzip-compressed data"),
    _at0(b"\xfd7zXZ\x00", "xz-compressed data"),
    _at0(b"(\xb5/\xfd", "zstd-compressed data"),
    _at0(b"7z\xbc\xaf'\x1c", "a 7-Zip archive"),
    _at0(b"Rar!\x1a\x07", "a RAR archive"),
    (((257, b"ustar\x00"),), "a tar archive"),
    (((257, b"ustar  \x00"),), "a tar archive"),
    _at0(b"SQLite format 3\x00", "an SQLite database"),
    _at0(b"wOFF", "a web font"),
    _at0(b"wOF2", "a web font"),
)
#: Signatures matched in already decoded text need this many ASCII bytes.
LOOSE_MIN_ASCII: Final = 3
#: How much of the content is looked at.
SAMPLE: Final = 8192
#: Content whose sample has more than this share of suspicious characters is binary.
MAX_SUSPICIOUS: Final = 0.05
BINARY_DATA: Final = "binary data"
UNDECODABLE: Final = "binary data (or text that is not UTF-8)"

#: Control characters no text contains: all but tab, the newlines, form feed and escape
#: (ANSI colours); in decoded text also the C1 range, which no encoding's text uses.
_SUSPICIOUS_TEXT: Final = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_SUSPICIOUS_BYTES: Final = re.compile(b"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_BOMS: Final = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _signature_in_bytes(head: bytes) -> str | None:
    for parts, what in SIGNATURES:
        if all(head[at : at + len(magic)] == magic for at, magic in parts):
            return what
    return None


def _loose_match(head: str, at: int, magic: bytes) -> bool:
    part = head[at : at + len(magic)]
    return len(part) == len(magic) and all(
        ord(ch) >= 0x80 if b >= 0x80 else ord(ch) == b for ch, b in zip(part, magic, strict=True)
    )


#: The signatures with enough ASCII bytes to be trusted in decoded text, each with the
#: character text must start with to match it (None: any), so most are passed over at once.
_LOOSE_SIGNATURES: Final = tuple(
    (chr(parts[0][1][0]) if parts[0][0] == 0 and parts[0][1][0] < 0x80 else None, parts, what)
    for parts, what in SIGNATURES
    if sum(b < 0x80 for _, magic in parts for b in magic) >= LOOSE_MIN_ASCII
)


def _signature_in_text(head: str) -> str | None:
    first = head[:1]
    for start, parts, what in _LOOSE_SIGNATURES:
        if start is not None and start != first:
            continue
        if all(_loose_match(head, at, magic) for at, magic in parts):
            return what
    return None


def binary_kind(content: bytes | str) -> str | None:
    """What ``content`` looks like if it is binary ("an ELF executable",
    "a PNG image", "binary data"...); None if it reads as text or HTML."""
    if isinstance(content, bytes):
        if content.startswith(_BOMS):
            return None  # text in a Unicode encoding says so up front
        head = content[:SAMPLE]
        found = _signature_in_bytes(head)
        if found is not None:
            return found
        bad = len(_SUSPICIOUS_BYTES.findall(head))
        return BINARY_DATA if head and bad / len(head) > MAX_SUSPICIOUS else None
    sample = content[:SAMPLE]
    found = _signature_in_text(sample)
    if found is not None:
        return found
    controls = len(_SUSPICIOUS_TEXT.findall(sample))
    undecodable = sample.count("\ufffd")
    if not sample or (controls + undecodable) / len(sample) <= MAX_SUSPICIOUS:
        return None
    return BINARY_DATA if controls >= undecodable else UNDECODABLE
