"""The command line: every verb, its options and its help text.

A command line that cannot be made sense of exits with :data:`EXIT_USAGE`
(sysexits' EX_USAGE), never 2, which says the config is bad.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from readdod import __version__
from readdod.cli.exits import EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    """argparse, exiting with :data:`EXIT_USAGE` on a bad command line (not 2, a config error)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="readdod", description="Turn what you read into what you do.")
    parser.add_argument("--version", action="version", version=f"readdod {__version__}")
    common = _Parser(add_help=False)
    common.add_argument("--config", help="config file (default: $READDOD_CONFIG, XDG, /etc)")
    common.add_argument("--socket", help="control socket path")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    sub.add_parser("serve", parents=[common], help="run the daemon")
    p = sub.add_parser("demo", help="run bundled sample pages through a private daemon")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("ping", parents=[common], help="check that the daemon answers")
    sub.add_parser("config", parents=[common], help="print the effective config (secrets redacted)")

    p = sub.add_parser("schemas", help="write the JSON Schemas of the artifacts and the item")
    p.add_argument("--out", default="schemas", metavar="DIR", help="directory (default: schemas)")
    p.add_argument("--check", action="store_true", help="only check that DIR is up to date")

    p = sub.add_parser(
        "eval", parents=[common], help="run the golden set through the configured engine"
    )
    p.add_argument("--engine", help="override ai.engine from the config (e.g. local, openai)")
    p.add_argument("--golden", metavar="DIR", help="a golden set other than the bundled one")

    p = sub.add_parser(
        "extract", parents=[common], help="print a page's article (no daemon, nothing stored)"
    )
    p.add_argument("source", nargs="?", metavar="URL|-", help="a URL to fetch, or - for stdin")
    p.add_argument("--html", metavar="FILE|-", help="the page's HTML instead of fetching it")
    p.add_argument("--markdown", action="store_true", help="the article as markdown")

    p = sub.add_parser("capture", parents=[common], help="capture a link, page or text")
    p.add_argument("url", nargs="?")
    p.add_argument("--intent", "-i", help="why you save it: what you want out of it")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--html", metavar="FILE|-", help="the page's HTML (skips fetching)")
    src.add_argument("--text", metavar="FILE|-", help="plain text (skips fetch and extraction)")
    p.add_argument("--title")
    p.add_argument("--priority", choices=["P0", "P1", "P2", "P3"])
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--capture-id", dest="capture_id", help="idempotency key")
    p.add_argument("--wait", action="store_true", help="wait until READY or FAILED")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds --wait waits")

    p = sub.add_parser("ls", parents=[common], help="list items")
    p.add_argument("--status", action="append", help="filter by status (repeatable)")
    p.add_argument("--priority", choices=["P0", "P1", "P2", "P3"])
    p.add_argument("--tag", action="append", help="only items with this tag (repeatable)")
    p.add_argument("--query", "-q", help="words to find in title, url, intent or text")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor", help="continue after the last page (printed at its end)")

    p = sub.add_parser("show", parents=[common], help="show an item and its card")
    p.add_argument("id")
    p.add_argument("--history", action="store_true", help="include the event log")
    p.add_argument("--versions", action="store_true", help="list every artifact version")
    p.add_argument(
        "--chunks",
        action="store_true",
        help="list every chunk of a long text: status, retries, last error, model",
    )

    p = sub.add_parser("process", parents=[common], help="queue an item (retry, regenerate)")
    p.add_argument("id")
    p.add_argument("--regenerate", action="store_true", help="new run, new versions")
    p.add_argument("--refetch", action="store_true", help="fetch and extract again")

    p = sub.add_parser("archive", parents=[common], help="archive an item")
    p.add_argument("id")
    p.add_argument("--reason", choices=["USER_ARCHIVE", "FAILURE_ARCHIVE"])
    p.add_argument(
        "--cancel", action="store_true", help="stop the item's processing first, if it runs"
    )

    p = sub.add_parser("unarchive", parents=[common], help="bring an archived item back")
    p.add_argument("id")
    p.add_argument("--regenerate", action="store_true")

    p = sub.add_parser("ship", parents=[common], help="mark an item done")
    p.add_argument("id")

    p = sub.add_parser("export", parents=[common], help="write the card as a file (ships it)")
    p.add_argument("id")
    p.add_argument("--format", choices=["markdown", "json"], help="default: export.format")
    p.add_argument("--out", metavar="DIR", help="folder to write into (default: export.dir)")
    p.add_argument("--export-key", dest="export_key", help="idempotency key")

    p = sub.add_parser(
        "edit", parents=[common], help="edit an artifact in $EDITOR (your version wins)"
    )
    p.add_argument("id")
    p.add_argument("type", choices=["extraction", "summary", "score", "todos", "card"])
    p.add_argument("--file", metavar="FILE|-", help="take the payload JSON from FILE or stdin")
    p.add_argument(
        "--discard", action="store_true", help="drop your versions; show the system's again"
    )

    p = sub.add_parser("retry-failed", parents=[common], help="queue failed items again")
    p.add_argument(
        "--step",
        choices=["extract", "summarize", "score", "todos", "card", "extraction", "summary", "gate"],
        help="only items that failed at this step (as failure.failed_step names it; the older"
        " names extraction, summary and gate still work)",
    )
    p.add_argument("--dry-run", action="store_true", help="only list what would be queued")

    sub.add_parser("pause", parents=[common], help="stop claiming work (survives restarts)")
    sub.add_parser("resume", parents=[common], help="resume claiming work")

    p = sub.add_parser(
        "backup", parents=[common], help="copy the live database (SQLite online backup)"
    )
    p.add_argument("path", help="file to write, or a directory for a timestamped file")

    p = sub.add_parser("watch", parents=[common], help="follow events live (--json: one per line)")
    p.add_argument("id", nargs="?", help="only this item")
    sub.add_parser("health", parents=[common], help="ok/degraded/unhealthy (exit 0/1/2)")
    sub.add_parser("stats", parents=[common], help="counts, step durations, tokens, store counters")
    p = sub.add_parser("metrics", parents=[common], help="this daemon's metrics (OpenMetrics)")
    p.add_argument(
        "--format",
        choices=["openmetrics", "prometheus"],
        default="openmetrics",
        help="OpenMetrics 1.0 text (default) or the older Prometheus text format",
    )
    p = sub.add_parser("prune", parents=[common], help="apply retention to archived items now")
    p.add_argument("--dry-run", action="store_true", help="only count what would go")
    return parser
