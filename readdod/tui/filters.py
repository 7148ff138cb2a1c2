"""The inbox's search bar and status filter, turned into ``list`` params.

Pure. One line says it all: words to find, ``#tag`` for a tag, ``P0``..``P3``
for a priority, ``is:ready`` (or any status group) for a status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from readdod.items.models import PRIORITIES
from readdod.items.states import FAILED, Status

#: The status groups the filter key cycles through, in order; None is everything.
GROUPS: Final[dict[str, tuple[Status, ...] | None]] = {
    "all": None,
    "ready": (Status.READY,),
    "active": (Status.CAPTURED, Status.QUEUED, Status.PROCESSING),
    "failed": tuple(sorted(FAILED)),
    "shipped": (Status.SHIPPED,),
    "archived": (Status.ARCHIVED,),
}


class FilterError(ValueError):
    """A search line that names something the daemon has not got (a status, a priority)."""


@dataclass(frozen=True)
class Filter:
    group: str = "all"
    words: str = ""
    tags: tuple[str, ...] = ()
    priority: str | None = None
    #: The search line as typed, to show and edit again.
    text: str = field(default="", compare=False)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        statuses = GROUPS[self.group]
        if statuses is not None:
            out["status"] = [s.value for s in statuses]
        if self.words:
            out["query"] = self.words
        if self.tags:
            out["tags"] = list(self.tags)
        if self.priority:
            out["priority"] = self.priority
        return out

    def describe(self) -> str:
        parts = [self.group]
        if self.text:
            parts.append(f"“{self.text}”")
        return " ".join(parts)

    def next_group(self) -> Filter:
        names = list(GROUPS)
        following = names[(names.index(self.group) + 1) % len(names)]
        return Filter(following, self.words, self.tags, self.priority, self.text)


def parse(line: str, group: str = "all") -> Filter:
    """A search line as a filter; :class:`FilterError` for a status group it does not know."""
    words: list[str] = []
    tags: list[str] = []
    priority: str | None = None
    for token in line.split():
        if token.startswith("#") and len(token) > 1:
            tags.append(token[1:])
        elif token.upper() in PRIORITIES:
            priority = token.upper()
        elif token.lower().startswith("is:"):
            wanted = token[3:].lower()
            if wanted not in GROUPS:
                known = ", ".join(f"is:{g}" for g in GROUPS)
                raise FilterError(f"no status group {wanted!r}; try {known}")
            group = wanted
        else:
            words.append(token)
    return Filter(group, " ".join(words), tuple(tags), priority, line.strip())
