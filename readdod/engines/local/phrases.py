"""The fixed phrases the local engine puts on a card, one table per language. Pure.

A card made from a French text should not ask its reader, in English, to read
it. Every sentence the engine writes itself (as opposed to sentences it takes
from the text) is a template, for each language the engine detects and stems
(:data:`readdod.text.wordlists.STEMMED`); any other language gets English. The
templates are data, one file per language (``phrasebooks/<lang>.toml``, shipped
in the package and read once, the way a module reads its constants); what is
done with them (plural forms, numbers, quoting the intent) is code, here.

Templates are worded so that each placeholder sits in one grammatical case per
language: ``{ref}`` is the text as an object ("read this text"), ``{ref_subj}``
as a subject ("what this text means"), ``{goal}`` the intent in whatever case
the language's templates put it in (Russian ones always after "для").
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from importlib import resources
from types import MappingProxyType
from typing import Final, Literal, get_args

import msgspec

from readdod.text.wordlists import STEMMED

#: A longer intent is called "your goal" rather than quoted.
INTENT_QUOTE_MAX: Final = 80

Noun = Literal["word", "sentence", "paragraph", "cjk", "symbol", "time", "char"]
Plurals = Literal["one_other", "slavic"]


@dataclass(frozen=True, slots=True)
class Phrases:
    """One language's templates; ``str.format`` placeholders are named in each field."""

    lang: str
    this_text: tuple[str, str]
    """The text without a title to quote: (as object, as subject)."""
    titled: tuple[str, str]
    """The text by its title, ``{title}``: (as object, as subject)."""
    goal_quoted: str
    """The intent quoted: ``{intent}``."""
    your_goal: str
    """The intent when it is blank or too long to quote."""
    under_a_minute: str
    about_minutes: str
    """``{n}``"""
    read_full: str
    """``{ref}``, ``{reading}``"""
    note_meaning: str
    """``{ref_subj}``, ``{goal}``"""
    decide_after: str
    skim_parts: str
    """``{ref}``, ``{goal}``"""
    note_one_point: str
    """``{ref}``"""
    decide_full_read: str
    glance_opening: str
    """``{ref}``, ``{goal}``"""
    note_elsewhere: str
    """``{goal}``"""
    archive_if: str
    """``{ref}``, ``{goal}``"""
    check_study: str
    decide_agree: str
    bookmark: str
    """``{ref}``"""
    try_case: str
    """``{ref}``, ``{ref_subj}``"""
    note_steps: str
    calendar_sentence: str
    """``{sentence}``"""
    calendar_date: str
    """``{date}``"""
    unknown_note: str
    """Said on the card when the engine sees no shared words either way."""
    length: str
    """``{length}``, ``{reading}``"""
    structure: str
    """``{sentences}``, ``{paragraphs}``"""
    frequent_terms: str
    """``{terms}``"""
    no_words: str
    """``{snippet}``"""
    only_symbols: str
    """A text without words: ``{symbols}``."""
    # The score's reasons and the summary's intent relevance; placeholders as the English.
    quote: str
    """A word or phrase quoted: ``{s}``."""
    more: str
    """How many more were left out: ``{n}``."""
    decimal: str
    """The decimal separator."""
    no_topic_reason: str
    no_words_to_match: str
    unrelated_reason: str
    weak_in_passing: str
    elsewhere_reason: str
    skipped_reason: str
    unknown_reason: str
    why_foreign: str
    why_absent: str
    neutral_reason: str
    coverage_reason: str
    coverage_missing: str
    density_reason: str
    where_reason: str
    spot: str
    """Where an intent term occurs: ``{label}``, ``{at}``."""
    at_title: str
    at_opening: str
    at_sentence: str
    at_inside: str
    evidence_item: str
    inside_note: str
    rel_no_topic: str
    no_identifiable_topic: str
    rel_unrelated: str
    rel_unknown: str
    rel_serves: str
    rel_shares_little: str
    rel_but_not: str
    rel_passage: str
    and_word: str
    thousands: str
    plurals: Plurals
    nouns: Mapping[Noun, tuple[str, ...]]
    """Each noun's forms: (one, other), or for ``slavic`` (one, few, many)."""

    def count(self, n: int, noun: Noun) -> str:
        """``n`` with its noun in the right form: "1 word", "3 слова", "5 слов"."""
        forms = self.nouns[noun]
        if self.plurals == "slavic":
            tail, tens = n % 10, n % 100
            if tail == 1 and tens != 11:
                form = forms[0]
            elif 2 <= tail <= 4 and not 12 <= tens <= 14:
                form = forms[1]
            else:
                form = forms[2]
        else:
            form = forms[0] if n == 1 else forms[1]
        return f"{self.number(n)} {form}"

    def quoted(self, s: str) -> str:
        return self.quote.format(s=s)

    def join_and(self, items: Sequence[str]) -> str:
        """ "a, b and c" in the language."""
        if len(items) <= 2:
            return f" {self.and_word} ".join(items)
        return ", ".join(items[:-1]) + f" {self.and_word} {items[-1]}"

    def decimal_of(self, x: float, digits: int) -> str:
        return f"{x:.{digits}f}".replace(".", self.decimal)

    def number(self, n: int) -> str:
        return f"{n:,}".replace(",", self.thousands)

    def reading(self, minutes: int) -> str:
        return self.under_a_minute if minutes == 0 else self.about_minutes.format(n=minutes)

    def ref(self, title: str | None) -> tuple[str, str]:
        """The text as (object, subject): by its title when there is one to quote."""
        if not title:
            return self.this_text
        return (self.titled[0].format(title=title), self.titled[1].format(title=title))

    def goal(self, intent: str | None) -> str:
        """The intent quoted whole, or "your goal" when it is blank or too long to quote."""
        raw = " ".join((intent or "").split())
        if not raw or len(raw) > INTENT_QUOTE_MAX:
            return self.your_goal
        return self.goal_quoted.format(intent=raw)

    def length_of(self, words: int, unspaced: int, chars: int) -> str:
        parts = []
        if words:
            parts.append(self.count(words, "word"))
        if unspaced:
            parts.append(self.count(unspaced, "cjk"))
        if not parts:
            return self.only_symbols.format(symbols=self.count(chars, "symbol"))
        return f" {self.and_word} ".join(parts)


#: Template fields that are whole sentences of a todo (what a test may look a todo up in).
TODO_FIELDS: Final = (
    "read_full",
    "note_meaning",
    "decide_after",
    "skim_parts",
    "note_one_point",
    "decide_full_read",
    "glance_opening",
    "note_elsewhere",
    "archive_if",
    "check_study",
    "decide_agree",
    "bookmark",
    "try_case",
    "note_steps",
    "calendar_sentence",
    "calendar_date",
)


#: How many forms a noun has under each plural rule.
_FORMS: Final[Mapping[Plurals, int]] = MappingProxyType({"one_other": 2, "slavic": 3})


def parse(lang: str, toml: str) -> Phrases:
    """``lang``'s table from the text of its file, checked against :class:`Phrases`.

    msgspec checks every field is given, each of its type; a key the class does not
    know is refused too, so a misspelt key is an error rather than a phrase ignored,
    and every noun needs as many forms as the language's plurals have.
    """
    raw = tomllib.loads(toml)
    unknown = sorted(raw.keys() - ({f.name for f in fields(Phrases)} - {"lang"}))
    if unknown:
        raise ValueError(f"phrasebooks/{lang}.toml: unknown keys {unknown}")
    table = msgspec.convert({**raw, "lang": lang}, type=Phrases, strict=True)
    missing = [n for n in get_args(Noun) if n not in table.nouns]
    if missing:
        raise ValueError(f"phrasebooks/{lang}.toml: no forms for the nouns {missing}")
    forms = _FORMS[table.plurals]
    wrong = [n for n, f in table.nouns.items() if len(f) != forms]
    if wrong:
        raise ValueError(
            f"phrasebooks/{lang}.toml: {table.plurals} nouns need {forms} forms: {wrong}"
        )
    return replace(table, nouns=MappingProxyType(dict(table.nouns)))


def phrasebook(lang: str) -> str:
    """The text of ``lang``'s bundled file, ``phrasebooks/<lang>.toml``."""
    path = resources.files("readdod.engines.local").joinpath("phrasebooks", f"{lang}.toml")
    return path.read_text("utf-8")


@functools.cache
def load(lang: str) -> Phrases:
    """The table for ``lang``, read once from its bundled file.

    The wording is data, so a language is corrected or added in one file without
    touching the code.
    """
    return parse(lang, phrasebook(lang))


#: Every table, by ISO 639-1 code: one per language the engine detects and stems.
PHRASES: Final[Mapping[str, Phrases]] = MappingProxyType({lang: load(lang) for lang in STEMMED})
ENGLISH: Final = PHRASES["en"]


def phrases_for(lang: str | None) -> Phrases:
    """The table for ``lang`` ("fr", "fr-CA", "pt_BR"); English for any other language."""
    if not lang:
        return ENGLISH
    return PHRASES.get(lang.replace("_", "-").split("-")[0].casefold(), ENGLISH)
