"""The `readdod` command: `serve` runs the daemon; every other verb is a client.

::

    entry         main(): parse, run the verb, map errors to exit codes
    parser        the verbs, their options and help
    socket_verbs  verbs that ask the daemon through readdod.control.client
    local_verbs   verbs that run here: serve, demo, config, schemas, eval, extract
    browser_verbs browser-host (a browser starts it) and browser install|uninstall
    render        answers turned into text for people (pure)
    actions       what a person can do next, from the transition table (pure)
    inputs        the files and standard input a verb reads
    exits         the exit codes

The CLI never opens the store and never changes a status: it asks the daemon.
"""

from __future__ import annotations

from readdod.cli.actions import _moves as _moves
from readdod.cli.actions import next_actions
from readdod.cli.entry import main
from readdod.cli.exits import (
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    HEALTH_EXIT,
)
from readdod.cli.local_verbs import LOCAL_VERBS
from readdod.cli.parser import build_parser
from readdod.cli.render import WatchView, history_lines, ls_table, render_card
from readdod.cli.socket_verbs import CLIENT_VERBS

__all__ = [
    "CLIENT_VERBS",
    "EXIT_CONFIG",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "HEALTH_EXIT",
    "LOCAL_VERBS",
    "WatchView",
    "build_parser",
    "history_lines",
    "ls_table",
    "main",
    "next_actions",
    "render_card",
]
