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

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

Noun = Literal["word", "sentence", "paragraph", "cjk", "symbol"]
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
        return self.goal_quoted.format(intent=intent) if intent else self.your_goal

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
