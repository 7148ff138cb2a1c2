"""Crash points for tests of crash safety.

``READDOD_CRASH_AT`` names points (comma-separated, e.g. ``step:summary``)
at which the process dies at once with ``os._exit``, as a kill -9 would
leave it: no cleanup, no shielded writes. Unset, this costs one set lookup.
"""

from __future__ import annotations

import os
import sys

CRASH_EXIT_CODE = 86
_POINTS = frozenset(p.strip() for p in os.environ.get("READDOD_CRASH_AT", "").split(",") if p)


def crash_point(name: str) -> None:
    if name in _POINTS:
        sys.stdout.flush()
        os._exit(CRASH_EXIT_CODE)
