"""`readdod browser-host` and `readdod browser install|uninstall`: the browser as a source.

Both run here, without asking the daemon first: the host is started by the
browser and reaches the daemon per message; install writes files only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from readdod.capture import browser_install
from readdod.cli.exits import EXIT_OK
from readdod.control import protocol
from readdod.errors import ConfigError
from readdod.runtime.logging import get_logger
from readdod.settings import config

log = get_logger("readdod.browser_host")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """The browser verbs, added to the command line's subparsers."""
    p = sub.add_parser(
        "browser-host",
        parents=[common],
        help="the native-messaging host a browser starts (not for people to run)",
    )
    p.add_argument("caller", nargs="*", help=argparse.SUPPRESS)  # the browser's own arguments
    p.add_argument("--log-file", metavar="FILE", help="log here instead of stderr")
    p = sub.add_parser("browser", parents=[common], help="connect a browser's extension")
    p.add_argument("action", choices=["install", "uninstall"])
    p.add_argument("--browser", required=True, choices=sorted(browser_install.BROWSERS))
    p.add_argument(
        "--extension-id",
        dest="extension_id",
        help="allow this extension instead of readdod's own (browser/ in the source)",
    )
    p.add_argument(
        "--dir",
        metavar="DIR",
        help="the folder the browser reads host manifests from, for a browser run with its"
        " own profile (--user-data-dir: DIR/NativeMessagingHosts)",
    )


def cmd_browser_host(args: argparse.Namespace) -> int:
    from readdod.capture.browser_host import BrowserHost
    from readdod.runtime import logging as rlog

    # stdout is the browser's channel: keep it for answers, and send anything else
    # that would print there (a stray print, a library's warning) to stderr.
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    rlog.configure("info", sys.stderr, file=args.log_file)
    broken = None
    try:
        cfg, _ = config.load(args.config)
    except ConfigError as exc:
        cfg, broken = config.Config(), exc.message
        log.error("browser_host.config_invalid", error=broken)
    host = BrowserHost(
        config.socket_path(None if broken else cfg, args.socket),
        max_message=protocol.capture_line_limit(cfg.fetch.max_bytes),
        config_error=broken,
    )
    if sys.stdin.isatty():
        print(
            "readdod: browser-host is started by a browser and reads its framed messages on"
            " stdin; to connect a browser, run `readdod browser install --browser NAME`",
            file=sys.stderr,
        )
    try:
        with channel:
            return host.serve(sys.stdin.buffer, channel)
    finally:
        rlog.flush()


def cmd_browser(args: argparse.Namespace) -> int:
    directory = Path(args.dir) if args.dir else None
    if args.action == "uninstall":
        removed = browser_install.uninstall(args.browser, directory=directory)
        for path in removed:
            print(f"removed {path}")
        if not removed:
            print(f"nothing of readdod's was installed for {args.browser}")
        return EXIT_OK
    cfg, _ = config.load(args.config)
    done = browser_install.install(
        args.browser,
        socket=config.socket_path(cfg, args.socket),
        config=str(Path(args.config).absolute()) if args.config else None,
        extension_id=args.extension_id,
        directory=directory,
    )
    print(f"wrote {done.manifest}")
    print(f"wrote {done.wrapper}")
    print(
        f"load the extension (browser/ in readdod's source) in {args.browser}; it reaches"
        f" the daemon through {browser_install.HOST_NAME}"
    )
    return EXIT_OK


BROWSER_VERBS = {"browser-host": cmd_browser_host, "browser": cmd_browser}
