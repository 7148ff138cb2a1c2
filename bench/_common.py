"""Shared bits for the benchmarks."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"

WORDS = [
    "sqlite",
    "wal",
    "checkpoint",
    "durability",
    "fsync",
    "group",
    "commit",
    "latency",
    "throughput",
    "lease",
    "heartbeat",
    "orchestrator",
    "supervisor",
    "actor",
    "pipeline",
    "extraction",
    "summary",
    "score",
    "todos",
    "card",
    "intent",
    "reader",
    "article",
    "paragraph",
    "sentence",
    "budget",
    "model",
    "server",
    "retry",
    "backoff",
    "jitter",
    "socket",
    "protocol",
    "json",
]


def article(i: int, paragraphs: int = 6) -> str:
    """A deterministic, varied plain-text article of a few hundred words."""
    out = []
    for p in range(paragraphs):
        sentences = []
        for s in range(5):
            n = 8 + (i + p + s) % 9
            words = [WORDS[(i * 7 + p * 13 + s * 5 + k * 3) % len(WORDS)] for k in range(n)]
            sentences.append(" ".join(words).capitalize() + ".")
        out.append(" ".join(sentences))
    return f"Article number {i}\n\n" + "\n\n".join(out)


def report(name: str, figures: dict[str, Any]) -> None:
    figures = {
        "bench": name,
        "machine": platform.machine(),
        "python": platform.python_version(),
        **figures,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=2))
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
