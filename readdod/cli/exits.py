"""The CLI's exit codes: docs/errors.md lists them, and scripts branch on them."""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_CONFIG: Final = 2
EXIT_LOCKED: Final = 3
EXIT_UNAVAILABLE: Final = 4
#: A command line argparse (or a verb) cannot make sense of: sysexits' EX_USAGE.
EXIT_USAGE: Final = 64
EXIT_INTERRUPTED: Final = 130

#: `health` answers 0/1/2 for ok/degraded/unhealthy.
HEALTH_EXIT: Final = {"ok": 0, "degraded": 1, "unhealthy": 2}
