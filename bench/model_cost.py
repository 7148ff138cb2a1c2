"""What a run costs on a real model server: tokens and seconds per item and per step.

    python -m bench.model_cost [--small] [--pages N] [--model GGUF] [--scores]

llama-cpp-python's server (built by ``.ci/setup-llama``) runs a GGUF on
127.0.0.1, by default Qwen2.5-Coder-1.5B-Instruct; the real daemon captures
the demo pages (``readdod/demo/pages``) one at a time, at ``ai.concurrency =
1``, so each item's steps follow each other on the server. For every request
it reports, from the server's own log, the prompt tokens it was sent (those
it took from its prefix cache, its ``prefix-match hit`` line, plus those it
evaluated) against the prompt tokens it evaluated (its
``llama_perf_context_print`` line), the tokens it wrote and the seconds.
readdod's prompts put the system text and the article first and each
step's instructions after them, so the later steps of an item evaluate
little more than their instructions.

``--scores`` measures the score step instead: each pair of
``bench/data/score_pairs_heldout.json`` (a short text, an intent it serves
and one it does not; ``--pairs FILE`` for another set) through the engine's
score step alone, and the scores of both kinds of intent side by side. The
lift scale in ``engines/openai/verdict.py`` was set on ``score_pairs.json``
and the golden set's pairs; the held-out pairs were written after the first
scale and never tuned on.

``--small`` is CI's quick look that the bench still runs: the 135M model, one
short text, short answers (its cards may fail the rubric; the cost is still
measured).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._common import report
from tests.daemon_proc import NO_AUTO_RETRY, DaemonProc
from tests.test_real_model_server import MAX_TOKENS, TEXTS, llama_server_for

CACHE = Path(os.environ.get("READDOD_CI_CACHE") or Path.home() / ".cache" / "readdod-ci")
QWEN = os.environ.get("READDOD_LLAMA_QWEN_MODEL") or str(
    CACHE / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
)
SMALL = os.environ.get("READDOD_LLAMA_MODEL") or str(
    CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
)
PAGES = Path(__file__).resolve().parent.parent / "readdod" / "demo" / "pages"
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_PREFIX = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
_EVAL = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")
END = ("READY", "ARCHIVED", "FAILED_AI", "FAILED_EXTRACTION")


def server_figures(lines: list[str]) -> list[dict[str, float]]:
    """The server's own figures per request, in order: prompt tokens it took from its
    prefix cache, prompt tokens it evaluated and their milliseconds, tokens generated and
    their milliseconds."""
    out: list[dict[str, float]] = []
    reused = 0
    for line in lines:
        if m := _PREFIX.search(line):
            reused = int(m[1])
        elif m := _PROMPT_EVAL.search(line):
            out.append(
                {"prompt_eval_ms": float(m[1]), "prompt_evaluated": int(m[2]), "reused": reused}
            )
            reused = 0
        elif (m := _EVAL.search(line)) and out and "eval_ms" not in out[-1]:
            out[-1].update(eval_ms=float(m[1]), generated=int(m[2]))
    return out


def _inputs(small: bool, pages: int) -> list[tuple[str, dict[str, Any]]]:
    if small:
        intent, text = TEXTS[0]
        return [("wal-note", {"text": text, "intent": intent})]
    out = []
    for p in json.loads((PAGES / "pages.json").read_text("utf-8"))[:pages]:
        html = (PAGES / p["file"]).read_text("utf-8")
        out.append((p["file"], {"html": html, "url": p["url"], "intent": p["intent"]}))
    return out


def _ended(item: str, e: dict[str, Any]) -> bool:
    return bool(e["event"] == "item.transition" and e.get("item_id") == item and e["to"] in END)


def run(model: str, small: bool, pages: int, root: Path) -> dict[str, Any]:
    ai: dict[str, Any] = {"engine": "openai", "model": Path(model).stem, "concurrency": 1}
    ai.update(timeout_s=900.0, temperature=0.0, context_tokens=8192)
    extra: dict[str, Any] = {"ai.max_tokens": MAX_TOKENS} if small else {}
    items: list[dict[str, Any]] = []
    with contextmanager(llama_server_for)(model, n_ctx=8192) as server:
        ai["base_url"] = f"http://127.0.0.1:{server.port}/v1"
        d = DaemonProc(root, ai=ai, daemon={"skip_below": 0}, **extra, **NO_AUTO_RETRY)
        d.start()
        try:
            for name, params in _inputs(small, pages):
                logs_at, lines_at = len(d.logs), len(server.lines)
                started = time.monotonic()
                item = d.call("capture", params)["item"]["id"]
                d.wait_log(functools.partial(_ended, item), timeout=3600)
                seconds = time.monotonic() - started
                got = d.call("get", {"id": item})["item"]
                asked = [
                    e for e in d.logs[logs_at:] if e["event"] == "ai.request" and e.get("answered")
                ]
                figures = server_figures(server.lines[lines_at:])
                items.append(_item(name, got, seconds, asked, figures))
        finally:
            d.stop()
    return _summary(Path(model).name, items)


def _item(
    name: str,
    got: dict[str, Any],
    seconds: float,
    asked: list[dict[str, Any]],
    figures: list[dict[str, float]],
) -> dict[str, Any]:
    steps = []
    paired = len(asked) == len(figures)  # one request at a time: the server's lines in order
    for i, e in enumerate(asked):
        step: dict[str, Any] = {"kind": e["kind"], "seconds": e.get("seconds")}
        if paired:
            f = figures[i]
            step.update(
                prompt_sent=int(f["reused"] + f["prompt_evaluated"]),
                prompt_evaluated=int(f["prompt_evaluated"]),
                completion=int(f.get("generated", 0)),
            )
        steps.append(step)
    sent = sum(int(f["reused"] + f["prompt_evaluated"]) for f in figures)
    evaluated = sum(int(f["prompt_evaluated"]) for f in figures)
    written = sum(int(f.get("generated", 0)) for f in figures)
    eval_ms = sum(f.get("eval_ms", 0.0) for f in figures)
    prompt_ms = sum(f["prompt_eval_ms"] for f in figures)
    return {
        "name": name,
        "status": got["status"],
        "error_code": (got.get("failure") or {}).get("error_code"),
        "seconds": round(seconds, 1),
        "requests": len(steps),
        "prompt_tokens_sent": sent,
        "prompt_tokens_evaluated": evaluated,
        "prompt_reused_share": round(1 - evaluated / sent, 3) if sent else None,
        "completion_tokens": written,
        "tokens_per_s_written": round(written / (eval_ms / 1000), 1) if eval_ms else None,
        "tokens_per_s_read": round(evaluated / (prompt_ms / 1000), 1) if prompt_ms else None,
        "steps": steps,
    }


def _summary(model: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(items) or 1
    sent = sum(i["prompt_tokens_sent"] for i in items)
    evaluated = sum(i["prompt_tokens_evaluated"] for i in items)
    return {
        "model": model,
        "items": len(items),
        "ready": sum(1 for i in items if i["status"] == "READY"),
        "seconds_per_item": round(sum(i["seconds"] for i in items) / n, 1),
        "prompt_tokens_sent_per_item": round(sent / n),
        "prompt_tokens_evaluated_per_item": round(evaluated / n),
        "prompt_reused_share": round(1 - evaluated / sent, 3) if sent else None,
        "completion_tokens_per_item": round(sum(i["completion_tokens"] for i in items) / n),
        "per_item": items,
    }


def scores(model: str, pairs_file: Path) -> dict[str, Any]:
    """``match_score`` of every pair's matching and unrelated intent, from the score step."""
    import anyio
    import msgspec

    from readdod.engines.base import EngineInput
    from readdod.engines.openai import OpenAIEngine
    from readdod.items.models import Summary
    from readdod.settings.config import AIConfig

    pairs = json.loads(pairs_file.read_text("utf-8"))
    none = Summary(tl_dr="-", key_points=["-"] * 3, intent_relevance="-", reading_time_min=1)
    rows: list[dict[str, Any]] = []
    with contextmanager(llama_server_for)(model, n_ctx=8192) as server:
        cfg = msgspec.convert(
            {
                "engine": "openai",
                "base_url": f"http://127.0.0.1:{server.port}/v1",
                "model": Path(model).stem,
                "concurrency": 1,
                "timeout_s": 900.0,
                "temperature": 0.0,
            },
            AIConfig,
        )

        async def go() -> None:
            engine = OpenAIEngine(cfg)
            try:
                for p in pairs:
                    row: dict[str, Any] = {"id": p["id"]}
                    for key, intent in (("match", p["intent"]), ("unrelated", p["unrelated"])):
                        inp = EngineInput(text=p["text"], intent=intent, title=p.get("title"))
                        score = (await engine.score(inp, none)).payload
                        row[key] = score.match_score
                        asked = [r for r in score.reasons if r.startswith("Asked whether")]
                        row[f"{key}_relevance"] = asked[0].rsplit(": ", 1)[-1] if asked else None
                    rows.append(row)
                    print(row, flush=True)
            finally:
                await engine.aclose()

        anyio.run(go)
    return {
        "model": Path(model).name,
        "pairs": rows,
        "match_at_least_60": sum(1 for r in rows if r["match"] >= 60),
        "unrelated_below_40": sum(1 for r in rows if r["unrelated"] < 40),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="the 135M model on one short text")
    ap.add_argument("--pages", type=int, default=4, help="demo pages to run (default 4)")
    ap.add_argument("--model", help="a GGUF (default: Qwen2.5-Coder-1.5B, or 135M with --small)")
    ap.add_argument("--scores", action="store_true", help="the score step on held-out pairs")
    ap.add_argument(
        "--pairs",
        type=Path,
        default=Path(__file__).parent / "data" / "score_pairs_heldout.json",
        help="the pairs of --scores (default: bench/data/score_pairs_heldout.json)",
    )
    args = ap.parse_args()
    model = args.model or (SMALL if args.small else QWEN)
    if args.scores:
        report("model_scores", scores(model, args.pairs))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(model, args.small, args.pages, Path(tmp))
    report("model_cost_small" if args.small else "model_cost", figures)
    return 0 if figures["items"] else 1


if __name__ == "__main__":
    sys.exit(main())
