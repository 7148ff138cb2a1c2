"""Canonical URLs, so that the same page captured twice is recognised.

Pure: no I/O. Two addresses that a browser would load as the same page,
differing only in ways that carry no meaning for the page (letter case of
the scheme and host, a default port, a fragment, tracking parameters, the
order of query parameters, escapes of characters that need none, dot
segments, an internationalised host in Unicode or in punycode), map to one
canonical string. Anything that may change the page (path case, a query
value, http vs https) is kept.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Final

DEFAULT_PORTS: Final = {"http": 80, "https": 443}

#: Query parameters that only say where a click came from.
TRACKING_PARAMS: Final = frozenset(
    {
        "fbclid",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "mc_eid",
        "mc_cid",
        "igshid",
        "ref_src",
        "ref_url",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "wickedid",
        "__s",
    }
)
TRACKING_PREFIXES: Final = ("utm_", "pk_", "mtm_")

_UNRESERVED: Final = "-._~"
_PATH_SAFE: Final = "/:@!$&'()*+,;=" + _UNRESERVED + "%"
_QUERY_SAFE: Final = "/:@!$'()*,;?" + _UNRESERVED
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


class BadURL(ValueError):
    """Not an absolute http(s) address."""


def is_tracking(name: str) -> bool:
    key = name.lower()
    return key in TRACKING_PARAMS or key.startswith(TRACKING_PREFIXES)


def _host(raw: str) -> str:
    host = raw.rstrip(".").lower()
    if not host:
        raise BadURL("the address has no host")
    if host.isascii():
        labels = host.split(".")
        # Punycode labels are decoded and re-encoded so both spellings agree.
        if any(label.startswith("xn--") for label in labels):
            try:
                host = host.encode("ascii").decode("idna").lower()
            except UnicodeError as exc:
                raise BadURL(f"invalid internationalised host {raw!r}") from exc
        else:
            return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise BadURL(f"invalid internationalised host {raw!r}") from exc


def _normalise_escapes(text: str) -> str:
    """Upper-case escapes, and decode those of unreserved characters."""

    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        if char.isascii() and (char.isalnum() or char in _UNRESERVED):
            return char
        return "%" + m.group(1).upper()

    return _ESCAPE.sub(fix, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
            continue
        if seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
            continue
        out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def _path(raw: str) -> str:
    quoted = urllib.parse.quote(raw, safe=_PATH_SAFE)
    return _remove_dot_segments(_normalise_escapes(quoted)) if quoted else "/"


def _query(raw: str) -> str:
    pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True)
    # Sorted by name only: the order of a repeated parameter's values may matter.
    kept = sorted(((k, v) for k, v in pairs if not is_tracking(k)), key=lambda kv: kv[0])
    return "&".join(
        urllib.parse.quote(k, safe=_QUERY_SAFE) + "=" + urllib.parse.quote(v, safe=_QUERY_SAFE)
        if v
        else urllib.parse.quote(k, safe=_QUERY_SAFE)
        for k, v in kept
    )


def canonical(url: str) -> str:
    """The canonical form of an absolute http(s) ``url``; :class:`BadURL` otherwise."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise BadURL(f"{url!r} is not a valid address: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise BadURL(f"{url!r} is not an absolute http(s) address")
    netloc = _host(parts.hostname)
    if ":" in netloc and not netloc.startswith("["):
        netloc = f"[{netloc}]"
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{netloc}"
    query = _query(parts.query)
    return urllib.parse.urlunsplit((scheme, netloc, _path(parts.path), query, ""))


def normalise_intent(intent: str) -> str:
    """Intents that differ only in spacing or letter case are the same intent."""
    return " ".join(intent.split()).casefold()


#: Query parameter names (or ``_``/``-``/``.``-separated parts of them) whose
#: value is a credential in practice.
SECRET_PARAM_PARTS: Final = frozenset(
    {
        "token",
        "access_token",
        "accesstoken",
        "apikey",
        "api_key",
        "key",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "sig",
        "signature",
        "credential",
        "credentials",
        "auth",
        "session",
        "sessionid",
        "jsessionid",
        "phpsessid",
        "sid",
    }
)
REDACTED: Final = "[redacted]"
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
_PARAM = re.compile(r"([?&;])([^=&#;?]+)=([^&#;?]*)")
_TRAILING = ".,:;!)]}"


def _secret_param(name: str) -> bool:
    key = urllib.parse.unquote(name).lower()
    return key in SECRET_PARAM_PARTS or any(
        part in SECRET_PARAM_PARTS for part in re.split(r"[_.\-]", key)
    )


def _redact_one(url: str) -> str:
    kept = len(url) - len(url.rstrip(_TRAILING))
    body, tail = (url[:-kept], url[-kept:]) if kept else (url, "")
    body = _USERINFO.sub(rf"\g<1>{REDACTED}@", body)
    body = _PARAM.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}" if _secret_param(m.group(2)) else m[0],
        body,
    )
    return body + tail


def redact_credentials(text: str) -> str:
    """``text`` with the credentials of every address in it blanked.

    A message about a failed fetch quotes the address it fetched; what it
    stores and shows must not keep a ``user:password@`` or a token-like
    query parameter (``token``, ``api_key``, ``X-Amz-Signature``...).
    """
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: _redact_one(m[0]), text)
