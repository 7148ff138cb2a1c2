"""Crash points for tests of crash safety.

``READDOD_CRASH_AT`` names points (comma-separated, e.g. ``step:summary``)
at which the process dies at once with ``os._exit``, as a kill -9 would
leave it: no cleanup, no shielded writes. ``NAME@N`` dies at the N-th time
the point is reached instead of the first, so a crash loop can stop a run
at a different item each start. Unset, this costs one set lookup.
"""

from __future__ import annotations

import os
import sys

from readdod.runtime import logging as log

CRASH_EXIT_CODE = 86


def _parse(spec: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for part in spec.split(","):
        name, _, nth = part.strip().partition("@")
        if name:
            points[name] = int(nth) if nth.isdigit() and int(nth) > 0 else 1
    return points


_AT = _parse(os.environ.get("READDOD_CRASH_AT", ""))
_POINTS = frozenset(_AT)


def crash_point(name: str) -> None:
    if name in _POINTS:
        _AT[name] -= 1
        if _AT[name] <= 0:
            # The log lines so far are written, as they would be had the line-by-line
            # writer been killed: tests read them to see where the process died.
            log.flush()
            sys.stdout.flush()
            os._exit(CRASH_EXIT_CODE)
