"""The command line: every verb, its options and its help text.

A command line that cannot be made sense of exits with :data:`EXIT_USAGE`
(sysexits' EX_USAGE), never 2, which says the config is bad.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from readdod import __version__
from readdod.cli.browser_verbs import add_parsers as add_browser_parsers
from readdod.cli.exits import EXIT_USAGE
from readdod.cli.server_verbs import add_parsers as add_server_parsers
from readdod.steps import NAMES, STEPS

#: The formats ``import --format`` takes (the readers' names, kept here so the parser
#: imports no reader).
IMPORT_FORMATS = (
    "netscape",
    "firefox",
    "chrome",
    "pocket",
    "instapaper",
    "readwise",
    "omnivore",
    "wallabag",
    "karakeep",
    "readability",
    "pinboard",
    "delicious",
    "linkwarden",
    "urls",
)


class _Parser(argparse.ArgumentParser):
    """argparse, exiting with :data:`EXIT_USAGE` on a bad command line (not 2, a config error)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _seconds(text: str) -> float:
    """A positive number of seconds, as an option's value."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


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
    p.add_argument(
        "--deadline",
        type=_seconds,
        default=1800.0,
        metavar="S",
        help="give up after S seconds, e.g. on a slow or stuck model server (default: 1800)",
    )
    p.add_argument("--golden", metavar="DIR", help="a golden set other than the bundled one")
    p.add_argument(
        "--quality",
        choices=("gate", "report"),
        help="hold the pairs' ranking, false skips and instruction recall to thresholds "
        "(default: gate for the local engine, report for others)",
    )
    p.add_argument("--no-pairs", action="store_true", help="skip the held-in pairs")
    p.add_argument(
        "--steps",
        choices=("all", "score"),
        default="all",
        help="score: ask only summary and score, for the score's figures from a slow model "
        "server in a third of the requests (default: all)",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="a line on stderr as each page and pair ends (the default when stderr is a terminal)",
    )

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
    src.add_argument("--pdf", metavar="FILE|-", help="a PDF: its text, title and author")
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
    p.add_argument("type", choices=NAMES)
    p.add_argument("--file", metavar="FILE|-", help="take the payload JSON from FILE or stdin")
    p.add_argument(
        "--discard", action="store_true", help="drop your versions; show the system's again"
    )

    p = sub.add_parser("retry-failed", parents=[common], help="queue failed items again")
    p.add_argument(
        "--step",
        choices=list(dict.fromkeys([*(s.wire for s in STEPS), *NAMES, "gate"])),
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
    p = sub.add_parser(
        "import", parents=[common], help="capture every link of a bookmarks file or export"
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", *sorted(IMPORT_FORMATS)],
        help="the file's format (default: recognised from its content)",
    )
    p.add_argument(
        "--intent",
        "-i",
        help="why you saved them (default: each entry's own note; a source's description"
        " is never taken for it)",
    )
    p.add_argument("--tag", action="append", help="a tag added to every entry (repeatable)")
    p.add_argument("--priority", choices=["P0", "P1", "P2", "P3"], default="P3", help="default: P3")
    p.add_argument("--dry-run", action="store_true", help="read and check only; capture nothing")
    p.add_argument(
        "--process-archived",
        action="store_true",
        help="fetch and process what you had archived too (default: brought in ARCHIVED)",
    )

    p = sub.add_parser("feed", help="follow RSS and Atom feeds: each new entry is captured")
    feed = p.add_subparsers(dest="feed_action", required=True, metavar="ACTION")
    f = feed.add_parser("add", parents=[common], help="follow a feed")
    f.add_argument("url", metavar="URL")
    f.add_argument("--intent", "-i", required=True, help="why you follow it (each entry's intent)")
    f.add_argument("--tag", action="append", help="a tag for every entry (repeatable)")
    feed.add_parser("ls", parents=[common], help="the feeds followed, and how their polls go")
    f = feed.add_parser("rm", parents=[common], help="stop following a feed (its items stay)")
    f.add_argument("feed", metavar="ID|URL")

    sub.add_parser("tui", parents=[common], help="a live view to triage and act (keys: ? in it)")
    p = sub.add_parser("metrics", parents=[common], help="this daemon's metrics (OpenMetrics)")
    p.add_argument(
        "--format",
        choices=["openmetrics", "prometheus"],
        default="openmetrics",
        help="OpenMetrics 1.0 text (default) or the older Prometheus text format",
    )
    p = sub.add_parser(
        "prune", parents=[common], help="apply retention to every item's history now"
    )
    p.add_argument("--dry-run", action="store_true", help="only count what would go")
    _todo_verbs(sub, common)
    add_browser_parsers(sub, common)
    add_server_parsers(sub, common)
    return parser


def _todo_verbs(sub: argparse._SubParsersAction[_Parser], common: _Parser) -> None:
    """`todo done|undo ID N` and `todos export`: the options sit on the inner verb
    only, where argparse keeps them."""
    p = sub.add_parser("todo", help="tick a todo done, or take the tick back")
    actions = p.add_subparsers(dest="todo_action", required=True, metavar="ACTION")
    for action, says in (("done", "tick todo N of item ID"), ("undo", "take the tick back")):
        a = actions.add_parser(action, parents=[common], help=says)
        a.add_argument("id")
        a.add_argument("n", type=int, metavar="N", help="the todo's number, as `show` lists it")
    p = sub.add_parser("todos", help="hand the todos of your cards to a task manager")
    actions = p.add_subparsers(dest="todos_action", required=True, metavar="ACTION")
    a = actions.add_parser(
        "export", parents=[common], help="write the todos as iCalendar, Taskwarrior or todo.txt"
    )
    a.add_argument("--format", required=True, choices=["ics", "taskwarrior", "todotxt"])
    a.add_argument(
        "--status",
        default="READY,SHIPPED",
        help="items in these statuses, comma-separated (default: READY,SHIPPED)",
    )
    a.add_argument("--out", default="-", metavar="FILE|-", help="file to write (default: stdout)")
