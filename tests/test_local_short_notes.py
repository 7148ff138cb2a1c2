"""The offline engine on short notes (two or three sentences) in several languages and scripts.

The notes here were written for these tests; the held-out set in
``tests/data/short_notes_heldout.json`` is measured by ``tests/short_notes.py``
(``python -m tests.short_notes`` prints its figures) and never tuned on.
"""

from __future__ import annotations

import pytest

from readdod.engines.base import EngineInput
from readdod.engines.local import build_card, detect_genre, plan_todos, score_text, summarize_text
from readdod.engines.local.instructions import find_instructions
from readdod.extraction import extract_text
from readdod.steps import rubric
from readdod.text import split_sentences, word_count
from tests.short_notes import Note, genre_todos, measure, own_steps, quotes_whole_text, run

NOTES = [
    Note(
        "en",
        "car care",
        "Long trip on Saturday. Before you leave, check the tyre pressure and top up the "
        "washer fluid.",
    ),
    Note(
        "en",
        "home safety",
        "The smoke alarm chirps at night. Replace its battery once a year and press the test "
        "button every month.",
    ),
    Note(
        "es",
        "huerto en casa",
        "La albahaca se seca rápido en verano. Pon la maceta a la sombra por la tarde y "
        "riégala cada mañana.",
    ),
    Note(
        "es",
        "cocina",
        "La plancha se ensucia mucho. Después de cocinar, limpia la superficie con papel de "
        "cocina.",
    ),
    Note(
        "fr",
        "ordinateur",
        "Mon ordinateur chauffe beaucoup. Nettoyez les ventilateurs avec une bombe d'air et "
        "posez-le sur une surface dure.",
    ),
    Note(
        "de",
        "Wohnung",
        "Die Fenster beschlagen im Winter oft. Lüften Sie morgens zehn Minuten quer und "
        "wischen Sie das Wasser ab.",
    ),
    Note("zh", "洗衣机", "洗衣机有异味的时候，先空转一次高温程序。平时洗完衣服记得打开盖子通风。"),
    Note("zh", "阳台种菜", "阳台的番茄长得很快。每周给番茄施一次肥，然后把侧枝剪掉。"),
    Note(
        "ja",
        "コーヒー",
        "コーヒーを淹れる前に、豆を挽いてください。お湯は九十度くらいにしましょう。",
    ),
]

PLAIN = [
    Note(
        "en",
        "coffee",
        "Our office switched to a new espresso machine this spring. One study says people "
        "drink more coffee when it tastes better, and the queue at noon seems to prove it.",
    ),
    Note("zh", "城市", "这座城市的地铁很方便。很多人每天坐地铁上班，周末也很热闹。"),
]


@pytest.mark.parametrize("note", NOTES, ids=lambda n: f"{n.lang}-{n.intent}")
def test_a_short_notes_own_instructions_become_its_todos(note: Note) -> None:
    card = run(note)
    assert own_steps(note, card), [t.title for t in card.todos]
    assert rubric.check(card) == []
    assert 3 <= len(card.todos) <= 7
    assert [t.kind for t in card.todos].count("output") == 1


@pytest.mark.parametrize("note", NOTES + PLAIN, ids=lambda n: f"{n.lang}-{n.intent}")
def test_a_note_is_titled_by_its_first_sentence_never_quoted_whole(note: Note) -> None:
    card = run(note)
    assert card.title == split_sentences(note.text)[0]
    assert not quotes_whole_text(note, card)
    assert all(note.text not in t.title for t in card.todos)


def test_a_one_paragraph_note_is_titled_by_its_first_sentence() -> None:
    assert extract_text("出门前检查门窗。记得带钥匙。").title == "出门前检查门窗。"
    assert extract_text("Water less in winter. Feed it in May.").title == "Water less in winter."
    # A heading line stays the title; a first sentence too long for one gives none.
    assert extract_text("Winter care\n\nWater less. Feed in May.").title == "Winter care"
    assert extract_text("长" * 60 + "。短句。").title is None


def test_a_title_that_is_the_whole_note_is_cut_to_its_first_sentence() -> None:
    """An item captured before notes were titled by their first sentence has the whole
    note as its title: the card shows the first sentence, the todos quote none of it."""
    text = "睡前一小时放下手机。每天同一时间起床，周末也一样。"
    inp = EngineInput(text=text, intent="睡眠", title=text)
    summary = summarize_text(inp)
    score = score_text(inp, summary)
    todos = plan_todos(inp, summary, score)
    card = build_card(inp, summary, score, todos)
    assert card.title == "睡前一小时放下手机。"
    assert not any("睡前一小时" in t.title for t in todos.items if t.kind != "action")
    assert rubric.check(card) == []


def test_todos_do_not_quote_a_notes_first_sentence_as_if_it_were_its_title() -> None:
    note = Note("en", "rust", "The gate hinge squeaks. Spray it with oil and open it a few times.")
    card = run(note)
    assert card.title == "The gate hinge squeaks."
    assert not any("squeaks" in t.title for t in card.todos), [t.title for t in card.todos]
    # A heading is a title and is quoted as one.
    heading = Note("en", "rust", "Gate hinge\n\nSpray it with oil and open it a few times.")
    assert any("“Gate hinge”" in t.title for t in run(heading).todos)


def test_a_labelled_instruction_counts_after_its_label() -> None:
    text = "Iced tea: steep some tea bags in cold water overnight. It keeps for days."
    assert find_instructions(text, "en", 5) == [
        "Iced tea: steep some tea bags in cold water overnight."
    ]
    # A number after a noun is no object: "Chapter two" is not an instruction.
    assert find_instructions("Chapter two covers the history of the valley.", "en", 5) == []


def test_one_imperative_is_a_step_in_a_note_but_not_in_an_essay() -> None:
    note = "The kettle is slow again. Descale it with vinegar and rinse it twice."
    assert find_instructions(note, "en", 5) == ["Descale it with vinegar and rinse it twice."]
    essay = " ".join(f"Essay sentence number {i} is about habits and tools." for i in range(12))
    assert find_instructions(essay + " Descale it with vinegar and rinse it twice.", "en", 5) == []


def test_several_imperatives_in_one_sentence_are_found_after_a_lead_clause() -> None:
    text = (
        "The pump drips. If it leaks again, shut off the valve, loosen the nut and swap the seal."
    )
    assert find_instructions(text, "en", 5) == [
        "If it leaks again, shut off the valve, loosen the nut and swap the seal."
    ]
    text = "El grifo gotea. Primero cierra la llave y luego cambia la junta."
    assert find_instructions(text, "es", 5) == ["Primero cierra la llave y luego cambia la junta."]


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        (
            "zh",
            "猫咪掉毛很多。每天给猫梳一次毛。换季时请多吸几次地。",
            ["每天给猫梳一次毛。", "换季时请多吸几次地。"],
        ),
        (
            "zh",
            "北京今天下了大雨。很多航班被取消，机场里人很多。",
            [],
        ),
        (
            "zh",
            "这台咖啡机很好用。用完之后倒掉咖啡渣。十年前这里是一家书店。",
            ["用完之后倒掉咖啡渣。"],
        ),
        (
            "ja",
            "カビが生えやすい季節です。窓を開けて換気してください。まず浴室の水気を拭きましょう。",
            ["窓を開けて換気してください。", "まず浴室の水気を拭きましょう。"],
        ),
        (
            "ja",
            "駅前に新しいパン屋ができた。朝から多くの人が並んでいる。",
            [],
        ),
        (
            "ja",
            "カレーは前の日に作るとおいしい。玉ねぎを炒めたら、次に肉を入れます。",
            ["玉ねぎを炒めたら、次に肉を入れます。"],
        ),
    ],
)
def test_chinese_and_japanese_instructions(lang: str, text: str, expected: list[str]) -> None:
    assert find_instructions(text, lang, 5) == expected


def test_a_chinese_report_with_a_stray_cue_gives_no_steps() -> None:
    report = "".join(
        f"第{i}个项目的进展情况良好，相关部门已经完成了初步评估。" for i in range(1, 11)
    )
    report += "会后发表了一份简短的声明。市民对这项计划普遍表示支持。"
    assert find_instructions(report, "zh", 5) == []
    assert "请按时提交材料。" in find_instructions(report + "请按时提交材料。", "zh", 5)


def test_cjk_sentences_are_long_enough_by_their_characters() -> None:
    # Two Han characters make a word: a seven-character step is a sentence, not a fragment.
    assert word_count("每天给猫梳一次毛。") >= 3
    assert find_instructions("请关灯。", "zh", 5) == []  # too short to be a step


def test_a_genre_todo_needs_more_than_one_telltale_word() -> None:
    note = PLAIN[0]
    assert detect_genre(note.text, word_count(note.text)) == "general"
    assert genre_todos(run(note)) == []
    paper = (
        "We propose a method for ranking notes. The study had 40 participants; the results "
        "were statistically significant across the dataset."
    )
    assert detect_genre(paper, word_count(paper)) == "research"


def test_the_held_out_short_notes() -> None:
    """Figures on notes never tuned on (``python -m tests.short_notes`` prints them):
    24 how-to notes and 7 that give no instructions, in six languages. Before this
    engine found instructions in short notes and CJK text: 6/24, and 25/31 cards
    titled with the whole note."""
    f = measure()
    assert f.with_own_steps >= 20, f
    assert f.plain_with_steps == 0, f
    assert f.plain_with_genre_todo == 0, f
    assert f.whole_text_quoted == 0, f
    assert f.rubric_failures == 0, f
