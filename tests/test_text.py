"""readdod.text: one word count and one reading time, whoever asks.

A table of texts in several scripts, each with its expected word count and
reading time; then extraction and every engine are asked about the same
texts and must give the toolkit's answer.
"""

from __future__ import annotations

import pytest

from readdod import text
from readdod.engines import openai as oa
from readdod.engines.base import EngineInput
from readdod.engines.fixed import FixedEngine
from readdod.engines.local import LocalEngine
from readdod.errors import AIError, ExtractionError
from readdod.extraction.extract import extract_text

pytestmark = pytest.mark.anyio

ENGLISH = (
    "Readers keep a queue of articles they mean to read. The queue grows faster than anyone "
    "reads it, so a short card that says what a page is about, and whether it serves the "
    "reader's goal, saves an evening. State-of-the-art tools summarise; few say why to read.\n\n"
) * 12
GERMAN = (
    "Die Stadt baut neue Radwege entlang der Hauptstraße. Nach Angaben der Verwaltung "
    "beginnen die Arbeiten im Mai und dauern etwa drei Monate. Anwohner können ihre Fragen "
    "bei einer Versammlung im Rathaus stellen; über 300 Parkplätze fallen weg.\n\n"
) * 10
CHINESE_PARAGRAPH = (
    "研究人员发现，午睡可以帮助大脑巩固白天学到的知识。在一项为期三个月的实验中，"
    "参加者每天午睡二十分钟，记忆测试的成绩明显提高。研究团队认为，短暂的睡眠让海马体"
    "有时间整理新的信息，并把它们转移到长期记忆中。不过，午睡时间过长反而会让人感到"
    "疲倦，影响下午的工作效率。专家建议，午睡最好控制在半小时以内，并且不要太晚。"
)
CHINESE = "\n\n".join([CHINESE_PARAGRAPH] * 26)
JAPANESE = (
    "東京都は新しい鉄道路線の建設を発表した。工事は来年の春に始まり、二〇三〇年に開業する"
    "予定だ。沿線の住民によると、通勤の時間が大幅に短くなるという。\n\n"
) * 8
KOREAN = (
    "서울은 한국의 수도입니다. 많은 사람들이 서울에 삽니다. 서울에는 궁궐과 박물관이 "
    "많고, 지하철로 어디든 쉽게 갈 수 있습니다.\n\n"
) * 10
THAI = (
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นศูนย์กลางทางเศรษฐกิจ "
    "ผู้คนจำนวนมากเดินทางด้วยรถไฟฟ้าเพื่อหลีกเลี่ยงการจราจรที่ติดขัดในช่วงเช้าและเย็น\n\n"
) * 10
MIXED = (
    "Python 3.12 で型ヒントが改善された。The release notes list 40 changes; "
    "深度学习 frameworks adopt them quickly, และนักพัฒนาชอบมัน.\n\n"
) * 6
CODE = (
    "def word_count(text: str) -> int:\n"
    "    tokens = text.split()\n"
    "    return len([t for t in tokens if any(c.isalnum() for c in t)])\n\n"
    "$ python -m pytest -q -n 2 tests/test_text.py && echo ok\n"
)

#: name -> (text, words, minutes). Words: whitespace tokens with a letter or digit,
#: plus half a word for each Han, kana or Thai character (rounded up once).
TABLE: dict[str, tuple[str, int, int]] = {
    "english": (ENGLISH, 564, 3),
    "german": (GERMAN, 370, 2),
    "chinese": (CHINESE, 1_833, 8),
    "japanese": (JAPANESE, 280, 2),
    "korean": (KOREAN, 170, 1),
    "thai": (THAI, 725, 4),
    "mixed": (MIXED, 168, 1),
    "empty": ("", 0, 0),
    "punctuation": ("— … !!! ??? -- ... · “ ” ***", 0, 0),
    "code": (CODE, 27, 1),
}


def test_chinese_sample_is_about_four_thousand_characters() -> None:
    assert 3_900 <= len(CHINESE) <= 4_200


@pytest.mark.parametrize("name", TABLE)
def test_word_count_and_reading_time(name: str) -> None:
    sample, words, minutes = TABLE[name]
    assert text.word_count(sample) == words
    assert text.reading_minutes(sample) == minutes
    assert text.minutes_for(words) == minutes


def test_reading_time_rounds_up_at_one_speed() -> None:
    assert text.WORDS_PER_MINUTE == 230
    assert [text.minutes_for(n) for n in (0, 1, 230, 231, 460)] == [0, 1, 1, 2, 2]


def test_unspaced_characters_count_half_a_word_each() -> None:
    assert text.CHARS_PER_WORD == 2
    assert text.word_count("日本語の文章です") == 4
    assert text.word_count("ภาษาไทย") == 4  # 7 characters, rounded up
    assert text.word_count("서울은 한국의 수도입니다") == 3  # hangul is spaced


def test_scripts_are_told_apart() -> None:
    counts = text.script_counts("東京は日本の首都です")
    assert counts["han"] == 6 and counts["kana"] == 4 and counts["latin"] == 0
    assert text.is_unspaced("ก") and text.is_unspaced("漢") and text.is_unspaced("ｶ")
    assert not text.is_unspaced("한") and not text.is_unspaced("a")


def test_sentences_respect_abbreviations_and_cjk_marks() -> None:
    assert text.split_sentences("Dr. Smith arrived, e.g. late. Then he left!") == [
        "Dr. Smith arrived, e.g. late.",
        "Then he left!",
    ]
    assert text.split_sentences("東京です。大阪です。") == ["東京です。", "大阪です。"]
    assert text.join_sentences(["東京です。", "大阪です。"]) == "東京です。大阪です。"
    assert text.join_sentences(["One.", "Two."]) == "One. Two."


def test_chunks_pack_within_the_target_and_keep_every_word() -> None:
    levels = (text.Level(text.paragraphs, "\n\n"), text.Level(text.split_sentences, " "))
    chunks = text.chunk(ENGLISH, levels, 400)
    assert len(chunks) > 1
    assert all(len(c) <= 400 for c in chunks)
    assert "".join("".join(chunks).split()) == "".join(ENGLISH.split())
    run_on = "深度学习很有趣" * 200
    sliced = text.chunk(run_on, (text.Level(text.split_clauses, " "),), 300, limit=600)
    assert [len(c) for c in sliced] == [300, 300, 300, 300, 200]
    assert text.chunk("short", levels, 400) == ["short"]
    assert text.chunk("   ", levels, 400) == []


async def _local_minutes(sample: str) -> int:
    inp = EngineInput(text=sample, intent="learn what this text says")
    return (await LocalEngine().summarize(inp)).payload.reading_time_min


@pytest.mark.parametrize("name", TABLE)
async def test_every_part_agrees_with_the_toolkit(name: str) -> None:
    sample, words, minutes = TABLE[name]
    if sample.strip():
        assert extract_text(sample).word_count == words
    else:
        with pytest.raises(ExtractionError):
            extract_text(sample)
    assert oa.reading_minutes(sample) == minutes
    inp = EngineInput(text=sample, intent="learn what this text says")
    assert (await FixedEngine().summarize(inp)).payload.reading_time_min == minutes
    if words >= 8:
        assert await _local_minutes(sample) == minutes
    else:
        with pytest.raises(AIError):  # nothing to summarise: the engine refuses, as before
            await _local_minutes(sample)
