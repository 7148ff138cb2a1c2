"""The local engine words what it writes itself in the text's language.

Each language gets a real paragraph written here (a council debating cycle lanes,
told as a local paper would), run through the whole engine; what it says of its
own must be one of that language's templates and none of the English ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from readdod.engines.base import EngineInput
from readdod.engines.local import LocalEngine, analyze
from readdod.engines.local.phrases import ENGLISH, PHRASES, TODO_FIELDS, Phrases, phrases_for
from readdod.items.models import Card, Score, Summary, Todos
from readdod.text.wordlists import STEMMED
from tests.phrasing import fits, template_re, todo_field

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Sample:
    text: str
    intent: str


SAMPLES: dict[str, Sample] = {
    "en": Sample(
        "The city council debated on Tuesday whether to extend the cycle lanes in the city "
        "centre. Many residents want wider and safer lanes for their daily ride to work. The "
        "council puts the cost at several million pounds, part of which the county would pay. "
        "Shopkeepers fear that many parking spaces would disappear. A decision is expected in "
        "the spring, after a public consultation.",
        "cycle lanes in the city centre",
    ),
    "de": Sample(
        "Der Stadtrat hat am Dienstag über den Ausbau der Radwege in der Innenstadt beraten. "
        "Viele Bürger wünschen sich breitere und sicherere Wege für die tägliche Fahrt zur "
        "Arbeit. Die Verwaltung rechnet mit Kosten von mehreren Millionen Euro, die zum Teil "
        "vom Land getragen werden. Die Händler fürchten, dass dafür viele Parkplätze wegfallen. "
        "Eine Entscheidung fällt im Frühjahr, nachdem die Pläne öffentlich ausgelegt wurden.",
        "Radwege in der Innenstadt",
    ),
    "fr": Sample(
        "Le conseil municipal a débattu mardi de l'extension des pistes cyclables dans le "
        "centre-ville. Beaucoup d'habitants souhaitent des voies plus larges et plus sûres pour "
        "aller au travail. La mairie estime le coût à plusieurs millions d'euros, dont une "
        "partie serait prise en charge par la région. Les commerçants craignent la disparition "
        "de nombreuses places de stationnement. Une décision est attendue au printemps, après "
        "une consultation publique.",
        "pistes cyclables du centre-ville",
    ),
    "es": Sample(
        "El ayuntamiento debatió el martes la ampliación de los carriles bici en el centro de "
        "la ciudad. Muchos vecinos piden carriles más anchos y seguros para ir al trabajo cada "
        "día. El consistorio calcula un coste de varios millones de euros, que en parte pagará "
        "la comunidad autónoma. Los comerciantes temen perder muchas plazas de aparcamiento. "
        "La decisión se tomará en primavera, después de una consulta pública.",
        "carriles bici en el centro",
    ),
    "ru": Sample(
        "Во вторник городской совет обсудил расширение велодорожек в центре города. Многие "
        "жители хотят более широких и безопасных дорожек, чтобы каждый день ездить на работу. "
        "Мэрия оценивает расходы в несколько миллионов рублей, часть которых возьмёт на себя "
        "область. Владельцы магазинов опасаются, что исчезнет много парковочных мест. Решение "
        "примут весной, после общественных слушаний.",
        "велодорожки в центре города",
    ),
    "pt": Sample(
        "A câmara municipal discutiu na terça-feira a ampliação das ciclovias no centro da "
        "cidade. Muitos moradores querem vias mais largas e mais seguras para ir para o "
        "trabalho todos os dias. A autarquia estima um custo de vários milhões de euros, parte "
        "dos quais será paga pelo governo regional. Os comerciantes temem perder muitos lugares "
        "de estacionamento. A decisão deverá ser tomada na primavera, depois de uma consulta "
        "pública.",
        "ciclovias no centro da cidade",
    ),
    "it": Sample(
        "Martedì il consiglio comunale ha discusso l'ampliamento delle piste ciclabili nel "
        "centro della città. Molti cittadini chiedono percorsi più larghi e più sicuri per "
        "andare al lavoro ogni giorno. Il comune stima un costo di diversi milioni di euro, in "
        "parte coperto dalla regione. I commercianti temono di perdere molti posti auto. La "
        "decisione arriverà in primavera, dopo una consultazione pubblica.",
        "piste ciclabili nel centro",
    ),
    "nl": Sample(
        "De gemeenteraad heeft dinsdag gesproken over de uitbreiding van de fietspaden in de "
        "binnenstad. Veel bewoners willen bredere en veiligere paden om elke dag naar hun werk "
        "te fietsen. De gemeente schat de kosten op enkele miljoenen euro's, waarvan de "
        "provincie een deel betaalt. Winkeliers vrezen dat er veel parkeerplaatsen verdwijnen. "
        "Het besluit valt in het voorjaar, na een openbare inspraakronde.",
        "fietspaden in de binnenstad",
    ),
    "sv": Sample(
        "Kommunfullmäktige diskuterade på tisdagen utbyggnaden av cykelbanorna i innerstaden. "
        "Många invånare vill ha bredare och säkrare banor för att cykla till jobbet varje dag. "
        "Kommunen räknar med en kostnad på flera miljoner kronor, varav regionen betalar en "
        "del. Handlarna är oroliga för att många parkeringsplatser försvinner. Beslutet fattas "
        "i vår, efter ett offentligt samråd.",
        "cykelbanor i innerstaden",
    ),
}
#: An intent sharing no word with any sample: the engine has no evidence either way.
UNSHARED = "kubernetes autoscaling"


#: What the score's reasons and the summary's relevance line are made from.
REASON_FIELDS = (
    "length",
    "frequent_terms",
    "no_words_to_match",
    "no_topic_reason",
    "unrelated_reason",
    "elsewhere_reason",
    "skipped_reason",
    "unknown_reason",
    "neutral_reason",
    "coverage_reason",
    "density_reason",
    "where_reason",
)
RELEVANCE_FIELDS = (
    "rel_no_topic",
    "rel_unrelated",
    "rel_unknown",
    "rel_serves",
    "rel_shares_little",
)


async def run_all(text: str, intent: str, **extra: object) -> tuple[Summary, Score, Todos, Card]:
    engine = LocalEngine()
    inp = EngineInput(text=text, intent=intent, **extra)  # type: ignore[arg-type]
    summary = (await engine.summarize(inp)).payload
    score = (await engine.score(inp, summary)).payload
    todos = (await engine.todos(inp, summary, score)).payload
    card = (await engine.card(inp, summary, score, todos)).payload
    return summary, score, todos, card


async def card_for(text: str, intent: str, **extra: object) -> tuple[Summary, Todos, Card]:
    summary, _, todos, card = await run_all(text, intent, **extra)
    return summary, todos, card


def opens(line: str, ph: Phrases, fields: tuple[str, ...]) -> str | None:
    """The field of ``ph`` whose template ``line`` is, possibly followed by more (a reason
    that adds what is missing)."""
    return next((f for f in fields if starts(line, getattr(ph, f))), None)


def starts(line: str, template: str) -> bool:
    return template_re(template.rstrip(".") + "{rest}").match(line) is not None


def own_todos(todos: Todos, text: str) -> list[str]:
    """The todos the engine worded itself (not sentences taken from the text)."""
    flat = " ".join(text.split())
    return [t.title for t in todos.items if t.title.rstrip(".") not in flat]


def assert_worded_in(titles: list[str], ph: Phrases) -> None:
    for title in titles:
        field = todo_field(title, ph)
        assert field is not None, (ph.lang, title)
        if ph is not ENGLISH:
            assert todo_field(title, ENGLISH) is None, (ph.lang, title)
            assert not fits(title, getattr(ENGLISH, field)), (ph.lang, title)


def test_every_stemmed_language_has_a_table_and_a_sample() -> None:
    assert set(PHRASES) == set(STEMMED)
    assert set(SAMPLES) == set(STEMMED)


def test_tables_differ_from_english_and_keep_its_placeholders() -> None:
    for lang, ph in PHRASES.items():
        for field in TODO_FIELDS:
            mine, english = getattr(ph, field), getattr(ENGLISH, field)
            # Every placeholder a template uses is one the English one gets filled with.
            names = {p.split("}")[0] for p in mine.split("{")[1:]}
            assert names <= {"ref", "ref_subj", "goal", "reading", "sentence", "date"}, field
            if lang != "en":
                assert mine != english, (lang, field)


@pytest.mark.parametrize("lang", sorted(SAMPLES))
async def test_todos_come_in_the_texts_language(lang: str) -> None:
    sample = SAMPLES[lang]
    assert analyze(sample.text).lang == lang  # the sample really is in that language
    ph = PHRASES[lang]
    _, todos, _ = await card_for(sample.text, sample.intent)
    mine = own_todos(todos, sample.text)
    assert len(mine) >= 2, todos
    assert_worded_in(mine, ph)
    # The intent is quoted the language's way.
    assert any(ph.goal(sample.intent) in t for t in mine), (lang, mine)


@pytest.mark.parametrize("lang", sorted(SAMPLES))
async def test_a_title_is_quoted_the_languages_way(lang: str) -> None:
    sample = SAMPLES[lang]
    _, todos, _ = await card_for(sample.text, sample.intent, title="Radwege 2027")
    mine = own_todos(todos, sample.text)
    assert_worded_in(mine, PHRASES[lang])
    assert any(PHRASES[lang].ref("Radwege 2027")[0] in t for t in mine), (lang, mine)


@pytest.mark.parametrize("lang", sorted(SAMPLES))
async def test_no_evidence_note_and_fallback_todos_in_the_texts_language(lang: str) -> None:
    sample = SAMPLES[lang]
    ph = PHRASES[lang]
    _, todos, card = await card_for(sample.text, UNSHARED)
    assert ph.unknown_note in card.summary
    if lang != "en":
        assert ENGLISH.unknown_note not in card.summary
    assert_worded_in(own_todos(todos, sample.text), ph)


async def test_a_how_to_texts_note_on_its_steps_is_in_its_language() -> None:
    text = (
        "So kommt Ihr Fahrrad gut durch den Winter. Die Kette leidet unter Salz und Nässe.\n\n"
        "1. Reinigen Sie die Kette nach jeder Fahrt mit einem trockenen Lappen.\n"
        "2. Ölen Sie die Kette einmal in der Woche mit einem dünnen Kettenöl.\n"
        "3. Prüfen Sie den Reifendruck vor jeder längeren Fahrt.\n"
        "4. Stellen Sie das Fahrrad über Nacht in einen trockenen Keller.\n"
    )
    assert analyze(text).lang == "de"
    _, todos, _ = await card_for(text, "Fahrrad im Winter pflegen")
    titles = [t.title for t in todos.items]
    assert PHRASES["de"].note_steps in titles
    assert ENGLISH.note_steps not in titles


async def test_key_point_facts_of_a_short_text_are_in_its_language() -> None:
    # Too few sentences of its own: the engine fills the key points with facts about it.
    text = "Велодорожки в центре города расширят весной. Работы оплатит область из своего бюджета."
    summary, _, _ = await card_for(text, "велодорожки", lang="ru")
    ph = PHRASES["ru"]
    facts = [p for p in summary.key_points if p not in text]
    assert facts
    for p in facts:
        assert any(fits(p, t) for t in (ph.length, ph.structure, ph.frequent_terms)), p
        assert not any(fits(p, t) for t in (ENGLISH.length, ENGLISH.structure)), p


def test_counts_take_the_languages_plural_forms() -> None:
    ru = PHRASES["ru"]
    assert [ru.count(n, "word") for n in (1, 3, 5, 11, 21, 1234)] == [
        "1 слово",
        "3 слова",
        "5 слов",
        "11 слов",
        "21 слово",
        "1\u00a0234 слова",
    ]
    assert ENGLISH.count(1, "word") == "1 word"
    assert ENGLISH.count(1234, "word") == "1,234 words"
    assert PHRASES["de"].count(2, "sentence") == "2 Sätze"


def test_an_unknown_language_falls_back_to_english() -> None:
    assert phrases_for("pt-BR") is PHRASES["pt"]
    assert phrases_for("fr_CA") is PHRASES["fr"]
    for lang in ("ja", "xx", "", None):
        assert phrases_for(lang) is ENGLISH


@pytest.mark.parametrize("lang", sorted(SAMPLES))
@pytest.mark.parametrize("shared", [True, False])
async def test_reasons_and_relevance_come_in_the_texts_language(lang: str, shared: bool) -> None:
    sample = SAMPLES[lang]
    ph = PHRASES[lang]
    intent = sample.intent if shared else UNSHARED
    summary, score, _, _ = await run_all(sample.text, intent)
    for reason in score.reasons:
        assert opens(reason, ph, REASON_FIELDS) is not None, (lang, reason)
        if lang != "en":
            assert opens(reason, ENGLISH, REASON_FIELDS) is None, (lang, reason)
    field = opens(summary.intent_relevance, ph, RELEVANCE_FIELDS)
    assert field == ("rel_serves" if shared else "rel_unknown"), (lang, summary.intent_relevance)
    if lang != "en":
        assert opens(summary.intent_relevance, ENGLISH, RELEVANCE_FIELDS) is None
    # Evidence quotes the words it found the language's way.
    if shared:
        assert any(ph.quote.split("{s}")[0] in r for r in score.reasons), (lang, score.reasons)


@pytest.mark.parametrize("lang", sorted(SAMPLES))
@pytest.mark.parametrize("shared", [True, False])
async def test_a_long_title_and_intent_still_give_every_todo(lang: str, shared: bool) -> None:
    """Quoting both whole could outgrow a todo's title; the todo names them less fully
    rather than being left out."""
    sample = SAMPLES[lang]
    title = ("Radwege, Parkplätze und Geld: was der Stadtrat beschlossen hat " * 2)[:70]
    filler = " und dazu noch mehr Worte" * 4 if shared else " ohne Bezug zu irgendwas" * 4
    intent = ((sample.intent if shared else UNSHARED) + filler)[:80]
    _, todos, _ = await card_for(sample.text, intent, title=title)
    assert len(todos.items) >= 3, todos
    assert all(len(t.title) <= 200 for t in todos.items)
    assert_worded_in(own_todos(todos, sample.text), PHRASES[lang])
