"""Bytes to text the way browsers read a page: BOM, label, then a guess.

Pure: no I/O. The order is the BOM, then the charset of the ``Content-Type``
header, then ``<meta>`` or the XML declaration, then detection
(charset-normalizer), with the WHATWG replacements browsers use (latin-1
means windows-1252, Shift_JIS means windows-31j, GB2312 means GB18030).

A declaration is believed unless the bytes contradict it: bytes that are
not valid in the declared charset but are valid UTF-8 are read as UTF-8
(a page moved to UTF-8 under an old ``<meta charset=gb2312>`` or a
server's stale default header), never as mojibake.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

import charset_normalizer

__all__ = ["decode_body"]

#: How much of the page is searched for a ``<meta>`` charset or an XML declaration.
_DECLARATION_BYTES: Final = 4096
#: How much text the guess is made on.
_DETECT_BYTES: Final = 64 * 1024

_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_XML_DECL_RE: Final = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
_MARKUP_RE: Final = re.compile(
    rb"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>",
    re.IGNORECASE | re.DOTALL,
)

#: Label → codec where browsers (WHATWG Encoding) decode differently from the label.
_WHATWG: Final = {
    "ascii": "cp1252",
    "latin_1": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "big5": "big5hkscs",
}
_WESTERN: Final = frozenset({"cp1252", "latin_1", "iso8859_15"})
_ALIASES: Final = {
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "x-gbk": "gb18030",
    "x-euc-jp": "euc_jp",
    "ks_c_5601-1987": "cp949",
    "x-mac-roman": "mac_roman",
    "x-cp1251": "cp1251",
}


def decode_body(data: bytes, charset: str | None) -> str:
    """Bytes to text: BOM, header charset, ``<meta>``/XML declaration, then detection.

    Invalid bytes become U+FFFD instead of failing: a page with one bad byte
    is still worth reading.
    """
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    declared = _codec(charset) or _declared_in_page(data)
    if declared is None:
        return data.decode(_detect(data), errors="replace")
    if declared != "utf-8" and not data.isascii():
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            if _is_utf8(data):
                return data.decode("utf-8")
    return data.decode(declared, errors="replace")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _declared_in_page(data: bytes) -> str | None:
    head = data[:_DECLARATION_BYTES]
    match = _XML_DECL_RE.match(head) or _META_CHARSET_RE.search(head)
    return _codec(match.group(1).decode("ascii", "replace")) if match else None


def _detect(data: bytes) -> str:
    """The encoding of unlabelled bytes: UTF-8 if they are valid UTF-8, else a guess."""
    if _is_utf8(data):
        return "utf-8"
    # Markup is ASCII in every encoding; the guess is better made on the text alone.
    sample = _MARKUP_RE.sub(b" ", data[: 4 * _DETECT_BYTES])[:_DETECT_BYTES]
    matches = charset_normalizer.from_bytes(sample or data[:_DETECT_BYTES])
    best = matches.best()
    # Without a BOM, a guess of UTF-16/32 on a few bytes is noise; browsers fall back to 1252.
    if best is None or best.encoding.startswith(("utf_16", "utf_32")):
        return "cp1252"
    # Western pages often fit several Latin code pages equally well; windows-1252 is the
    # one the web actually uses, so it wins every tie.
    for match in matches:
        if (
            match.encoding in _WESTERN
            and match.chaos <= best.chaos
            and match.coherence >= best.coherence
        ):
            return "cp1252"
    return _codec(best.encoding) or "cp1252"


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label (as browsers read it), or None if unknown."""
    if not label:
        return None
    label = label.strip().lower()
    label = _ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # A UTF-16 label on a page without a BOM is nearly always a mislabelled UTF-8 page.
    if name.startswith("utf-16"):
        return "utf-8"
    if name in ("utf-7", "utf_7"):
        return None
    return _WHATWG.get(name, name)
