"""`readdod eval`'s held-in pairs: ranking, false skips and instruction recall."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from readdod import cli
from readdod.engines.local.analysis import text_language
from readdod.errors import ReaddodError
from readdod.evaluation import runner
from readdod.evaluation.quality import (
    PairReport,
    QualityGate,
    gate_problems,
    judge_pair,
    parse_marked,
    quality_figures,
    restates,
)


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text("", encoding="utf-8")
    return path


def run_eval(
    capsys: pytest.CaptureFixture[str], cfg: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    code = cli.main(["eval", "--config", str(cfg), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_the_pairs_cover_five_languages_paraphrases_and_how_tos() -> None:
    pairs = runner.load_pairs()
    assert len(pairs) == 20
    langs = Counter(p.case.lang for p in pairs)
    assert langs == {"en": 4, "de": 4, "fr": 4, "es": 4, "ru": 4}
    assert all(any(p.case.paraphrase for p in pairs if p.case.lang == lang) for lang in langs)
    howto = [p for p in pairs if p.instructions]
    assert len(howto) == 10 and all(3 <= len(p.instructions) <= 6 for p in howto)
    for p in pairs:
        assert "[[" not in p.text and "]]" not in p.text
        flat = " ".join(p.text.split())
        assert all(i in flat for i in p.instructions), p.case.id
        assert text_language(p.text) == p.case.lang, p.case.id
        assert 100 <= len(p.text.split()) <= 400, p.case.id
        assert p.case.intent != p.case.unrelated_intent


def test_marks_and_restating() -> None:
    text, marked = parse_marked("Intro. [[Water the\nplants daily.]] Then [[rest]].")
    assert text == "Intro. Water the\nplants daily. Then rest."
    assert marked == ["Water the plants daily.", "rest"]
    assert restates("Water the plants every day, daily.", "Water the plants daily.")
    assert not restates("Read the text in full", "Water the plants daily.")


def test_figures_and_the_gate_catch_each_kind_of_failure() -> None:
    good = judge_pair(
        PairReport(
            id="a", lang="en", kind="howto", paraphrase=False, match_score=80, unrelated_score=15
        ),
        "Water the plants daily. Rest.",
        ["Water the plants daily."],
        ["Water the plants daily.", "Note which steps you will follow"],
    )
    bad = judge_pair(
        PairReport(
            id="b", lang="en", kind="howto", paraphrase=True, match_score=20, unrelated_score=30
        ),
        "Feed them weekly.",
        ["Feed them weekly."],
        ["Read “A very long title that was cut…”", "Decide", "Note"],
    )
    f = quality_figures([good, bad], skip_below=40)
    assert (f.ranked, f.false_skips, f.unrelated_skipped) == (1, 1, 2)
    assert (f.instructions, f.recalled, f.howto_with_text_todo, f.cut_titles) == (2, 1, 1, 1)
    problems = gate_problems(f, QualityGate())
    assert len(problems) == 4
    assert any(p.startswith("ranking 50%") for p in problems)
    assert any(p.startswith("false skips 50%") for p in problems)
    assert any(p.startswith("instruction recall 50%") for p in problems)
    assert any("cut short" in p for p in problems)
    assert gate_problems(quality_figures([good], skip_below=40), QualityGate()) == []


def test_the_local_engine_meets_the_gate(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    code, report = run_eval(capsys, cfg, "--engine", "local")
    assert code == cli.EXIT_OK and report["passed"] is True
    q = report["quality"]
    gate = report["quality_gate"]
    assert gate is not None and report["quality_problems"] == []
    assert q["pairs"] == 20 and q["skip_below"] == 40
    assert q["ranking_rate"] >= gate["min_ranking"]
    assert q["false_skip_rate"] <= gate["max_false_skip"]
    assert q["instruction_recall"] >= gate["min_instruction_recall"]
    assert q["cut_titles"] == 0
    assert q["howto_with_text_todo"] == q["howto"] == 10
    assert len(report["pairs"]) == 20


def test_quality_is_reported_only_when_asked(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    # The fixed engine's canned todos miss every instruction: a failure only under the gate.
    path = cfg.parent / "fixed.toml"
    path.write_text('[ai]\nengine = "fixed"\n', encoding="utf-8")
    _, report = run_eval(capsys, path)
    assert report["quality_gate"] is None and report["quality_problems"] == []
    assert report["quality"]["instruction_recall"] < 0.6
    _, gated = run_eval(capsys, path, "--quality", "gate")
    assert any("instruction recall" in p for p in gated["quality_problems"])
    code, none = run_eval(capsys, cfg, "--no-pairs")
    assert code == cli.EXIT_OK and none["quality"] is None and none["pairs"] == []


def test_steps_score_holds_the_score_figures_alone(
    capsys: pytest.CaptureFixture[str], cfg: Path
) -> None:
    # The fixed engine misses every instruction and scores every intent alike.
    path = cfg.parent / "fixed.toml"
    path.write_text('[ai]\nengine = "fixed"\n', encoding="utf-8")
    _, gated = run_eval(capsys, path, "--quality", "gate", "--steps", "score")
    assert not any("instruction recall" in p for p in gated["quality_problems"])
    assert any("ranking" in p for p in gated["quality_problems"])
    code, local = run_eval(capsys, cfg, "--steps", "score")
    assert code == cli.EXIT_OK and local["quality_problems"] == []
    assert local["quality"]["instructions"] == 0 and local["quality"]["ranking_rate"] >= 0.8
    assert cli.main(["eval", "--config", str(cfg), "--steps", "score", "--progress"]) == 0
    out, err = capsys.readouterr()
    assert "summary and score only" in out and "not measured (--steps score)" in out
    assert "instruction recall:" not in out
    # A line per page and pair as each ends, on stderr: a slow server's run is long.
    lines = [x for x in err.splitlines() if not x.startswith("    - ")]
    total = local["figures"]["pages"] + local["quality"]["pairs"]
    assert len(lines) == total and lines[-1].startswith(f"readdod eval: {total}/{total} ")
    assert all(re.search(r": match \d+, unrelated \d+, (ok|\d+ problem)", x) for x in lines)


def test_the_table_shows_the_quality_figures(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    assert cli.main(["eval", "--config", str(cfg), "--quality", "report"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "held-in pairs" in out and "tomatoes-en" in out
    assert "false skips (matching below 40):" in out
    assert "instruction recall:" in out
    assert "quality: reported only" in out


def test_a_broken_pairs_file_is_an_error(tmp_path: Path) -> None:
    src = Path(str(runner._bundled()))
    dst = tmp_path / "golden"
    dst.mkdir()
    shutil.copy(src / runner.PAIRS, dst / runner.PAIRS)  # names texts that are not there
    with pytest.raises(ReaddodError, match="cannot load the held-in pairs"):
        runner.load_pairs(dst)
    (dst / runner.PAIRS).write_text("[{]", encoding="utf-8")
    with pytest.raises(ReaddodError, match="cannot load the held-in pairs"):
        runner.load_pairs(dst)
    assert runner.load_pairs(tmp_path) == []  # a golden set without pairs has none
