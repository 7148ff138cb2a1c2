"""`readdod eval`: the golden set, its checks, and the command's exit status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from readdod import cli
from readdod.engines.base import EngineInput
from readdod.engines.local import LocalEngine
from readdod.evaluation import runner
from readdod.evaluation.checks import MIN_OVERLAP, check_page, overlap, tokens
from readdod.extraction import extract
from tests.fake_openai import FakeOpenAI

KINDS = {"tutorial", "news", "research", "opinion", "reference"}


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """An empty config file: every default, whatever the machine's own config says."""
    path = tmp_path / "config.toml"
    path.write_text("", encoding="utf-8")
    return path


def run_eval(
    capsys: pytest.CaptureFixture[str], cfg: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    code = cli.main(["eval", "--config", str(cfg), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


# --- the golden set ---------------------------------------------------------------


def test_golden_set_is_varied_and_realistic() -> None:
    pages = runner.load_golden()
    assert len(pages) >= 12
    assert {p.kind for p, _ in pages} == KINDS
    assert sum(1 for p, _ in pages if not p.lang.startswith("en")) >= 2
    assert len({p.id for p, _ in pages}) == len(pages)
    for page, html in pages:
        ext = extract(html, page.url)
        assert ext.lang is not None and ext.lang.split("-")[0] == page.lang, page.id
        unspaced = page.lang in ("zh", "ja")
        size = len(ext.text) if unspaced else ext.word_count
        low, high = (550, 2000) if unspaced else (300, 900)
        assert low <= size <= high, f"{page.id}: {size}"
        assert page.intent.strip() and page.unrelated_intent.strip()
        assert page.intent != page.unrelated_intent


# --- the command ------------------------------------------------------------------


def test_local_engine_passes_the_golden_set(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    code, report = run_eval(capsys, cfg, "--engine", "local")
    failures = {p["id"]: p["problems"] for p in report["pages"] if not p["passed"]}
    assert failures == {}
    assert code == cli.EXIT_OK
    assert report["passed"] is True
    assert report["engine"] == "local"
    fig = report["figures"]
    assert fig["pages"] == fig["passed"] == len(runner.load_golden())
    assert fig["ranked"] == fig["pages"]
    assert fig["ranking_rate"] == 1.0
    assert fig["mean_tl_dr_overlap"] >= MIN_OVERLAP
    assert fig["mean_key_point_overlap"] >= MIN_OVERLAP
    assert set(fig["by_kind"]) == KINDS
    # The todos follow the kind of page.
    kinds = {p["id"]: set(p["todo_kinds"]) for p in report["pages"]}
    assert all("output" in k for k in kinds.values())


def test_same_golden_set_same_report(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    def strip(report: dict[str, Any]) -> dict[str, Any]:
        for page in report["pages"]:
            page.pop("elapsed_ms")
        return report

    _, first = run_eval(capsys, cfg)
    _, second = run_eval(capsys, cfg)
    assert strip(first) == strip(second)
    assert first["figures"]["mean_match_score"] > first["figures"]["mean_unrelated_score"]


def test_table_for_people(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    assert cli.main(["eval", "--config", str(cfg)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "git-bisect-tutorial" in out and "PASS" in out
    assert "matching intent outscores unrelated:" in out
    assert out.rstrip().endswith("result: PASS")


def test_engine_comes_from_the_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The canned `fixed` engine is schema-valid but not grounded in the pages: eval says so."""
    path = tmp_path / "fixed.toml"
    path.write_text('[ai]\nengine = "fixed"\n', encoding="utf-8")
    code, report = run_eval(capsys, path)
    assert code == cli.EXIT_ERROR
    assert report["engine"] == "fixed"
    assert report["passed"] is False
    problems = [p for page in report["pages"] for p in page["problems"]]
    assert any("not from the text" in p for p in problems)
    assert any("not above the unrelated intent" in p for p in problems)
    # With --progress each page's problems follow its line on stderr, as they come.
    cli.main(["eval", "--config", str(path), "--json", "--no-pairs", "--progress"])
    err = capsys.readouterr().err
    assert err.count("\n    - ") == len(problems)
    assert any(x.startswith("    - ") and "not from the text" in x for x in err.split("\n"))


def test_openai_engine_passes_the_golden_set_against_a_fake_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with FakeOpenAI() as fake:
        path = tmp_path / "openai.toml"
        path.write_text(
            f'[ai]\nengine = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n',
            encoding="utf-8",
        )
        code, report = run_eval(capsys, path)
        asked = {r["body"]["response_format"]["json_schema"]["name"] for r in fake.steps()}
    assert report["engine"] == "openai"
    assert {p["id"]: p["problems"] for p in report["pages"] if not p["passed"]} == {}
    assert code == cli.EXIT_OK
    assert asked == {"summary", "score", "todos", "card_text"}
    assert report["figures"]["ranked"] == report["figures"]["pages"]


def test_steps_score_asks_only_summary_and_score(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A slow model server's score figures without its todos and cards."""
    with FakeOpenAI() as fake:
        path = tmp_path / "openai.toml"
        path.write_text(
            f'[ai]\nengine = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n',
            encoding="utf-8",
        )
        code, report = run_eval(capsys, path, "--steps", "score")
        asked = [r["body"]["response_format"]["json_schema"]["name"] for r in fake.steps()]
    assert report["steps"] == "score"
    assert set(asked) == {"summary", "score"}
    # Both intents of every page and pair: a summary and a score each.
    texts = report["figures"]["pages"] + report["quality"]["pairs"]
    assert asked.count("score") == asked.count("summary") == 2 * texts
    assert code == cli.EXIT_OK, [p["problems"] for p in report["pages"] if p["problems"]]
    assert report["figures"]["ranked"] == report["figures"]["pages"]
    assert all(p["todos"] == [] and p["instructions"] == 0 for p in report["pairs"])


def test_unknown_engine_is_a_config_error(capsys: pytest.CaptureFixture[str], cfg: Path) -> None:
    assert cli.main(["eval", "--config", str(cfg), "--engine", "nope"]) == cli.EXIT_CONFIG
    assert "--engine nope" in capsys.readouterr().err


def _golden_copy(tmp_path: Path, ids: set[str]) -> tuple[Path, list[dict[str, Any]]]:
    src = Path(str(runner._bundled()))
    manifest = [p for p in json.loads((src / runner.MANIFEST).read_text()) if p["id"] in ids]
    dst = tmp_path / "golden"
    dst.mkdir()
    for p in manifest:
        shutil.copy(src / p["file"], dst / p["file"])
    (dst / runner.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return dst, manifest


def test_a_failing_check_fails_the_command(
    capsys: pytest.CaptureFixture[str], cfg: Path, tmp_path: Path
) -> None:
    """Swap a page's intents: the 'unrelated' one now matches, so ranking must fail."""
    dst, manifest = _golden_copy(tmp_path, {"tar-reference", "bike-lanes-news"})
    for p in manifest:
        if p["id"] == "tar-reference":
            p["intent"], p["unrelated_intent"] = p["unrelated_intent"], p["intent"]
    (dst / runner.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    code, report = run_eval(capsys, cfg, "--golden", str(dst))
    assert code == cli.EXIT_ERROR
    by_id = {p["id"]: p for p in report["pages"]}
    assert by_id["bike-lanes-news"]["passed"] is True
    tar = by_id["tar-reference"]
    assert tar["passed"] is False
    assert any("not above the unrelated intent" in p for p in tar["problems"])
    assert report["figures"]["ranked"] == 1


def test_a_page_without_article_is_a_failure_not_a_crash(
    capsys: pytest.CaptureFixture[str], cfg: Path, tmp_path: Path
) -> None:
    dst, manifest = _golden_copy(tmp_path, {"tar-reference"})
    (dst / manifest[0]["file"]).write_text("<html><body><nav>Home</nav></body></html>")
    code, report = run_eval(capsys, cfg, "--golden", str(dst))
    assert code == cli.EXIT_ERROR
    assert "EXTRACTION_EMPTY" in report["pages"][0]["problems"][0]


def test_the_deadline_reports_what_ended_and_names_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A server that stops answering halfway: the pages that ended are reported, the
    others are named, and the command fails; nothing already answered is lost."""
    dst, manifest = _golden_copy(tmp_path, {"tar-reference", "bike-lanes-news"})
    manifest.sort(key=lambda p: p["id"] != "tar-reference")
    stuck = dst / manifest[1]["file"]
    html = stuck.read_text()
    stuck.write_text(html.replace("</p>", " fake:hang</p>", 2).replace(" fake:hang", "", 1))
    (dst / runner.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with FakeOpenAI(hang_s=60.0) as fake:
        path = tmp_path / "openai.toml"
        path.write_text(
            f'[ai]\nengine = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake"\n',
            encoding="utf-8",
        )
        args = ["--golden", str(dst), "--deadline", "5", "--no-pairs", "--steps", "score"]
        code = cli.main(["eval", "--config", str(path), "--json", *args])
        out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == cli.EXIT_ERROR
    assert [p["id"] for p in report["pages"]] == ["tar-reference"]
    assert report["pages"][0]["passed"] is True
    assert report["unfinished"] == ["bike-lanes-news"] and report["deadline_s"] == 5
    assert "not run: 1 of 2 (bike-lanes-news): gave up after 5 s" in out.err


def test_a_missing_golden_set_is_an_error(
    capsys: pytest.CaptureFixture[str], cfg: Path, tmp_path: Path
) -> None:
    assert cli.main(["eval", "--config", str(cfg), "--golden", str(tmp_path)]) == cli.EXIT_ERROR
    assert "cannot load the golden set" in capsys.readouterr().err


# --- the checker on real and deliberately broken payloads --------------------------


def _real_outputs() -> tuple[str, dict[str, Any], dict[str, Any]]:
    page, html = next(p for p in runner.load_golden() if p[0].id == "remote-review-research")
    ext = extract(html, page.url)

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        engine = LocalEngine()
        inp = EngineInput(text=ext.text, intent=page.intent, title=ext.title)
        other = msgspec.structs.replace(inp, intent=page.unrelated_intent)
        return (
            await runner._steps(engine, inp, all_steps=True),
            await runner._steps(engine, other, all_steps=False),
        )

    matching, unrelated = anyio.run(go)
    return ext.text, matching, unrelated


def test_checker_passes_real_output_and_catches_each_kind_of_breakage() -> None:
    text, good, other = _real_outputs()
    assert check_page(text, good, other).passed

    def broken(step: str, **changes: Any) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(json.dumps(good))
        out[step].update(changes)
        return out

    cases: list[tuple[dict[str, Any], dict[str, Any], str]] = [
        (
            broken("summary", tl_dr="Bananas are an excellent source of potassium for athletes."),
            other,
            "tl_dr is not from the text",
        ),
        (
            broken(
                "summary",
                key_points=["Quantum foam", "Medieval castles", "Jazz harmony in the 1950s"],
            ),
            other,
            "key points are not from the text",
        ),
        (broken("score", reasons=["one", "two"]), other, "reasons"),
        (broken("score", match_score=140), other, "match_score"),
        (
            broken("todos", items=[{**t, "kind": "read"} for t in good["todos"]["items"]]),
            other,
            "todo of kind 'output'",
        ),
        (
            {k: v for k, v in good.items() if k != "card"},
            other,
            "card is missing",
        ),
        (
            broken("card", render_spec={"template": "card", "version": "v1", "sections": []}),
            other,
            "render_spec",
        ),
        (
            good,
            {**other, "score": {**other["score"], "match_score": good["score"]["match_score"]}},
            "not above the unrelated intent",
        ),
        (broken("summary", tl_dr="x" * 281), other, "tl_dr"),
    ]
    for matching, unrelated, expected in cases:
        check = check_page(text, matching, unrelated)
        assert not check.passed, expected
        assert any(expected in p for p in check.problems), (expected, check.problems)


def test_overlap_counts_words_and_cjk_characters() -> None:
    source = frozenset(tokens("Git bisect halves the range of commits. 午睡有助于记忆。"))
    assert overlap("git bisect halves commits", source) == 1.0
    assert overlap("Bananas and apples", source) == 0.0
    assert overlap("午睡记忆", source) == 1.0
    assert overlap("the and a", source) == 0.0  # nothing but common words proves nothing
