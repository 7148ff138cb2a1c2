"""An item as one inbox row: the words, the age, the progress bar.

Pure. PROCESSING items and failed items the daemon will retry by itself are
shown together as "active" (a retry is a wait inside the work, not a new state
a person must act on); every other status is shown as its word.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from readdod.items.states import FAILED, Status
from readdod.tui.progress import TOTAL_STEPS, Progress, bar

#: The inbox's columns: (key, heading, width); a width of 0 takes what is left.
COLUMNS: Final = (
    ("status", "STATUS", 8),
    ("progress", "PROGRESS", 14),
    ("priority", "P", 2),
    ("score", "FIT", 3),
    ("intent", "INTENT", 12),
    ("title", "TITLE", 0),
    ("age", "AGE", 4),
)

_WORDS: Final = {
    Status.CAPTURED: "captured",
    Status.QUEUED: "queued",
    Status.PROCESSING: "active",
    Status.READY: "ready",
    Status.FAILED_EXTRACTION: "failed",
    Status.FAILED_AI: "failed",
    Status.FAILED_EXPORT: "failed",
    Status.SHIPPED: "shipped",
    Status.ARCHIVED: "archived",
}


def retrying(item: dict[str, Any]) -> bool:
    """A failed item with an automatic retry scheduled."""
    failure = item.get("failure") or {}
    return Status(item["status"]) in FAILED and bool(failure.get("next_attempt_at"))


def is_active(item: dict[str, Any]) -> bool:
    return item["status"] == Status.PROCESSING or retrying(item)


def status_word(item: dict[str, Any]) -> str:
    return "active" if is_active(item) else _WORDS[Status(item["status"])]


def parse_ms(stamp: str) -> int:
    """Milliseconds since the epoch of an RFC 3339 time the daemon sent."""
    return int(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def age(created_at: str, now_ms: int) -> str:
    """How long ago, in the largest whole unit: ``<1m``, ``12m``, ``5h``, ``3d``, ``2y``.

    No seconds: rows drawn a few seconds apart would disagree about the same moment.
    """
    secs = max(0, (now_ms - parse_ms(created_at)) // 1000)
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return "<1m"


def progress_text(item: dict[str, Any], prog: Progress | None) -> str:
    """``▰▰▱▱▱ 2/5`` (a cell a step) plus ``7/12`` chunks of the running step, if it has them."""
    if not is_active(item):
        return ""
    if retrying(item):
        return "retry " + str((item.get("failure") or {}).get("auto_retries", 0) + 1)
    prog = prog or Progress()
    text = f"{bar(prog.fraction(), TOTAL_STEPS)} {prog.done}/{TOTAL_STEPS}"
    if prog.chunks is not None:
        text += f" {prog.chunks[0]}/{prog.chunks[1]}"
    return text


def cells(item: dict[str, Any], prog: Progress | None, now_ms: int) -> tuple[str, ...]:
    """The row's cells, in :data:`COLUMNS` order."""
    score = item.get("match_score")
    return (
        status_word(item),
        progress_text(item, prog),
        item.get("priority") or "",
        "" if score is None else str(score),
        item.get("intent") or "",
        item.get("title") or item.get("url") or item.get("domain") or "(text)",
        age(item["created_at"], now_ms),
    )


def detail(item: dict[str, Any]) -> str:
    """One line under the table about the highlighted item: why it failed, or what it is."""
    failure = item.get("failure")
    if failure and Status(item["status"]) in FAILED:
        when = failure.get("next_attempt_at")
        then = f"readdod retries at {when}" if when else "r retries"
        return (
            f"✗ {failure.get('failed_step')} ({then}): {failure.get('error_code')}:"
            f" {failure.get('message')}"
        )
    where = item.get("url") or "text capture"
    tags = " ".join(f"#{t}" for t in item.get("tags") or [])
    return f"{item['id']}  {where}  {tags}".rstrip()
