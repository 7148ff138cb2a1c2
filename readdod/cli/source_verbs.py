"""The verbs of the capture sources: ``import`` (runs here, asks the daemon unless
``--dry-run``) and ``feed`` (asks the daemon)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from readdod import config
from readdod.capture import importing
from readdod.capture.plan import Options
from readdod.cli import render
from readdod.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNAVAILABLE
from readdod.control.client import Client
from readdod.errors import DaemonUnavailable, UnsafeSocket


def cmd_import(args: argparse.Namespace) -> int:
    """Import an export file; exit 0 when every entry is in readdod, 1 when some were left out."""
    # A bad config is reported even for a dry run, which needs none of it.
    cfg, _ = config.load(args.config)
    path = Path(args.file)
    fmt, found = importing.source(path, args.format)
    opts = Options(
        fmt=fmt,
        intent=(args.intent or "").strip() or None,
        tags=tuple(args.tag or ()),
        priority=args.priority,
        max_html_bytes=cfg.fetch.max_bytes,
        process_archived=args.process_archived,
    )
    ask = None if args.json else importing.ask_on_tty(sys.stdin, sys.stderr)
    prep = importing.prepare(found, opts, ask)
    tally = importing.Tally(
        fmt=fmt,
        total=prep.census.entries,
        dry_run=args.dry_run,
        intent_from="given" if prep.opts.intent else "note",
    )
    planned = importing.planned(found, prep, tally)
    bar = importing.Bar(sys.stderr) if sys.stderr.isatty() and not args.json else None
    interrupted: str | None = None
    code = EXIT_UNAVAILABLE
    try:
        if args.dry_run:
            importing.run(None, planned, tally, bar or (lambda _: None))
        else:
            sock = config.socket_path(cfg, args.socket)
            Client(sock).close()  # the daemon answers, before any progress is drawn
            importing.run(lambda: Client(sock), planned, tally, bar or (lambda _: None))
    except DaemonUnavailable as exc:
        if isinstance(exc, UnsafeSocket):
            raise  # nothing was sent: said once, with its code, as every client says it
        interrupted = str(exc)
    except KeyboardInterrupt:
        interrupted, code = "interrupted", EXIT_INTERRUPTED
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(render.json_text(tally.as_dict() | {"interrupted": interrupted}))
    else:
        print("\n".join(importing.summary_lines(tally, str(path))))
    if interrupted is not None:
        print(
            f"readdod: the import stopped after {tally.done} of {tally.total} entries"
            f" ({interrupted}); run the same command again to finish it: what is there"
            " already is not added twice",
            file=sys.stderr,
        )
        return code
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
