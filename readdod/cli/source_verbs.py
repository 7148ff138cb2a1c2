"""The verbs of the capture sources: ``import`` (runs here, asks the daemon unless
``--dry-run``) and ``feed`` (asks the daemon)."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from readdod.capture import importing
from readdod.capture.plan import Options
from readdod.cli import render
from readdod.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNAVAILABLE
from readdod.control.client import Client
from readdod.settings import config


def cmd_import(args: argparse.Namespace) -> int:
    """Import an export file; exit 0 when every entry is in readdod, 1 when some were left out."""
    # A bad config is reported even for a dry run, which needs none of it.
    cfg, _ = config.load(args.config)
    opts = Options(
        fmt=args.format,
        intent=(args.intent or "").strip() or None,
        tags=tuple(args.tag or ()),
        priority=args.priority,
        max_html_bytes=cfg.fetch.max_bytes,
        process_archived=args.process_archived,
    )
    sock = None if args.dry_run else config.socket_path(cfg, args.socket)
    connect = None if sock is None else functools.partial(Client, sock)
    ask = None if args.json else importing.ask_on_tty(sys.stdin, sys.stderr)
    bar = importing.Bar(sys.stderr) if sys.stderr.isatty() and not args.json else None
    path = Path(args.file)
    try:
        tally = importing.import_file(path, opts, connect, bar, ask=ask)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(render.json_text(tally.as_dict()))
    else:
        print("\n".join(importing.summary_lines(tally, str(path))))
    if tally.interrupted is not None:
        print(
            f"readdod: the import stopped after {tally.done} of {tally.total} entries"
            f" ({tally.interrupted}); run the same command again to finish it: what is there"
            " already is not added twice",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if tally.cancelled else EXIT_UNAVAILABLE
    return EXIT_ERROR if tally.refused else EXIT_OK


def cmd_feed(args: argparse.Namespace, client: Client) -> int:
    """``feed add``, ``feed ls`` and ``feed rm``."""
    if args.feed_action == "add":
        params = {"url": args.url, "intent": args.intent, "tags": args.tag or []}
        res = client.call("feed_add", params)
        if args.json:
            print(render.json_text(res))
        else:
            feed = res["feed"]
            verb = "following" if res["created"] else "already following"
            if res.get("found_on"):
                print(f"{res['found_on']} is a web page; it names its feed {feed['url']}")
            shows = (
                f", which shows {res['entries']} entries" if res.get("entries") is not None else ""
            )
            print(f"{verb} {feed['url']} (feed {feed['id']}{shows}); its new entries are captured")
        return EXIT_OK
    if args.feed_action == "rm":
        res = client.call("feed_remove", {"id": args.feed})
        if args.json:
            print(render.json_text(res))
        else:
            print(f"stopped following {res['feed']['url']}; its items stay")
        return EXIT_OK
    res = client.call("feed_list")
    print(render.json_text(res) if args.json else "\n".join(render.feed_lines(res["feeds"])))
    return EXIT_OK
