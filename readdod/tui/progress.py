"""How far an active item has got: steps done of all steps, chunks done of a step's chunks.

Pure. Built from a ``get`` answer, then kept current from ``watch`` events, so
the inbox redraws a progress bar without asking the daemon again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from readdod.steps import STEPS

TOTAL_STEPS: Final = len(STEPS)


@dataclass
class Progress:
    steps_done: set[str] = field(default_factory=set)
    step: str | None = None
    #: The current step's chunks, (done, total); None when it is not split.
    chunks: tuple[int, int] | None = None

    @property
    def done(self) -> int:
        return min(len(self.steps_done), TOTAL_STEPS)

    def fraction(self) -> float:
        """Steps done, with the running step's share of chunks done counted in."""
        part = 0.0
        if self.chunks is not None and self.chunks[1] > 0:
            part = self.chunks[0] / self.chunks[1]
        return min(1.0, (self.done + part) / TOTAL_STEPS)

    def apply(self, event: str, data: dict[str, Any]) -> bool:
        """Take one ``watch`` event about this item; True if it changed what is shown."""
        step = data.get("step")
        if event == "step.started" and isinstance(step, str):
            self.step, self.chunks = step, None
            return True
        if event == "step.finished" and isinstance(step, str):
            self.steps_done.add(step)
            self.step, self.chunks = None, None
            return True
        if event == "chunk.progress":
            done, total = data.get("done"), data.get("total")
            if isinstance(done, int) and isinstance(total, int):
                self.chunks = (done, total)
                return True
        return False


def from_get(got: dict[str, Any]) -> Progress:
    """An item's progress as a ``get`` answer tells it (its current run's steps and chunks)."""
    item = got.get("item") or {}
    run_id = item.get("current_run_id")
    prog = Progress()
    for run in got.get("runs") or []:
        if run.get("run_id") == run_id:
            prog.steps_done = set(run.get("steps_done") or [])
            prog.step = run.get("current_step")
    chunks = got.get("chunks") or {}
    if prog.step in chunks:
        c = chunks[prog.step]
        prog.chunks = (int(c.get("done", 0)), int(c.get("total", 0)))
    else:
        for c in chunks.values():
            if c.get("done", 0) < c.get("total", 0):
                prog.chunks = (int(c["done"]), int(c["total"]))
    return prog


def bar(fraction: float, width: int) -> str:
    """A bar of ``width`` cells, filled to ``fraction``."""
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "▰" * filled + "▱" * (width - filled)
