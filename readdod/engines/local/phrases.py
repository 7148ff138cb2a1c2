"""The fixed phrases the local engine puts on a card, one table per language. Pure.

A card made from a French text should not ask its reader, in English, to read
it. Every sentence the engine writes itself (as opposed to sentences it takes
from the text) is a template here, for each language the engine detects and
stems (:data:`readdod.text.wordlists.STEMMED`); any other language gets English.

Templates are worded so that each placeholder sits in one grammatical case per
language: ``{ref}`` is the text as an object ("read this text"), ``{ref_subj}``
as a subject ("what this text means"), ``{goal}`` the intent in whatever case
the language's templates put it in (Russian ones always after "для").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

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

_EN: Final = Phrases(
    lang="en",
    this_text=("this text", "this text"),
    titled=("“{title}”", "“{title}”"),
    goal_quoted="“{intent}”",
    your_goal="your goal",
    under_a_minute="under a minute to read",
    about_minutes="about {n} min to read",
    read_full="Read {ref} in full ({reading})",
    note_meaning="Write a short note on what {ref_subj} means for {goal}",
    decide_after="Decide what you will do differently after reading it",
    skim_parts="Skim {ref} for the parts that bear on {goal}",
    note_one_point="Note the one point from {ref} worth keeping",
    decide_full_read="Decide whether it deserves a full read",
    glance_opening="Glance at the opening of {ref} to confirm it does not serve {goal}",
    note_elsewhere="Note where else to look for {goal}",
    archive_if="Archive {ref} if it does not serve {goal}",
    check_study="Check how the study was done (sample, method) before relying on its findings",
    decide_agree="Decide whether you agree with the argument, and why",
    bookmark="Bookmark {ref} where you keep references",
    try_case="Try what {ref_subj} shows on a real case of your own",
    note_steps="Note which of these steps you will follow, and when",
    calendar_sentence="Put the date in your calendar: {sentence}",
    calendar_date="Put {date} in your calendar",
    quote="“{s}”",
    more="{n} more",
    decimal=".",
    no_topic_reason="The intent {goal} names no topic, so the score is a neutral {n}.",
    no_words_to_match="The text has no words to match.",
    unrelated_reason=(
        "No shared meaning found: none of the intent's words ({missing}) occur in the text{weak}."
    ),
    weak_in_passing=" (only common words in passing: {evidence})",
    elsewhere_reason="The text is clearly about other things: {topics}.",
    skipped_reason=(
        "Skipped on that evidence, not for lacking shared words alone: a text of {words} "
        "that keeps returning to other topics and never names the intent's is unlikely to "
        "serve it."
    ),
    unknown_reason="No shared meaning the offline engine can see: {why}.",
    why_foreign=("the intent looks written in another language ({own}) than the text ({lang})"),
    why_absent="none of the intent's words ({missing}) occur in the text",
    neutral_reason=(
        "It matches words, not meaning, so it cannot tell a paraphrase from a mismatch: "
        "scored a neutral {n} and not archived. Judge it yourself, or use a model server "
        "(ai.engine = openai)."
    ),
    coverage_reason=(
        "Shared words, weighted by how rare they are: {evidence}; {found} of {total} intent "
        "terms found"
    ),
    coverage_missing=", missing {missing}",
    density_reason="Intent terms occur {times} ({per_k} per 1,000 {unit}).",
    where_reason="Where: {spots}.",
    spot="{label} in {at}",
    at_title="the title",
    at_opening="the opening paragraph",
    at_sentence="sentence {i} of {n}",
    at_inside="inside longer words",
    evidence_item="{label} {count}× (weight {weight}{inside})",
    inside_note=", inside longer words",
    rel_no_topic=(
        "The intent {goal} names no topic to look for, so relevance cannot be measured; the "
        "text is mainly about {topics}."
    ),
    no_identifiable_topic="no identifiable topic",
    rel_unrelated=(
        "None of the intent terms ({missing}) appear in the text; it is mainly about "
        "{topics}, so it likely does not serve {goal}."
    ),
    rel_unknown=(
        "The offline engine sees no shared meaning with {goal}: it matches words, not "
        "meaning, and the text never uses the intent's words ({missing}). It may still "
        "serve it in other words; it is mainly about {topics}."
    ),
    rel_serves=("Serves {goal}: mentions {found} of {total} intent terms ({evidence})"),
    rel_shares_little=(
        "Shares little with {goal}: mentions {found} of {total} intent terms ({evidence})"
    ),
    rel_but_not=" but not {missing}",
    rel_passage=" Most relevant passage: {passage}",
    unknown_note=(
        "Note: the offline engine found no words this text shares with your intent. It matches "
        "words, not meaning, so it cannot tell a paraphrase from a mismatch: the card is kept "
        "for you to judge."
    ),
    length="Length: {length}, {reading}.",
    structure="Structure: {sentences} in {paragraphs}.",
    frequent_terms="Most frequent terms: {terms}.",
    no_words="No words to summarise; the text reads {snippet}.",
    only_symbols="no words, only {symbols}",
    and_word="and",
    thousands=",",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("word", "words"),
            "sentence": ("sentence", "sentences"),
            "paragraph": ("paragraph", "paragraphs"),
            "cjk": ("CJK/Thai character", "CJK/Thai characters"),
            "symbol": ("symbol", "symbols"),
            "time": ("time", "times"),
            "char": ("character", "characters"),
        }
    ),
)

_DE: Final = Phrases(
    lang="de",
    this_text=("den Text", "der Text"),
    titled=("„{title}“", "„{title}“"),
    goal_quoted="„{intent}“",
    your_goal="dein Ziel",
    under_a_minute="unter einer Minute Lesezeit",
    about_minutes="etwa {n} Min. Lesezeit",
    read_full="{ref} ganz lesen ({reading})",
    note_meaning="Kurz notieren, was {ref_subj} für {goal} bedeutet",
    decide_after="Entscheiden, was du nach dem Lesen anders machst",
    skim_parts="{ref} nach den Stellen überfliegen, die {goal} betreffen",
    note_one_point="Den einen Punkt notieren, der sich zu behalten lohnt",
    decide_full_read="Entscheiden, ob sich das ganze Lesen lohnt",
    glance_opening="Den Anfang kurz lesen, um zu prüfen, ob der Text etwas für {goal} bringt",
    note_elsewhere="Notieren, wo sich sonst für {goal} suchen lässt",
    archive_if="{ref} archivieren, falls nichts für {goal} darin steht",
    check_study=(
        "Prüfen, wie die Studie gemacht wurde (Stichprobe, Methode), bevor du dich auf ihre "
        "Ergebnisse stützt"
    ),
    decide_agree="Entscheiden, ob du dem Argument zustimmst, und warum",
    bookmark="{ref} als Lesezeichen ablegen, wo du Nachschlagewerke sammelst",
    try_case="An einem eigenen echten Fall ausprobieren, was {ref_subj} zeigt",
    note_steps="Notieren, welchen dieser Schritte du folgst, und wann",
    calendar_sentence="Datum in den Kalender eintragen: {sentence}",
    calendar_date="{date} in den Kalender eintragen",
    quote="„{s}“",
    more="{n} weitere",
    decimal=",",
    no_topic_reason=("Für {goal} ist kein Thema erkennbar, daher ist die Bewertung neutral: {n}."),
    no_words_to_match="Der Text enthält keine Wörter zum Vergleichen.",
    unrelated_reason=(
        "Keine gemeinsame Bedeutung gefunden: Keines der Wörter des Ziels ({missing}) kommt "
        "im Text vor{weak}."
    ),
    weak_in_passing=" (nur häufige Wörter nebenbei: {evidence})",
    elsewhere_reason="Der Text handelt deutlich von anderem: {topics}.",
    skipped_reason=(
        "Auf diese Belege hin übersprungen, nicht bloß mangels gemeinsamer Wörter: Ein Text "
        "von {words}, der immer wieder zu anderen Themen zurückkehrt und die des Ziels nie "
        "nennt, dient ihm kaum."
    ),
    unknown_reason=("Keine gemeinsame Bedeutung, die die Offline-Engine erkennen kann: {why}."),
    why_foreign=(
        "Das Ziel scheint in einer anderen Sprache ({own}) geschrieben als der Text ({lang})"
    ),
    why_absent="Keines der Wörter des Ziels ({missing}) kommt im Text vor",
    neutral_reason=(
        "Sie vergleicht Wörter, nicht Bedeutungen, und kann eine Umschreibung nicht von "
        "einem Fehlgriff unterscheiden: neutral mit {n} bewertet und nicht archiviert. "
        "Urteile selbst oder nutze einen Modellserver (ai.engine = openai)."
    ),
    coverage_reason=(
        "Gemeinsame Wörter, gewichtet nach Seltenheit: {evidence}; {found} von {total} "
        "Begriffen des Ziels gefunden"
    ),
    coverage_missing=", es fehlen {missing}",
    density_reason=("Begriffe des Ziels kommen {times} vor ({per_k} pro 1.000 {unit})."),
    where_reason="Fundstellen: {spots}.",
    spot="{label} {at}",
    at_title="im Titel",
    at_opening="im ersten Absatz",
    at_sentence="in Satz {i} von {n}",
    at_inside="in längeren Wörtern",
    evidence_item="{label} {count}× (Gewicht {weight}{inside})",
    inside_note=", in längeren Wörtern",
    rel_no_topic=(
        "Für {goal} ist kein Thema zu suchen, daher lässt sich die Relevanz nicht messen; "
        "Hauptthemen des Textes: {topics}."
    ),
    no_identifiable_topic="keine erkennbaren",
    rel_unrelated=(
        "Keiner der Begriffe des Ziels ({missing}) kommt im Text vor; Hauptthemen: "
        "{topics}, er bringt für {goal} also wohl nichts."
    ),
    rel_unknown=(
        "Die Offline-Engine sieht keine gemeinsame Bedeutung mit dem Ziel: Sie vergleicht "
        "Wörter, nicht Bedeutungen, und der Text verwendet die Wörter des Ziels nie "
        "({missing}). Er kann für {goal} mit anderen Worten dennoch taugen; Hauptthemen des "
        "Textes: {topics}."
    ),
    rel_serves=("Relevant für {goal}: nennt {found} von {total} Begriffen des Ziels ({evidence})"),
    rel_shares_little=(
        "Kaum relevant für {goal}: nennt {found} von {total} Begriffen des Ziels ({evidence})"
    ),
    rel_but_not=", aber nicht {missing}",
    rel_passage=" Relevanteste Stelle: {passage}",
    unknown_note=(
        "Hinweis: Die Offline-Engine hat keine Wörter gefunden, die dieser Text mit deinem Ziel "
        "teilt. Sie vergleicht Wörter, nicht Bedeutungen, und kann eine Umschreibung nicht von "
        "einem Fehlgriff unterscheiden: Die Karte bleibt, damit du selbst urteilst."
    ),
    length="Länge: {length}, {reading}.",
    structure="Aufbau: {sentences}, {paragraphs}.",
    frequent_terms="Häufigste Begriffe: {terms}.",
    no_words="Keine Wörter zum Zusammenfassen; der Text lautet {snippet}.",
    only_symbols="keine Wörter, nur {symbols}",
    and_word="und",
    thousands=".",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("Wort", "Wörter"),
            "sentence": ("Satz", "Sätze"),
            "paragraph": ("Absatz", "Absätze"),
            "cjk": ("CJK/Thai-Zeichen", "CJK/Thai-Zeichen"),
            "symbol": ("Zeichen", "Zeichen"),
            "time": ("Mal", "Mal"),
            "char": ("Zeichen", "Zeichen"),
        }
    ),
)

_FR: Final = Phrases(
    lang="fr",
    this_text=("le texte", "le texte"),
    titled=("«\u00a0{title}\u00a0»", "«\u00a0{title}\u00a0»"),
    goal_quoted="«\u00a0{intent}\u00a0»",
    your_goal="votre objectif",
    under_a_minute="moins d’une minute de lecture",
    about_minutes="environ {n} min de lecture",
    read_full="Lire {ref} en entier ({reading})",
    note_meaning="Noter en quelques lignes ce que {ref_subj} apporte pour {goal}",
    decide_after="Décider ce que vous ferez autrement après la lecture",
    skim_parts="Parcourir {ref} à la recherche des passages utiles pour {goal}",
    note_one_point="Noter le point à retenir",
    decide_full_read="Décider si le texte mérite une lecture complète",
    glance_opening="Lire le début pour vérifier que le texte ne sert pas à {goal}",
    note_elsewhere="Noter où chercher ailleurs pour {goal}",
    archive_if="Archiver {ref} s’il ne sert pas à {goal}",
    check_study=(
        "Vérifier comment l’étude a été menée (échantillon, méthode) avant de s’appuyer sur "
        "ses résultats"
    ),
    decide_agree="Décider si vous êtes d’accord avec l’argument, et pourquoi",
    bookmark="Ajouter {ref} aux favoris, là où vous gardez vos références",
    try_case="Essayer ce que montre {ref_subj} sur un cas réel à vous",
    note_steps="Noter lesquelles de ces étapes vous suivrez, et quand",
    calendar_sentence="Noter la date dans votre agenda\u00a0: {sentence}",
    calendar_date="Noter {date} dans votre agenda",
    quote="«\xa0{s}\xa0»",
    more="{n} autres",
    decimal=",",
    no_topic_reason=("Aucun sujet à chercher pour {goal}\xa0: la note est donc neutre ({n})."),
    no_words_to_match="Le texte n’a aucun mot à comparer.",
    unrelated_reason=(
        "Aucun sens commun trouvé\xa0: aucun des mots de l’intention ({missing}) n’apparaît "
        "dans le texte{weak}."
    ),
    weak_in_passing=" (seulement des mots courants, en passant\xa0: {evidence})",
    elsewhere_reason="Le texte parle clairement d’autre chose\xa0: {topics}.",
    skipped_reason=(
        "Ignoré sur ces indices, pas seulement faute de mots communs\xa0: un texte de "
        "{words} qui revient sans cesse à d’autres sujets et ne nomme jamais ceux de "
        "l’intention a peu de chances d’y répondre."
    ),
    unknown_reason=("Aucun sens commun que le moteur hors ligne puisse voir\xa0: {why}."),
    why_foreign=("l’intention semble écrite dans une autre langue ({own}) que le texte ({lang})"),
    why_absent=("aucun des mots de l’intention ({missing}) n’apparaît dans le texte"),
    neutral_reason=(
        "Il compare des mots, pas le sens, et ne distingue pas une paraphrase d’un "
        "hors-sujet\xa0: note neutre de {n}, fiche non archivée. Jugez vous-même, ou "
        "utilisez un serveur de modèle (ai.engine = openai)."
    ),
    coverage_reason=(
        "Mots communs, pondérés selon leur rareté\xa0: {evidence}\xa0; {found} termes de "
        "l’intention sur {total} trouvés"
    ),
    coverage_missing=", manquent {missing}",
    density_reason=(
        "Les termes de l’intention apparaissent {times} ({per_k} pour 1\u202f000 {unit})."
    ),
    where_reason="Où\xa0: {spots}.",
    spot="{label} {at}",
    at_title="dans le titre",
    at_opening="dans le premier paragraphe",
    at_sentence="dans la phrase {i} sur {n}",
    at_inside="dans des mots plus longs",
    evidence_item="{label} {count}× (poids {weight}{inside})",
    inside_note=", dans des mots plus longs",
    rel_no_topic=(
        "Aucun sujet à chercher pour {goal}\xa0: la pertinence ne peut pas être "
        "mesurée\xa0; sujets principaux du texte\xa0: {topics}."
    ),
    no_identifiable_topic="aucun identifiable",
    rel_unrelated=(
        "Aucun des termes de l’intention ({missing}) n’apparaît dans le texte\xa0; sujets "
        "principaux\xa0: {topics}, il ne sert donc probablement pas à {goal}."
    ),
    rel_unknown=(
        "Le moteur hors ligne ne voit aucun sens commun avec {goal}\xa0: il compare des "
        "mots, pas le sens, et le texte n’emploie jamais les mots de l’intention "
        "({missing}). Il peut y répondre en d’autres termes\xa0; sujets principaux du "
        "texte\xa0: {topics}."
    ),
    rel_serves=("Répond à {goal}\xa0: cite {found} termes de l’intention sur {total} ({evidence})"),
    rel_shares_little=(
        "A peu en commun avec {goal}\xa0: cite {found} termes de l’intention sur {total} "
        "({evidence})"
    ),
    rel_but_not=", mais pas {missing}",
    rel_passage=" Passage le plus pertinent\xa0: {passage}",
    unknown_note=(
        "Remarque\u00a0: le moteur hors ligne n’a trouvé aucun mot commun entre ce texte et "
        "votre intention. Il compare des mots, pas le sens, et ne distingue donc pas une "
        "paraphrase d’un hors-sujet\u00a0: la fiche est conservée pour que vous en jugiez."
    ),
    length="Longueur\u00a0: {length}, {reading}.",
    structure="Structure\u00a0: {sentences}, {paragraphs}.",
    frequent_terms="Termes les plus fréquents\u00a0: {terms}.",
    no_words="Aucun mot à résumer\u00a0; le texte dit {snippet}.",
    only_symbols="aucun mot, seulement {symbols}",
    and_word="et",
    thousands="\u202f",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("mot", "mots"),
            "sentence": ("phrase", "phrases"),
            "paragraph": ("paragraphe", "paragraphes"),
            "cjk": ("caractère CJK/thaï", "caractères CJK/thaïs"),
            "symbol": ("symbole", "symboles"),
            "time": ("fois", "fois"),
            "char": ("caractère", "caractères"),
        }
    ),
)

_ES: Final = Phrases(
    lang="es",
    this_text=("el texto", "el texto"),
    titled=("«{title}»", "«{title}»"),
    goal_quoted="«{intent}»",
    your_goal="tu objetivo",
    under_a_minute="menos de un minuto de lectura",
    about_minutes="unos {n} min de lectura",
    read_full="Leer {ref} completo ({reading})",
    note_meaning="Anotar brevemente qué aporta {ref_subj} a {goal}",
    decide_after="Decidir qué harás distinto después de leerlo",
    skim_parts="Hojear {ref} buscando las partes que sirven para {goal}",
    note_one_point="Anotar la idea que vale la pena guardar",
    decide_full_read="Decidir si merece una lectura completa",
    glance_opening="Echar un vistazo al comienzo para confirmar que no sirve para {goal}",
    note_elsewhere="Anotar dónde más buscar para {goal}",
    archive_if="Archivar {ref} si no sirve para {goal}",
    check_study=(
        "Comprobar cómo se hizo el estudio (muestra, método) antes de fiarse de sus resultados"
    ),
    decide_agree="Decidir si estás de acuerdo con el argumento, y por qué",
    bookmark="Guardar {ref} en marcadores, donde guardas tus referencias",
    try_case="Probar lo que muestra {ref_subj} en un caso real tuyo",
    note_steps="Anotar cuáles de estos pasos seguirás, y cuándo",
    calendar_sentence="Apuntar la fecha en el calendario: {sentence}",
    calendar_date="Apuntar {date} en el calendario",
    quote="«{s}»",
    more="{n} más",
    decimal=",",
    no_topic_reason=("No hay tema que buscar para {goal}, así que la puntuación es neutra: {n}."),
    no_words_to_match="El texto no tiene palabras que comparar.",
    unrelated_reason=(
        "No se encontró significado común: ninguna palabra de la intención ({missing}) "
        "aparece en el texto{weak}."
    ),
    weak_in_passing=" (solo palabras comunes, de pasada: {evidence})",
    elsewhere_reason="El texto trata claramente de otras cosas: {topics}.",
    skipped_reason=(
        "Descartado por esas pruebas, no solo por no compartir palabras: un texto de "
        "{words} que vuelve una y otra vez a otros temas y nunca nombra los de la intención "
        "difícilmente le sirve."
    ),
    unknown_reason=("Ningún significado común que el motor sin conexión pueda ver: {why}."),
    why_foreign=("la intención parece escrita en otro idioma ({own}) que el texto ({lang})"),
    why_absent="ninguna palabra de la intención ({missing}) aparece en el texto",
    neutral_reason=(
        "Compara palabras, no significados, así que no distingue una paráfrasis de un "
        "desajuste: puntuación neutra de {n}, sin archivar. Júzgalo tú, o usa un servidor "
        "de modelos (ai.engine = openai)."
    ),
    coverage_reason=(
        "Palabras compartidas, ponderadas por su rareza: {evidence}; {found} de {total} "
        "términos de la intención encontrados"
    ),
    coverage_missing=", faltan {missing}",
    density_reason=(
        "Los términos de la intención aparecen {times} ({per_k} por cada 1.000 {unit})."
    ),
    where_reason="Dónde: {spots}.",
    spot="{label} {at}",
    at_title="en el título",
    at_opening="en el primer párrafo",
    at_sentence="en la frase {i} de {n}",
    at_inside="dentro de palabras más largas",
    evidence_item="{label} {count}× (peso {weight}{inside})",
    inside_note=", dentro de palabras más largas",
    rel_no_topic=(
        "No hay tema que buscar para {goal}, así que no se puede medir la relevancia; temas "
        "principales del texto: {topics}."
    ),
    no_identifiable_topic="ninguno identificable",
    rel_unrelated=(
        "Ninguno de los términos de la intención ({missing}) aparece en el texto; temas "
        "principales: {topics}, así que probablemente no sirve para {goal}."
    ),
    rel_unknown=(
        "El motor sin conexión no ve significado común con {goal}: compara palabras, no "
        "significados, y el texto nunca usa las palabras de la intención ({missing}). Aun "
        "así puede servirle con otras palabras; temas principales del texto: {topics}."
    ),
    rel_serves=(
        "Sirve para {goal}: menciona {found} de {total} términos de la intención ({evidence})"
    ),
    rel_shares_little=(
        "Tiene poco que ver con {goal}: menciona {found} de {total} términos de la "
        "intención ({evidence})"
    ),
    rel_but_not=", pero no {missing}",
    rel_passage=" Pasaje más relevante: {passage}",
    unknown_note=(
        "Nota: el motor sin conexión no encontró palabras que este texto comparta con tu "
        "intención. Compara palabras, no significados, así que no distingue una paráfrasis de "
        "un desajuste: la ficha se conserva para que la juzgues tú."
    ),
    length="Extensión: {length}, {reading}.",
    structure="Estructura: {sentences}, {paragraphs}.",
    frequent_terms="Términos más frecuentes: {terms}.",
    no_words="No hay palabras que resumir; el texto dice {snippet}.",
    only_symbols="ninguna palabra, solo {symbols}",
    and_word="y",
    thousands=".",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("palabra", "palabras"),
            "sentence": ("frase", "frases"),
            "paragraph": ("párrafo", "párrafos"),
            "cjk": ("carácter CJK/tailandés", "caracteres CJK/tailandeses"),
            "symbol": ("símbolo", "símbolos"),
            "time": ("vez", "veces"),
            "char": ("carácter", "caracteres"),
        }
    ),
)

_RU: Final = Phrases(
    lang="ru",
    this_text=("текст", "текст"),
    titled=("текст «{title}»", "текст «{title}»"),
    goal_quoted="цели «{intent}»",
    your_goal="вашей цели",
    under_a_minute="меньше минуты чтения",
    about_minutes="около {n} мин чтения",
    read_full="Прочитать {ref} целиком ({reading})",
    note_meaning="Кратко записать, что {ref_subj} даёт для {goal}",
    decide_after="Решить, что вы будете делать иначе после прочтения",
    skim_parts="Просмотреть {ref} в поисках мест, важных для {goal}",
    note_one_point="Записать главную мысль, которую стоит сохранить",
    decide_full_read="Решить, стоит ли читать текст целиком",
    glance_opening="Пробежать начало, чтобы убедиться, что текст не нужен для {goal}",
    note_elsewhere="Записать, где ещё искать материал для {goal}",
    archive_if="Отправить {ref} в архив, если он не нужен для {goal}",
    check_study=(
        "Проверить, как проводилось исследование (выборка, метод), прежде чем опираться на "
        "его выводы"
    ),
    decide_agree="Решить, согласны ли вы с аргументом, и почему",
    bookmark="Сохранить {ref} в закладках, где вы храните справочные материалы",
    try_case="Попробовать то, что показывает {ref_subj}, на собственном реальном случае",
    note_steps="Записать, каким из этих шагов вы последуете и когда",
    calendar_sentence="Внести дату в календарь: {sentence}",
    calendar_date="Внести {date} в календарь",
    quote="«{s}»",
    more="ещё {n}",
    decimal=",",
    no_topic_reason="Для {goal} не указана тема, поэтому оценка нейтральная: {n}.",
    no_words_to_match="В тексте нет слов для сравнения.",
    unrelated_reason=(
        "Общего смысла не найдено: ни одно слово намерения ({missing}) не встречается в "
        "тексте{weak}."
    ),
    weak_in_passing=" (лишь частые слова мимоходом: {evidence})",
    elsewhere_reason="Текст явно о другом: {topics}.",
    skipped_reason=(
        "Пропущено на основании этих признаков, а не только из-за отсутствия общих слов: "
        "текст ({words}), который всё время возвращается к другим темам и ни разу не "
        "называет темы намерения, вряд ли ему поможет."
    ),
    unknown_reason="Общего смысла, который видит офлайн-движок, нет: {why}.",
    why_foreign=("намерение, похоже, написано на другом языке ({own}), чем текст ({lang})"),
    why_absent="ни одно слово намерения ({missing}) не встречается в тексте",
    neutral_reason=(
        "Он сравнивает слова, а не смысл, и не отличит пересказ от несовпадения: "
        "нейтральная оценка {n}, карточка не архивирована. Решите сами или подключите "
        "сервер модели (ai.engine = openai)."
    ),
    coverage_reason=(
        "Общие слова с учётом их редкости: {evidence}; найдено терминов намерения: {found} "
        "из {total}"
    ),
    coverage_missing=", нет: {missing}",
    density_reason=("Термины намерения встречаются {times} ({per_k} на 1\xa0000 {unit})."),
    where_reason="Где: {spots}.",
    spot="{label} {at}",
    at_title="в заголовке",
    at_opening="в первом абзаце",
    at_sentence="в предложении {i} из {n}",
    at_inside="внутри более длинных слов",
    evidence_item="{label} {count}× (вес {weight}{inside})",
    inside_note=", внутри более длинных слов",
    rel_no_topic=(
        "Для {goal} не указана тема, поэтому релевантность измерить нельзя; основные темы "
        "текста: {topics}."
    ),
    no_identifiable_topic="не определены",
    rel_unrelated=(
        "Ни один термин намерения ({missing}) не встречается в тексте; основные темы: "
        "{topics}, так что для {goal} он, скорее всего, бесполезен."
    ),
    rel_unknown=(
        "Офлайн-движок не видит общего смысла с намерением: он сравнивает слова, а не "
        "смысл, а в тексте нет слов намерения ({missing}). Текст всё же может быть полезен "
        "для {goal}, если говорит о том же другими словами; основные темы текста: {topics}."
    ),
    rel_serves=(
        "Полезен для {goal}: упомянуто терминов намерения: {found} из {total} ({evidence})"
    ),
    rel_shares_little=(
        "Мало полезен для {goal}: упомянуто терминов намерения: {found} из {total} ({evidence})"
    ),
    rel_but_not=", но не {missing}",
    rel_passage=" Самый подходящий фрагмент: {passage}",
    unknown_note=(
        "Примечание: офлайн-движок не нашёл в этом тексте слов из вашего намерения. Он "
        "сравнивает слова, а не смысл, и не отличит пересказ другими словами от несовпадения: "
        "карточка сохранена, чтобы вы решили сами."
    ),
    length="Объём: {length}, {reading}.",
    structure="Строение: {sentences}, {paragraphs}.",
    frequent_terms="Самые частые слова: {terms}.",
    no_words="Слов для пересказа нет; текст гласит: {snippet}.",
    only_symbols="ни одного слова, только {symbols}",
    and_word="и",
    thousands="\u00a0",
    plurals="slavic",
    nouns=MappingProxyType(
        {
            "word": ("слово", "слова", "слов"),
            "sentence": ("предложение", "предложения", "предложений"),
            "paragraph": ("абзац", "абзаца", "абзацев"),
            "cjk": (
                "знак CJK/тайского письма",
                "знака CJK/тайского письма",
                "знаков CJK/тайского письма",
            ),
            "symbol": ("символ", "символа", "символов"),
            "time": ("раз", "раза", "раз"),
            "char": ("символ", "символа", "символов"),
        }
    ),
)

_PT: Final = Phrases(
    lang="pt",
    this_text=("o texto", "o texto"),
    titled=("“{title}”", "“{title}”"),
    goal_quoted="“{intent}”",
    your_goal="o seu objetivo",
    under_a_minute="menos de um minuto de leitura",
    about_minutes="cerca de {n} min de leitura",
    read_full="Ler {ref} na íntegra ({reading})",
    note_meaning="Anotar em poucas linhas o que {ref_subj} traz para {goal}",
    decide_after="Decidir o que vai fazer de diferente depois da leitura",
    skim_parts="Ler {ref} por alto, à procura das partes úteis para {goal}",
    note_one_point="Anotar a ideia que vale a pena guardar",
    decide_full_read="Decidir se merece uma leitura completa",
    glance_opening="Ler o início para confirmar que não serve para {goal}",
    note_elsewhere="Anotar onde mais procurar para {goal}",
    archive_if="Arquivar {ref} se não servir para {goal}",
    check_study=(
        "Verificar como o estudo foi feito (amostra, método) antes de confiar nos seus resultados"
    ),
    decide_agree="Decidir se concorda com o argumento, e porquê",
    bookmark="Guardar {ref} nos favoritos, onde guarda as suas referências",
    try_case="Experimentar o que {ref_subj} mostra num caso real seu",
    note_steps="Anotar quais destes passos vai seguir, e quando",
    calendar_sentence="Marcar a data no calendário: {sentence}",
    calendar_date="Marcar {date} no calendário",
    quote="“{s}”",
    more="mais {n}",
    decimal=",",
    no_topic_reason=("Não há tema a procurar para {goal}, por isso a pontuação é neutra: {n}."),
    no_words_to_match="O texto não tem palavras para comparar.",
    unrelated_reason=(
        "Nenhum significado comum encontrado: nenhuma palavra da intenção ({missing}) "
        "aparece no texto{weak}."
    ),
    weak_in_passing=" (só palavras comuns, de passagem: {evidence})",
    elsewhere_reason="O texto trata claramente de outras coisas: {topics}.",
    skipped_reason=(
        "Ignorado com base nessas provas, não só por faltarem palavras em comum: um texto "
        "de {words} que volta sempre a outros temas e nunca nomeia os da intenção "
        "dificilmente lhe serve."
    ),
    unknown_reason="Nenhum significado comum que o motor offline consiga ver: {why}.",
    why_foreign=("a intenção parece escrita noutra língua ({own}) que não a do texto ({lang})"),
    why_absent="nenhuma palavra da intenção ({missing}) aparece no texto",
    neutral_reason=(
        "Compara palavras, não significados, por isso não distingue uma paráfrase de um "
        "desencontro: pontuação neutra de {n}, sem arquivar. Avalie por si, ou use um "
        "servidor de modelos (ai.engine = openai)."
    ),
    coverage_reason=(
        "Palavras em comum, ponderadas pela raridade: {evidence}; {found} de {total} termos "
        "da intenção encontrados"
    ),
    coverage_missing=", faltam {missing}",
    density_reason=("Os termos da intenção aparecem {times} ({per_k} por 1.000 {unit})."),
    where_reason="Onde: {spots}.",
    spot="{label} {at}",
    at_title="no título",
    at_opening="no primeiro parágrafo",
    at_sentence="na frase {i} de {n}",
    at_inside="dentro de palavras mais longas",
    evidence_item="{label} {count}× (peso {weight}{inside})",
    inside_note=", dentro de palavras mais longas",
    rel_no_topic=(
        "Não há tema a procurar para {goal}, por isso a relevância não pode ser medida; "
        "temas principais do texto: {topics}."
    ),
    no_identifiable_topic="nenhum identificável",
    rel_unrelated=(
        "Nenhum dos termos da intenção ({missing}) aparece no texto; temas principais: "
        "{topics}, por isso provavelmente não serve para {goal}."
    ),
    rel_unknown=(
        "O motor offline não vê significado comum com {goal}: compara palavras, não "
        "significados, e o texto nunca usa as palavras da intenção ({missing}). Pode ainda "
        "assim servir por outras palavras; temas principais do texto: {topics}."
    ),
    rel_serves=("Serve para {goal}: menciona {found} de {total} termos da intenção ({evidence})"),
    rel_shares_little=(
        "Tem pouco a ver com {goal}: menciona {found} de {total} termos da intenção ({evidence})"
    ),
    rel_but_not=", mas não {missing}",
    rel_passage=" Passagem mais relevante: {passage}",
    unknown_note=(
        "Nota: o motor offline não encontrou palavras que este texto partilhe com a sua "
        "intenção. Compara palavras, não significados, por isso não distingue uma paráfrase de "
        "um desencontro: o cartão fica guardado para que o avalie."
    ),
    length="Extensão: {length}, {reading}.",
    structure="Estrutura: {sentences}, {paragraphs}.",
    frequent_terms="Termos mais frequentes: {terms}.",
    no_words="Sem palavras para resumir; o texto diz {snippet}.",
    only_symbols="nenhuma palavra, só {symbols}",
    and_word="e",
    thousands=".",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("palavra", "palavras"),
            "sentence": ("frase", "frases"),
            "paragraph": ("parágrafo", "parágrafos"),
            "cjk": ("carácter CJK/tailandês", "caracteres CJK/tailandeses"),
            "symbol": ("símbolo", "símbolos"),
            "time": ("vez", "vezes"),
            "char": ("carácter", "caracteres"),
        }
    ),
)

_IT: Final = Phrases(
    lang="it",
    this_text=("il testo", "il testo"),
    titled=("«{title}»", "«{title}»"),
    goal_quoted="«{intent}»",
    your_goal="il tuo obiettivo",
    under_a_minute="meno di un minuto di lettura",
    about_minutes="circa {n} min di lettura",
    read_full="Leggere {ref} per intero ({reading})",
    note_meaning="Annotare in breve cosa offre {ref_subj} per {goal}",
    decide_after="Decidere cosa farai di diverso dopo la lettura",
    skim_parts="Scorrere {ref} cercando le parti utili per {goal}",
    note_one_point="Annotare l’idea che vale la pena tenere",
    decide_full_read="Decidere se merita una lettura completa",
    glance_opening="Leggere l’inizio per confermare che non serve per {goal}",
    note_elsewhere="Annotare dove altro cercare per {goal}",
    archive_if="Archiviare {ref} se non serve per {goal}",
    check_study=(
        "Verificare come è stato condotto lo studio (campione, metodo) prima di fidarsi dei "
        "risultati"
    ),
    decide_agree="Decidere se sei d’accordo con la tesi, e perché",
    bookmark="Aggiungere {ref} ai segnalibri, dove tieni i riferimenti",
    try_case="Provare ciò che mostra {ref_subj} su un tuo caso reale",
    note_steps="Annotare quali di questi passaggi seguirai, e quando",
    calendar_sentence="Segnare la data in calendario: {sentence}",
    calendar_date="Segnare {date} in calendario",
    quote="«{s}»",
    more="altri {n}",
    decimal=",",
    no_topic_reason=("Non c’è un tema da cercare per {goal}, quindi il punteggio è neutro: {n}."),
    no_words_to_match="Il testo non ha parole da confrontare.",
    unrelated_reason=(
        "Nessun significato in comune: nessuna parola dell’intento ({missing}) compare nel "
        "testo{weak}."
    ),
    weak_in_passing=" (solo parole comuni, di sfuggita: {evidence})",
    elsewhere_reason="Il testo parla chiaramente d’altro: {topics}.",
    skipped_reason=(
        "Scartato in base a questi indizi, non solo per la mancanza di parole in comune: un "
        "testo di {words} che torna sempre ad altri temi e non nomina mai quelli "
        "dell’intento difficilmente serve."
    ),
    unknown_reason=("Nessun significato comune che il motore offline possa vedere: {why}."),
    why_foreign=("l’intento sembra scritto in un’altra lingua ({own}) rispetto al testo ({lang})"),
    why_absent="nessuna parola dell’intento ({missing}) compare nel testo",
    neutral_reason=(
        "Confronta parole, non significati, quindi non distingue una parafrasi da un testo "
        "fuori tema: punteggio neutro di {n}, non archiviato. Giudica tu, o usa un server "
        "di modelli (ai.engine = openai)."
    ),
    coverage_reason=(
        "Parole in comune, pesate per rarità: {evidence}; trovati {found} termini "
        "dell’intento su {total}"
    ),
    coverage_missing=", mancano {missing}",
    density_reason=("I termini dell’intento compaiono {times} ({per_k} ogni 1.000 {unit})."),
    where_reason="Dove: {spots}.",
    spot="{label} {at}",
    at_title="nel titolo",
    at_opening="nel primo paragrafo",
    at_sentence="nella frase {i} di {n}",
    at_inside="dentro parole più lunghe",
    evidence_item="{label} {count}× (peso {weight}{inside})",
    inside_note=", dentro parole più lunghe",
    rel_no_topic=(
        "Non c’è un tema da cercare per {goal}, quindi la pertinenza non si può misurare; "
        "temi principali del testo: {topics}."
    ),
    no_identifiable_topic="nessuno identificabile",
    rel_unrelated=(
        "Nessuno dei termini dell’intento ({missing}) compare nel testo; temi principali: "
        "{topics}, quindi probabilmente non serve per {goal}."
    ),
    rel_unknown=(
        "Il motore offline non vede un significato comune con {goal}: confronta parole, non "
        "significati, e il testo non usa mai le parole dell’intento ({missing}). Potrebbe "
        "comunque servire con altre parole; temi principali del testo: {topics}."
    ),
    rel_serves=("Utile per {goal}: cita {found} termini dell’intento su {total} ({evidence})"),
    rel_shares_little=(
        "Poco utile per {goal}: cita {found} termini dell’intento su {total} ({evidence})"
    ),
    rel_but_not=", ma non {missing}",
    rel_passage=" Passaggio più pertinente: {passage}",
    unknown_note=(
        "Nota: il motore offline non ha trovato parole che questo testo condivida con il tuo "
        "intento. Confronta parole, non significati, quindi non distingue una parafrasi da un "
        "testo fuori tema: la scheda resta perché tu possa giudicare."
    ),
    length="Lunghezza: {length}, {reading}.",
    structure="Struttura: {sentences}, {paragraphs}.",
    frequent_terms="Termini più frequenti: {terms}.",
    no_words="Nessuna parola da riassumere; il testo dice {snippet}.",
    only_symbols="nessuna parola, solo {symbols}",
    and_word="e",
    thousands=".",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("parola", "parole"),
            "sentence": ("frase", "frasi"),
            "paragraph": ("paragrafo", "paragrafi"),
            "cjk": ("carattere CJK/thai", "caratteri CJK/thai"),
            "symbol": ("simbolo", "simboli"),
            "time": ("volta", "volte"),
            "char": ("carattere", "caratteri"),
        }
    ),
)

_NL: Final = Phrases(
    lang="nl",
    this_text=("de tekst", "de tekst"),
    titled=("“{title}”", "“{title}”"),
    goal_quoted="“{intent}”",
    your_goal="je doel",
    under_a_minute="minder dan een minuut leestijd",
    about_minutes="ongeveer {n} min leestijd",
    read_full="Lees {ref} helemaal ({reading})",
    note_meaning="Schrijf kort op wat {ref_subj} betekent voor {goal}",
    decide_after="Beslis wat je na het lezen anders gaat doen",
    skim_parts="Scan {ref} op de delen die van belang zijn voor {goal}",
    note_one_point="Noteer het ene punt dat de moeite van bewaren waard is",
    decide_full_read="Beslis of de tekst het helemaal lezen waard is",
    glance_opening="Lees het begin om na te gaan of de tekst iets bijdraagt aan {goal}",
    note_elsewhere="Noteer waar je verder kunt zoeken voor {goal}",
    archive_if="Archiveer {ref} als de tekst niets bijdraagt aan {goal}",
    check_study=(
        "Ga na hoe het onderzoek is gedaan (steekproef, methode) voordat je op de uitkomsten "
        "vertrouwt"
    ),
    decide_agree="Beslis of je het met het betoog eens bent, en waarom",
    bookmark="Zet {ref} bij je bladwijzers, waar je naslagwerk bewaart",
    try_case="Probeer wat {ref_subj} laat zien uit op een eigen, echt geval",
    note_steps="Noteer welke van deze stappen je volgt, en wanneer",
    calendar_sentence="Zet de datum in je agenda: {sentence}",
    calendar_date="Zet {date} in je agenda",
    quote="“{s}”",
    more="{n} meer",
    decimal=",",
    no_topic_reason=(
        "Er is geen onderwerp om naar te zoeken voor {goal}, dus de score is neutraal: {n}."
    ),
    no_words_to_match="De tekst heeft geen woorden om te vergelijken.",
    unrelated_reason=(
        "Geen gedeelde betekenis gevonden: geen van de woorden uit het doel ({missing}) "
        "komt in de tekst voor{weak}."
    ),
    weak_in_passing=" (alleen gewone woorden, terloops: {evidence})",
    elsewhere_reason="De tekst gaat duidelijk over andere dingen: {topics}.",
    skipped_reason=(
        "Overgeslagen op grond van dit bewijs, niet alleen omdat gedeelde woorden "
        "ontbreken: een tekst van {words} die steeds terugkeert naar andere onderwerpen en "
        "die van het doel nooit noemt, helpt er waarschijnlijk niet bij."
    ),
    unknown_reason="Geen gedeelde betekenis die de offline engine kan zien: {why}.",
    why_foreign=("het doel lijkt in een andere taal ({own}) geschreven dan de tekst ({lang})"),
    why_absent=("geen van de woorden uit het doel ({missing}) komt in de tekst voor"),
    neutral_reason=(
        "Hij vergelijkt woorden, geen betekenis, en kan een omschrijving niet van een "
        "misser onderscheiden: neutrale score van {n}, niet gearchiveerd. Oordeel zelf, of "
        "gebruik een modelserver (ai.engine = openai)."
    ),
    coverage_reason=(
        "Gedeelde woorden, gewogen naar zeldzaamheid: {evidence}; {found} van {total} "
        "termen uit het doel gevonden"
    ),
    coverage_missing=", ontbrekend: {missing}",
    density_reason=("Termen uit het doel komen {times} voor ({per_k} per 1.000 {unit})."),
    where_reason="Waar: {spots}.",
    spot="{label} {at}",
    at_title="in de titel",
    at_opening="in de eerste alinea",
    at_sentence="in zin {i} van {n}",
    at_inside="binnen langere woorden",
    evidence_item="{label} {count}× (gewicht {weight}{inside})",
    inside_note=", binnen langere woorden",
    rel_no_topic=(
        "Er is geen onderwerp om naar te zoeken voor {goal}, dus de relevantie is niet te "
        "meten; hoofdonderwerpen van de tekst: {topics}."
    ),
    no_identifiable_topic="geen herkenbare",
    rel_unrelated=(
        "Geen van de termen uit het doel ({missing}) komt in de tekst voor; "
        "hoofdonderwerpen: {topics}, dus de tekst helpt waarschijnlijk niet bij {goal}."
    ),
    rel_unknown=(
        "De offline engine ziet geen gedeelde betekenis met {goal}: hij vergelijkt woorden, "
        "geen betekenis, en de tekst gebruikt de woorden uit het doel nooit ({missing}). De "
        "tekst kan er in andere woorden toch bij helpen; hoofdonderwerpen van de tekst: "
        "{topics}."
    ),
    rel_serves=("Helpt bij {goal}: noemt {found} van {total} termen uit het doel ({evidence})"),
    rel_shares_little=(
        "Heeft weinig te maken met {goal}: noemt {found} van {total} termen uit het doel "
        "({evidence})"
    ),
    rel_but_not=", maar niet {missing}",
    rel_passage=" Meest relevante passage: {passage}",
    unknown_note=(
        "Let op: de offline engine vond geen woorden die deze tekst met je doel deelt. Hij "
        "vergelijkt woorden, geen betekenis, en kan een omschrijving dus niet van een misser "
        "onderscheiden: de kaart blijft bewaard zodat je zelf kunt oordelen."
    ),
    length="Lengte: {length}, {reading}.",
    structure="Opbouw: {sentences}, {paragraphs}.",
    frequent_terms="Meest voorkomende termen: {terms}.",
    no_words="Geen woorden om samen te vatten; de tekst luidt {snippet}.",
    only_symbols="geen woorden, alleen {symbols}",
    and_word="en",
    thousands=".",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("woord", "woorden"),
            "sentence": ("zin", "zinnen"),
            "paragraph": ("alinea", "alinea’s"),
            "cjk": ("CJK/Thai-teken", "CJK/Thai-tekens"),
            "symbol": ("teken", "tekens"),
            "time": ("keer", "keer"),
            "char": ("teken", "tekens"),
        }
    ),
)

_SV: Final = Phrases(
    lang="sv",
    this_text=("texten", "texten"),
    titled=("”{title}”", "”{title}”"),
    goal_quoted="”{intent}”",
    your_goal="ditt mål",
    under_a_minute="under en minuts läsning",
    about_minutes="cirka {n} min läsning",
    read_full="Läs {ref} i sin helhet ({reading})",
    note_meaning="Skriv en kort anteckning om vad {ref_subj} betyder för {goal}",
    decide_after="Bestäm vad du ska göra annorlunda efter läsningen",
    skim_parts="Skumma {ref} efter de delar som rör {goal}",
    note_one_point="Anteckna den enda poäng som är värd att spara",
    decide_full_read="Bestäm om texten är värd att läsa i sin helhet",
    glance_opening="Titta på början för att se om texten är till hjälp för {goal}",
    note_elsewhere="Anteckna var du annars kan leta för {goal}",
    archive_if="Arkivera {ref} om texten inte är till hjälp för {goal}",
    check_study="Kontrollera hur studien gjordes (urval, metod) innan du litar på resultaten",
    decide_agree="Bestäm om du håller med om argumentet, och varför",
    bookmark="Bokmärk {ref} där du sparar referenser",
    try_case="Pröva det {ref_subj} visar på ett eget, verkligt fall",
    note_steps="Anteckna vilka av stegen du ska följa, och när",
    calendar_sentence="Skriv in datumet i kalendern: {sentence}",
    calendar_date="Skriv in {date} i kalendern",
    quote="”{s}”",
    more="{n} till",
    decimal=",",
    no_topic_reason=("Det finns inget ämne att leta efter för {goal}, så poängen är neutral: {n}."),
    no_words_to_match="Texten har inga ord att jämföra.",
    unrelated_reason=(
        "Ingen gemensam betydelse hittades: inget av orden i syftet ({missing}) förekommer "
        "i texten{weak}."
    ),
    weak_in_passing=" (bara vanliga ord i förbigående: {evidence})",
    elsewhere_reason="Texten handlar tydligt om annat: {topics}.",
    skipped_reason=(
        "Hoppades över på grund av dessa belägg, inte bara för att gemensamma ord saknas: "
        "en text på {words} som hela tiden återvänder till andra ämnen och aldrig nämner "
        "syftets hjälper knappast."
    ),
    unknown_reason="Ingen gemensam betydelse som offlinemotorn kan se: {why}.",
    why_foreign=("syftet verkar skrivet på ett annat språk ({own}) än texten ({lang})"),
    why_absent="inget av orden i syftet ({missing}) förekommer i texten",
    neutral_reason=(
        "Den jämför ord, inte betydelse, och kan inte skilja en omskrivning från en "
        "felträff: neutral poäng {n}, inte arkiverad. Bedöm själv, eller använd en "
        "modellserver (ai.engine = openai)."
    ),
    coverage_reason=(
        "Gemensamma ord, viktade efter hur ovanliga de är: {evidence}; {found} av {total} "
        "termer i syftet hittades"
    ),
    coverage_missing=", saknas: {missing}",
    density_reason="Syftets termer förekommer {times} ({per_k} per 1\xa0000 {unit}).",
    where_reason="Var: {spots}.",
    spot="{label} {at}",
    at_title="i titeln",
    at_opening="i första stycket",
    at_sentence="i mening {i} av {n}",
    at_inside="inuti längre ord",
    evidence_item="{label} {count}× (vikt {weight}{inside})",
    inside_note=", inuti längre ord",
    rel_no_topic=(
        "Det finns inget ämne att leta efter för {goal}, så relevansen kan inte mätas; "
        "textens huvudämnen: {topics}."
    ),
    no_identifiable_topic="inga som går att urskilja",
    rel_unrelated=(
        "Inga av syftets termer ({missing}) förekommer i texten; huvudämnen: {topics}, så "
        "den hjälper troligen inte {goal}."
    ),
    rel_unknown=(
        "Offlinemotorn ser ingen gemensam betydelse med {goal}: den jämför ord, inte "
        "betydelse, och texten använder aldrig syftets ord ({missing}). Den kan ändå hjälpa "
        "med andra ord; textens huvudämnen: {topics}."
    ),
    rel_serves=("Hjälper {goal}: nämner {found} av {total} termer i syftet ({evidence})"),
    rel_shares_little=(
        "Har lite med {goal} att göra: nämner {found} av {total} termer i syftet ({evidence})"
    ),
    rel_but_not=", men inte {missing}",
    rel_passage=" Mest relevanta stycke: {passage}",
    unknown_note=(
        "Obs: offlinemotorn hittade inga ord som texten delar med ditt syfte. Den jämför ord, "
        "inte betydelse, och kan inte skilja en omskrivning från en felträff: kortet sparas så "
        "att du kan bedöma det själv."
    ),
    length="Längd: {length}, {reading}.",
    structure="Uppbyggnad: {sentences}, {paragraphs}.",
    frequent_terms="Vanligaste termer: {terms}.",
    no_words="Inga ord att sammanfatta; texten lyder {snippet}.",
    only_symbols="inga ord, bara {symbols}",
    and_word="och",
    thousands="\u00a0",
    plurals="one_other",
    nouns=MappingProxyType(
        {
            "word": ("ord", "ord"),
            "sentence": ("mening", "meningar"),
            "paragraph": ("stycke", "stycken"),
            "cjk": ("CJK/thai-tecken", "CJK/thai-tecken"),
            "symbol": ("tecken", "tecken"),
            "time": ("gång", "gånger"),
            "char": ("tecken", "tecken"),
        }
    ),
)

#: Every table, by ISO 639-1 code.
PHRASES: Final[Mapping[str, Phrases]] = MappingProxyType(
    {p.lang: p for p in (_EN, _DE, _FR, _ES, _RU, _PT, _IT, _NL, _SV)}
)
ENGLISH: Final = _EN


def phrases_for(lang: str | None) -> Phrases:
    """The table for ``lang`` ("fr", "fr-CA", "pt_BR"); English for any other language."""
    if not lang:
        return ENGLISH
    return PHRASES.get(lang.replace("_", "-").split("-")[0].casefold(), ENGLISH)
