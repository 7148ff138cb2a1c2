"""Every language's phrasebook gives every phrase, with the placeholders English gives.

The local engine's wording is data (``readdod/engines/local/phrasebooks/<lang>.toml``);
a phrase missing from one language, left empty, or with a placeholder the engine
does not fill would show up only on a card in that language. These tests read the
files as they ship, with the same loader the engine uses.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readdod.engines.local import phrases
from readdod.engines.local.phrases import ENGLISH, PHRASES, parse, phrasebook
from readdod.text.wordlists import STEMMED

ROOT = Path(__file__).resolve().parent.parent
BOOKS = ROOT / "readdod" / "engines" / "local" / "phrasebooks"

#: ``{ref}`` (the text, as an object) may be left implicit: the card is about that
#: text, and some languages read better without naming it again ("Den einen Punkt
#: notieren, ..."). Every other placeholder carries something the sentence needs.
MAY_OMIT = frozenset({"ref"})


def strings(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a phrasebook, by its dotted key (list items by index)."""
    for key, value in table.items():
        if isinstance(value, dict):
            yield from strings(value, f"{prefix}{key}.")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield f"{prefix}{key}[{i}]", item
        else:
            yield f"{prefix}{key}", value


def placeholders(template: str) -> set[str]:
    """The names ``str.format`` fills in ``template`` (raises on an unbalanced brace)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def book(lang: str) -> dict[str, Any]:
    return tomllib.loads(phrasebook(lang))


def test_there_is_one_phrasebook_per_stemmed_language_and_no_other() -> None:
    assert {p.stem for p in BOOKS.glob("*.toml")} == set(STEMMED)
    assert list(PHRASES) == list(STEMMED)


@pytest.mark.parametrize("lang", sorted(STEMMED))
def test_a_phrasebook_has_every_phrase_of_the_english_one(lang: str) -> None:
    mine, english = book(lang), book("en")
    assert mine.keys() == english.keys()
    assert mine["nouns"].keys() == english["nouns"].keys()
    for key, value in english.items():
        assert type(mine[key]) is type(value), key
        if isinstance(value, list) and key != "nouns":
            assert len(mine[key]) == len(value), key


@pytest.mark.parametrize("lang", sorted(STEMMED))
def test_no_phrase_is_empty(lang: str) -> None:
    for key, value in strings(book(lang)):
        assert isinstance(value, str), key
        assert value, key


@pytest.mark.parametrize("lang", sorted(STEMMED))
def test_a_phrase_fills_the_placeholders_the_english_one_does(lang: str) -> None:
    english = dict(strings(book("en")))
    for key, value in strings(book(lang)):
        if key.startswith("nouns."):
            assert not placeholders(value), key
            continue
        mine, theirs = placeholders(value), placeholders(english[key])
        # A name English does not have is one the engine never passes: a KeyError on a card.
        assert mine <= theirs, (key, mine - theirs)
        assert theirs - mine <= MAY_OMIT, (key, theirs - mine)
        value.format(**dict.fromkeys(theirs, "x"))


def test_the_tables_are_read_once() -> None:
    assert phrases.load("fr") is PHRASES["fr"] is phrases.phrases_for("fr-CA")
    assert phrases.load("en") is ENGLISH


def english_with(**changes: Any) -> str:
    """The English phrasebook with keys changed (None removes one), as TOML text."""
    lines = []
    for line in phrasebook("en").splitlines():
        key = line.split(" = ")[0]
        if key in changes:
            if changes[key] is not None:
                lines.append(f"{key} = {changes[key]}")
            continue
        lines.append(line)
    return "\n".join(lines)


def test_a_phrasebook_that_misses_a_phrase_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="bookmark"):
        parse("en", english_with(bookmark=None))


def test_a_misspelt_key_is_refused_not_ignored() -> None:
    text = phrasebook("en").replace("bookmark =", "bookmrak =")
    with pytest.raises(ValueError, match="bookmrak"):
        parse("en", text)


def test_a_phrase_of_the_wrong_kind_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError, match="this_text"):
        parse("en", english_with(this_text='["this text"]'))
    with pytest.raises(msgspec.ValidationError, match="plurals"):
        parse("en", english_with(plurals='"dual"'))


def test_a_noun_needs_every_form_of_its_plural_rule() -> None:
    with pytest.raises(ValueError, match="3 forms"):
        parse("en", english_with(plurals='"slavic"'))
    with pytest.raises(ValueError, match="symbol"):
        parse("en", english_with(symbol=None))


def test_the_parsed_english_table_is_the_one_the_engine_uses() -> None:
    assert parse("en", phrasebook("en")) == ENGLISH
    assert ENGLISH.count(1, "word") == "1 word"
    assert ENGLISH.count(1_234, "word") == "1,234 words"


def test_the_phrasebooks_ship_as_package_data() -> None:
    """An installed wheel has the files only if pyproject.toml lists them as package data."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    globs = project["tool"]["setuptools"]["package-data"]["readdod"]
    for path in BOOKS.glob("*.toml"):
        inside = path.relative_to(ROOT / "readdod")
        assert any(inside.match(g) for g in globs), inside
