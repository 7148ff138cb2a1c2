"""The offline ``local`` engine's four steps on long texts: seconds, and whether time grows
linearly with size.

    python -m bench.local_engine [--small] [--passes 3]

Builds texts of 200 kB and 2 MB from the bundled demo pages' articles (each
paragraph numbered, so no two repeat), and times summary, score, todos and
card on each, the median of ``--passes`` passes in wall-clock and CPU time.
The baseline is the same engine on the text a tenth the size: the figure
``growth`` is the 2 MB time over ten times the 200 kB time, 1.0 when time is
linear in size (above ~1.5 something went quadratic). ``--small`` (what CI
runs) times 20 kB and 200 kB once and exits 1 unless every step made its
payload and the figures are finite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from importlib import resources

import anyio

from bench._common import not_finite
from readdod.engines.base import EngineInput
from readdod.engines.local import LocalEngine
from readdod.engines.local.analysis import analyze
from readdod.extraction import extract

INTENT = "keep a small database fast and safe under concurrent writes"


def _paragraphs() -> list[str]:
    root = resources.files("readdod.demo").joinpath("pages")
    out: list[str] = []
    for page in sorted((p for p in root.iterdir() if p.name.endswith(".html")), key=str):
        text = extract(page.read_text(encoding="utf-8"), f"https://example.org/{page.name}").text
        out += [p for p in text.split("\n\n") if len(p) > 40]
    return out


def text_of(size: int, paragraphs: list[str]) -> str:
    """About ``size`` characters of real paragraphs, each numbered so none repeats."""
    parts: list[str] = []
    total = i = 0
    while total < size:
        para = f"{paragraphs[i % len(paragraphs)]} (part {i})"
        parts.append(para)
        total += len(para) + 2
        i += 1
    return "\n\n".join(parts)


async def _four_steps(text: str) -> int:
    engine = LocalEngine()
    inp = EngineInput(text=text, intent=INTENT, title="Notes", lang="en")
    summary = (await engine.summarize(inp)).payload
    score = (await engine.score(inp, summary)).payload
    todos = (await engine.todos(inp, summary, score)).payload
    await engine.card(inp, summary, score, todos)
    return len(todos.items)


def time_steps(text: str, passes: int) -> dict[str, float]:
    walls: list[float] = []
    cpus: list[float] = []
    todos = 0
    for _ in range(passes):
        analyze.cache_clear()  # each pass reads the text afresh, as a new item would
        w0, c0 = time.perf_counter(), time.process_time()
        todos = anyio.run(_four_steps, text)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {
        "chars": float(len(text)),
        "wall_s": round(statistics.median(walls), 3),
        "cpu_s": round(statistics.median(cpus), 3),
        "todos": float(todos),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="20 kB and 200 kB once (CI)")
    ap.add_argument("--passes", type=int, default=3, help="passes per size (default: 3)")
    args = ap.parse_args(argv)
    sizes = (20_000, 200_000) if args.small else (200_000, 2_000_000)
    passes = 1 if args.small else max(1, args.passes)
    paragraphs = _paragraphs()
    rows = {size: time_steps(text_of(size, paragraphs), passes) for size in sizes}
    print("| text | wall s | cpu s | MB/s (cpu) | todos |\n|---:|---:|---:|---:|---:|")
    for size, r in rows.items():
        rate = r["chars"] / 1e6 / r["cpu_s"] if r["cpu_s"] else float("inf")
        print(
            f"| {size / 1000:,.0f} kB | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {rate:.2f} |"
            f" {r['todos']:.0f} |"
        )
    small, large = rows[sizes[0]], rows[sizes[1]]
    growth = large["cpu_s"] / (10 * small["cpu_s"]) if small["cpu_s"] else float("inf")
    print(
        f"growth: {growth:.2f} (the {sizes[1] // 1000} kB text's CPU time over ten times the"
        f" {sizes[0] // 1000} kB text's; 1.0 is linear)"
    )
    figures = [growth] + [v for r in rows.values() for v in r.values()]
    if not_finite(figures) or any(r["todos"] < 3 for r in rows.values()):
        print("bench.local_engine: figures not sane (a step made no payload, or not finite)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
