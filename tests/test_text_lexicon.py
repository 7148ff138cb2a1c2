"""readdod.text: stems, word weights, languages and dates, from the bundled word lists."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from importlib import resources

import pytest

from readdod.text.dates import find_dates
from readdod.text.language import detect_language
from readdod.text.stems import stem, stemmable, weight
from readdod.text.wordlists import STEMMED, wordlist


@pytest.mark.parametrize(
    ("lang", "forms"),
    [
        ("en", ["tomato", "tomatoes"]),
        ("en", ["talk", "talks", "talking"]),
        ("de", ["Tomate", "Tomaten"]),
        ("fr", ["légume", "légumes"]),
        ("es", ["tomate", "tomates"]),
        ("ru", ["помидор", "помидоры", "помидоров"]),
        ("ru", ["книга", "книг", "книги"]),
    ],
)
def test_inflected_forms_share_a_stem(lang: str, forms: list[str]) -> None:
    assert len({stem(f.casefold(), lang) for f in forms}) == 1


def test_common_words_weigh_little_and_topic_words_fully() -> None:
    def w(word: str) -> float:
        return weight(stem(word, "en"), "en")

    assert w("new") < 0.15 and w("year") < 0.15
    assert w("offer") < 0.5
    assert w("tomato") > 0.85 and w("sourdough") == 1.0
    assert w("new") < w("offer") < w("conference") < w("tomato")


def test_a_language_without_a_list_keeps_words_whole_and_weighs_them_alike() -> None:
    assert not stemmable("ja") and not stemmable(None)
    assert stem("tomatoes", None) == "tomatoes"
    assert weight("anything", "ja") == 1.0


def test_every_list_ships_with_the_package_and_its_licence() -> None:
    folder = resources.files("readdod.text").joinpath("wordlists")
    notice = folder.joinpath("NOTICE").read_text("utf-8")
    assert "wordfreq" in notice and "Attribution-ShareAlike 4.0" in notice
    for lang in STEMMED:
        wl = wordlist(lang)
        assert wl is not None and wl.lang == lang
        assert len(wl.common) >= 100
        assert len(wl.zipf) > 3000
        assert all(4.0 <= z <= 8.0 for z in wl.zipf.values())
    assert wordlist("xx") is None


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("The tomatoes grow in the garden when you water them every week.", "en"),
        ("Die Tomaten wachsen im Garten, wenn man sie jede Woche gießt.", "de"),
        ("Les tomates poussent dans le jardin si on les arrose chaque semaine.", "fr"),
        ("Los tomates crecen en el jardín si los riegas cada semana.", "es"),
        ("Помидоры растут в саду, если их поливать каждую неделю.", "ru"),
        ("深度学习是机器学习的一个分支。", "zh"),
        ("電車は来年春にバスに転換される予定です。", "ja"),
    ],
)
def test_languages_are_told_apart(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_too_little_text_names_no_language() -> None:
    assert detect_language("Kubernetes Helm") is None
    assert detect_language("1234 — 5678") is None


def test_dates_with_a_year_are_found_in_several_languages() -> None:
    text = (
        "Work starts on 4 May 2027, ends March 3, 2028 or by 2029-06-30; "
        "am 1. März 2027 beginnt es, le 1er mars 2027 aussi, el 1 de marzo de 2027 también, "
        "с 1 марта 2027 года, im 01.03.2027, and in June 2027, then in 2030."
    )
    found = [(d.text, d.start, d.end) for d in find_dates(text)]
    assert found == [
        ("4 May 2027", dt.date(2027, 5, 4), dt.date(2027, 5, 4)),
        ("March 3, 2028", dt.date(2028, 3, 3), dt.date(2028, 3, 3)),
        ("2029-06-30", dt.date(2029, 6, 30), dt.date(2029, 6, 30)),
        ("1. März 2027", dt.date(2027, 3, 1), dt.date(2027, 3, 1)),
        ("1er mars 2027", dt.date(2027, 3, 1), dt.date(2027, 3, 1)),
        ("1 de marzo de 2027", dt.date(2027, 3, 1), dt.date(2027, 3, 1)),
        ("1 марта 2027", dt.date(2027, 3, 1), dt.date(2027, 3, 1)),
        ("01.03.2027", dt.date(2027, 3, 1), dt.date(2027, 3, 1)),
        ("June 2027", dt.date(2027, 6, 1), dt.date(2027, 6, 30)),
        ("in 2030", dt.date(2030, 1, 1), dt.date(2030, 12, 31)),
    ]


def test_a_date_is_ahead_until_its_period_ends() -> None:
    june = next(d for d in find_dates("It opens in June 2027.") if d.text == "June 2027")
    ms = int(dt.datetime(2027, 6, 15, tzinfo=dt.UTC).timestamp() * 1000)
    assert june.ahead_of(ms)
    later = int(dt.datetime(2027, 7, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert not june.ahead_of(later)


def test_no_year_or_no_such_day_is_no_date() -> None:
    assert find_dates("Work will begin in May, on Tuesday, on 4 May.") == []
    assert find_dates("See you on 31.02.2027.") == []


def test_threads_stem_alike() -> None:
    """Each thread has its own stemmer (a Snowball stemmer keeps state between calls)."""
    words = [f"{w}{s}" for w in ("garden", "tomato", "connect", "speak") for s in ("", "s", "ing")]
    words *= 200
    expected = [stem(w, "en") for w in words]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: [stem(w, "en") for w in words], range(16)))
    assert all(r == expected for r in results)
