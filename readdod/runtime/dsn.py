"""A PostgreSQL connection string's secrets: which parameters they are, and the string
without them, in both of libpq's forms (``key=value ...`` and ``postgresql://...``).

Pure, and free of the driver (an optional extra): ``readdod config`` shows a DSN,
the log scrubber blanks one, and neither may need psycopg. The store, which has
it, hands secrets to ``pg_dump`` through its environment instead
(``store/postgresql/backup.py``).

Redaction errs towards hiding: in ``postgres://app:p@ss@host`` libpq reads the
password ``p`` and the host ``ss@host``, but the person meant ``p@ss``; all of
``p@ss`` is hidden. A string this module cannot read is not shown at all.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple
from urllib.parse import unquote

#: libpq's secret parameters: those it shows as ``*`` (password, sslpassword,
#: oauth_client_secret) and the SCRAM keys, which log in as well as a password does.
SECRET_PARAMS: Final = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
REDACTED: Final = "[redacted]"
#: What stands for a string that cannot be read (so cannot be safely cut).
UNREADABLE: Final = "<store.dsn: not shown, it is not a connection string readdod can read>"

_URI = re.compile(r"(?i)postgres(?:ql)?://")


class DsnSyntaxError(ValueError):
    """Not a connection string libpq would read."""


class _Param(NamedTuple):
    key: str
    value: str
    #: Where the value's text (quotes included) starts and ends in the string.
    start: int
    end: int


def is_uri(dsn: str) -> bool:
    return _URI.match(dsn.lstrip()) is not None


def _keywords(dsn: str) -> list[_Param]:
    """The ``key = value`` pairs of a libpq keyword/value string, with their spans."""
    params: list[_Param] = []
    i, n = 0, len(dsn)
    while True:
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n:
            return params
        key_start = i
        while i < n and dsn[i] != "=" and not dsn[i].isspace():
            i += 1
        key = dsn[key_start:i]
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n or dsn[i] != "=" or not key:
            raise DsnSyntaxError(f'missing "=" after "{key}"')
        i += 1
        while i < n and dsn[i].isspace():
            i += 1
        start, chars = i, []
        if i < n and dsn[i] == "'":
            i += 1
            while True:
                if i >= n:
                    raise DsnSyntaxError("unterminated quoted string")
                if dsn[i] == "\\" and i + 1 < n:
                    chars.append(dsn[i + 1])
                    i += 2
                elif dsn[i] == "'":
                    i += 1
                    break
                else:
                    chars.append(dsn[i])
                    i += 1
        else:
            while i < n and not dsn[i].isspace():
                if dsn[i] == "\\" and i + 1 < n:
                    chars.append(dsn[i + 1])
                    i += 2
                else:
                    chars.append(dsn[i])
                    i += 1
        params.append(_Param(key, "".join(chars), start, i))


def _uri_spans(dsn: str) -> list[tuple[int, int, str]]:
    """The secrets of a ``postgresql://`` URI as (start, end, decoded value): the
    password of its user part (up to the *last* ``@`` before the query, whatever libpq
    makes of a raw ``@``) and the secret parameters of its query (names
    percent-decoded, as libpq decodes them)."""
    match = _URI.match(dsn.lstrip())
    assert match is not None
    offset = len(dsn) - len(dsn.lstrip())
    rest_start = offset + match.end()
    query_at = dsn.find("?", rest_start)
    authority_end = len(dsn) if query_at < 0 else query_at
    spans: list[tuple[int, int, str]] = []
    at = dsn.rfind("@", rest_start, authority_end)
    if at >= 0:
        colon = dsn.find(":", rest_start, at)
        if colon >= 0:
            spans.append((colon + 1, at, unquote(dsn[colon + 1 : at])))
    if query_at >= 0:
        pos = query_at + 1
        for part in dsn[query_at + 1 :].split("&"):
            name, eq, value = part.partition("=")
            if eq and unquote(name).strip().lower() in SECRET_PARAMS:
                start = pos + len(name) + 1
                spans.append((start, start + len(value), unquote(value)))
            pos += len(part) + 1
    return spans


def _secret_spans(dsn: str) -> list[tuple[int, int, str]]:
    if is_uri(dsn):
        return _uri_spans(dsn)
    return [
        (p.start, p.end, p.value) for p in _keywords(dsn) if p.key.strip().lower() in SECRET_PARAMS
    ]


def redact(dsn: str) -> str:
    """``dsn`` as a person or a log may see it: each secret's value replaced by
    ``[redacted]``, everything else as written; :data:`UNREADABLE` if it cannot be read."""
    try:
        spans = _secret_spans(dsn)
    except DsnSyntaxError:
        return UNREADABLE
    out, last = [], 0
    for start, end, _ in sorted(spans):
        out.append(dsn[last:start])
        out.append(REDACTED)
        last = end
    out.append(dsn[last:])
    return "".join(out)


def secret_values(dsn: str) -> list[str]:
    """Every secret value in ``dsn``, as written and as decoded, for the log scrubber to
    blank wherever it appears; none if the string cannot be read."""
    try:
        spans = _secret_spans(dsn)
    except DsnSyntaxError:
        return []
    found: list[str] = []
    for start, end, value in spans:
        for text in (value, dsn[start:end]):
            if text and text not in found:
                found.append(text)
    return found
