"""Canonical URLs: which variants are the same page, and which are not."""

from __future__ import annotations

import pytest

from readdod.items.urls import BadURL, canonical, normalise_intent, redact_credentials

BASE = "https://example.org/blog/post?id=7&page=2"

#: Each variant must map to the canonical form of BASE.
SAME_PAGE = [
    "https://example.org/blog/post?id=7&page=2",
    "HTTPS://EXAMPLE.ORG/blog/post?id=7&page=2",
    "https://Example.Org:443/blog/post?id=7&page=2",
    "https://example.org./blog/post?id=7&page=2",
    "https://example.org/blog/post?page=2&id=7",
    "https://example.org/blog/post?id=7&page=2#comments",
    "https://example.org/blog/post?id=7&page=2#",
    "https://example.org/blog/post?utm_source=rss&utm_medium=feed&id=7&page=2",
    "https://example.org/blog/post?id=7&UTM_Campaign=x&page=2",
    "https://example.org/blog/post?id=7&page=2&fbclid=IwAR0abc",
    "https://example.org/blog/post?gclid=abc&id=7&page=2",
    "https://example.org/blog/post?id=7&mc_eid=1&mc_cid=2&page=2",
    "https://example.org/blog/post?id=7&page=2&igshid=x&ref_src=twsrc",
    "https://example.org/blog/post?id=7&page=2&msclkid=1&_hsenc=2&_hsmi=3",
    "https://example.org/blog/./post?id=7&page=2",
    "https://example.org/blog/x/../post?id=7&page=2",
    "https://example.org/%62log/post?id=7&page=2",
    "  https://example.org/blog/post?id=7&page=2  ",
    "https://example.org/blog/post?id=%37&page=2",
]

#: Pairs that must stay different pages.
DIFFERENT = [
    ("https://example.org/blog/post", "https://example.org/Blog/post"),
    ("https://example.org/post?id=7", "https://example.org/post?id=8"),
    ("https://example.org/post?id=7", "https://example.org/post"),
    ("http://example.org/post", "https://example.org/post"),
    ("https://example.org/post", "https://example.org:8443/post"),
    ("https://example.org/post", "https://www.example.org/post"),
    ("https://example.org/post?a=1&a=2", "https://example.org/post?a=2&a=1"),
    ("https://example.org/post/", "https://example.org/post"),
    ("https://example.org/a%2Fb", "https://example.org/a/b"),
    ("https://example.org/post?ref=home", "https://example.org/post"),
]


@pytest.mark.parametrize("variant", SAME_PAGE)
def test_variants_of_one_page_are_one_canonical_url(variant: str) -> None:
    assert canonical(variant) == canonical(BASE) == "https://example.org/blog/post?id=7&page=2"


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_pages_stay_different(a: str, b: str) -> None:
    assert canonical(a) != canonical(b)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.org:80", "http://example.org/"),
        ("http://example.org:8080", "http://example.org:8080/"),
        ("https://bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("https://xn--bcher-kva.example/stra%c3%9fe", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("https://BÜCHER.example/", "https://xn--bcher-kva.example/"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("https://example.org/s?q=a+b", "https://example.org/s?q=a%20b"),
        ("https://example.org/s?q=a%20b", "https://example.org/s?q=a%20b"),
        ("https://example.org/s?flag&x=1", "https://example.org/s?flag&x=1"),
        ("https://example.org/s?utm_source=x", "https://example.org/s"),
        ("https://user:pw@Example.org/", "https://user:pw@example.org/"),
    ],
)
def test_canonical_forms(url: str, expected: str) -> None:
    assert canonical(url) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "ftp://example.org/x",
        "example.org/x",
        "https:///x",
        "http://:80/",
        "https://ex.org:99999/",
        "",
    ],
)
def test_not_http_addresses_are_refused(bad: str) -> None:
    with pytest.raises(BadURL):
        canonical(bad)


def test_intents_differing_in_spacing_and_case_are_the_same() -> None:
    assert normalise_intent("  Decide  whether\twe adopt WAL\n") == "decide whether we adopt wal"
    assert normalise_intent("STRASSE") == normalise_intent("straße")
    assert normalise_intent("learn WAL") != normalise_intent("decide on WAL")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "HTTP 404 for http://alice:pw@h.example:8080/a?token=t1&api_key=k2&x=1: gone",
            "HTTP 404 for http://[redacted]@h.example:8080/a?token=[redacted]"
            "&api_key=[redacted]&x=1: gone",
        ),
        (
            "cannot fetch https://TOKEN@git.example/r.git.",
            "cannot fetch https://[redacted]@git.example/r.git.",
        ),
        (
            "https://s3.example/o?X-Amz-Signature=abc&X-Amz-Credential=k%2F1&monkey=2",
            "https://s3.example/o?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&monkey=2",
        ),
        (
            "'https://e.example/?access_token=zz#top'",
            "'https://e.example/?access_token=[redacted]#top'",
        ),
        (
            "https://h.example/p;jsessionid=ABC?x=1&PHPSESSID=z",
            "https://h.example/p;jsessionid=[redacted]?x=1&PHPSESSID=[redacted]",
        ),
        # Nothing secret: left exactly as it was.
        (
            "see https://medium.example/@user/post?id=7.",
            "see https://medium.example/@user/post?id=7.",
        ),
        ("no address here: token=abc", "no address here: token=abc"),
    ],
)
def test_credentials_in_addresses_are_redacted(text: str, expected: str) -> None:
    assert redact_credentials(text) == expected
