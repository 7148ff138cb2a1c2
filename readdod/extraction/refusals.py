"""The errors an answer that is not a readable page turns into.

Pure: no I/O; the caller reads what little of the body is needed. Every
refusal is an :class:`ExtractionError` with a stable code and an honest
``retryable`` flag, and says what the user can do about it. Bot walls
(Cloudflare and friends) are recognised and reported as
``EXTRACTION_BLOCKED_BY_SITE`` with the way around them (``--html``), instead
of extracting the text of a challenge page.

``headers`` are httpx's, so lookups ignore case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from readdod.errors import ErrorCode, ExtractionError
from readdod.runtime import retrying

__all__ = [
    "ERROR_BODY_BYTES",
    "blocked_by_site",
    "http_error",
    "may_be_wall",
    "not_a_page",
    "too_large",
    "unsupported",
    "wall_vendor",
]

#: How much of an error page is read to look for a bot wall.
ERROR_BODY_BYTES: Final = 256 * 1024
#: A 2xx page with a challenge marker is a wall only if it has less visible text than this.
_TINY_TEXT_CHARS: Final = 1500

_TEXT_MARKUP_RE: Final = re.compile(
    r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>",
    re.IGNORECASE | re.DOTALL,
)

#: (vendor, markers); any marker (lower-case) in the page means that vendor's wall.
_WALL_MARKERS: Final = (
    (
        "Cloudflare",
        (
            "/cdn-cgi/challenge-platform/",
            "cf-chl-",
            "cf_chl_opt",
            "challenges.cloudflare.com",
            "<title>just a moment...</title>",
            "attention required! | cloudflare",
            "enable javascript and cookies to continue",
        ),
    ),
    ("DataDome", ("captcha-delivery.com", "please enable js and disable any ad blocker")),
    ("HUMAN (PerimeterX)", ("px-captcha", "_pxcaptcha", "perimeterx")),
    ("Imperva", ("_incapsula_resource", "incapsula incident id")),
    ("Akamai", ("errors.edgesuite.net",)),
    ("Sucuri", ("sucuri website firewall",)),
    ("AWS WAF", ("awswaf.com", "awswafintegration")),
    (
        "a bot check",
        (
            "g-recaptcha",
            "hcaptcha.com",
            "checking your browser before accessing",
            "verify you are a human",
            "verify you are human",
            "are you a robot",
            "ddos protection by",
        ),
    ),
)


def may_be_wall(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an error answer is worth reading (up to :data:`ERROR_BODY_BYTES`) for a wall."""
    return status in (403, 429, 503) or _wall_header(headers) is not None


def http_error(
    url: str, status: int, reason: str, headers: Mapping[str, str], text: str
) -> ExtractionError:
    """The error for an HTTP 4xx/5xx answer; ``text`` is its page if it was read, else ""."""
    vendor = wall_vendor(headers, text, tiny_only=False) if text else None
    if vendor is None:
        vendor = _wall_header(headers)
    if vendor is not None:
        return blocked_by_site(url, vendor, status)
    reason = f" {reason}" if reason else ""
    said = f"The server answered HTTP {status}{reason} for {url}"
    retry_after = retrying.retry_after_s(headers)
    if status in (404, 410):
        return ExtractionError(
            f"{said}: the page does not exist (any more). Check the address.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    if status == 429:
        return ExtractionError(
            f"{said}: the site is limiting how often readdod may ask; try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            retry_after=retry_after,
        )
    if status >= 500 or status in (408, 425):
        return ExtractionError(
            f"{said}: the site has a problem right now; try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            retry_after=retry_after,
        )
    if status in (401, 403, 451):
        return ExtractionError(
            f"{said}: the site refuses to give readdod this page. If it opens in your"
            " browser, save it and capture it with `readdod capture URL --html FILE`.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    return ExtractionError(
        f"{said}.",
        code=ErrorCode.EXTRACTION_FETCH_FAILED,
        retryable=False,
    )


def not_a_page(url: str, status: int) -> ExtractionError:
    """The error for a final answer that is neither a page nor an HTTP error (1xx, 3xx)."""
    return ExtractionError(
        f"The server answered HTTP {status} for {url}, which is not a page.",
        code=ErrorCode.EXTRACTION_FETCH_FAILED,
        retryable=False,
    )


def _wall_header(headers: Mapping[str, str]) -> str | None:
    """The vendor whose bot wall the headers announce, if any."""
    if headers.get("cf-mitigated", "").lower() == "challenge":
        return "Cloudflare"
    if headers.get("x-amzn-waf-action", "").lower() in ("captcha", "challenge"):
        return "AWS WAF"
    if "x-datadome" in headers and headers.get("x-dd-b") is not None:
        return "DataDome"
    return None


def wall_vendor(headers: Mapping[str, str], text: str, *, tiny_only: bool) -> str | None:
    """The vendor of the challenge in ``text``, if it is a challenge page.

    On a 2xx answer (``tiny_only``) markers count only on a page with almost
    no visible text: an article about Cloudflare is not a Cloudflare wall.
    """
    vendor = _wall_header(headers)
    if vendor is None:
        low = text[:ERROR_BODY_BYTES].lower()
        vendor = next(
            (name for name, markers in _WALL_MARKERS if any(m in low for m in markers)), None
        )
    if vendor is None:
        return None
    if tiny_only:
        visible = " ".join(_TEXT_MARKUP_RE.sub(" ", text[:ERROR_BODY_BYTES]).split())
        if len(visible) >= _TINY_TEXT_CHARS:
            return None
    return vendor


def blocked_by_site(url: str, vendor: str, status: int) -> ExtractionError:
    """The error for a bot wall: readdod cannot pass it, the user's browser can."""
    who = vendor if vendor == "a bot check" else f"{vendor}'s bot check"
    return ExtractionError(
        f"{url} answered with {who} (HTTP {status}) instead of the page; readdod cannot"
        " pass it. Open the page in your browser, save it, and capture it with"
        " `readdod capture URL --html FILE`.",
        code=ErrorCode.EXTRACTION_BLOCKED_BY_SITE,
        retryable=False,
    )


def unsupported(url: str, media_type: str) -> ExtractionError:
    """The error for content that is not HTML or plain text."""
    return ExtractionError(
        f"{url} is {media_type}, not a web page; readdod reads HTML and plain text only. "
        "Capture the text with --text instead.",
        code=ErrorCode.EXTRACTION_UNSUPPORTED_TYPE,
        retryable=False,
    )


def too_large(url: str, max_bytes: int) -> ExtractionError:
    """The error for a body past ``fetch.max_bytes`` (declared or decompressed)."""
    return ExtractionError(
        f"{url} is larger than the {max_bytes:,} byte limit (fetch.max_bytes). Raise the"
        " limit, or save the page and capture it with `readdod capture URL --html FILE`.",
        code=ErrorCode.EXTRACTION_TOO_LARGE,
        retryable=False,
    )
