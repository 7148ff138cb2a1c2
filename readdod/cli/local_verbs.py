"""The verbs that run here, in this process: the daemon itself, and tools that need none.

``serve`` builds and runs the daemon; ``demo`` runs a private one; ``config``,
``schemas``, ``eval`` and ``extract`` work without any daemon and store nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from readdod.cli import render, source_verbs
from readdod.cli.browser_verbs import BROWSER_VERBS
from readdod.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from readdod.cli.inputs import read_capture_source
from readdod.cli.server_verbs import SERVER_VERBS
from readdod.control.client import check as check_socket
from readdod.errors import ConfigError, ExtractionError
from readdod.settings import config

#: A verb that needs no daemon to talk to: the command line in, an exit code out.
LocalVerb = Callable[[argparse.Namespace], int]


def cmd_config(args: argparse.Namespace) -> int:
    cfg, path, overrides = config.load_with_overrides(args.config)
    shown = config.redacted(cfg)
    if args.json:
        answer = {"file": str(path) if path else None, "overrides": overrides, "config": shown}
        print(render.json_text(answer))
        return EXIT_OK
    print("\n".join(render.config_lines(path, overrides, shown)))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from readdod.service import daemon

    cfg, path, overrides = config.load_with_overrides(args.config)
    daemon.main(cfg, source=path, overrides=overrides)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from readdod.demo.runner import run_demo

    return run_demo(render_card=render.render_card, json_out=args.json)


def cmd_schemas(args: argparse.Namespace) -> int:
    from readdod.wire import schemas

    out = Path(args.out)
    if args.check:
        problems = schemas.check_dir(out)
        for problem in problems:
            print(f"readdod: {problem}", file=sys.stderr)
        if problems:
            print("readdod: run `readdod schemas` to regenerate them", file=sys.stderr)
            return EXIT_ERROR
        print(f"{len(schemas.NAMES)} schemas in {out} match the models")
        return EXIT_OK
    for path in schemas.write_all(out):
        print(f"wrote {path}")
    return EXIT_OK


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_eval(args: argparse.Namespace) -> int:
    from readdod.engines import make_engine
    from readdod.evaluation import runner
    from readdod.evaluation.quality import QualityGate
    from readdod.runtime import logging as rlog

    cfg, _ = config.load(args.config)
    ai = cfg.ai
    if args.engine:
        try:
            ai = msgspec.convert(
                {**msgspec.structs.asdict(ai), "engine": args.engine}, type=config.AIConfig
            )
        except msgspec.ValidationError as exc:
            raise ConfigError(f"--engine {args.engine}: {exc}") from exc
    golden = Path(args.golden) if args.golden else None
    pages = runner.load_golden(golden)
    pairs = [] if args.no_pairs else runner.load_pairs(golden)
    # Quality thresholds hold the offline engine to account; a model server's figures are
    # for comparing, unless asked for.
    gated = args.quality == "gate" or (args.quality is None and ai.engine == "local")
    skip_below = cfg.daemon.skip_below or 40

    async def run() -> runner.Report:
        engine = make_engine(ai)
        try:
            return await runner.evaluate(
                engine,
                pages,
                pairs,
                skip_below=skip_below,
                gate=QualityGate() if gated else None,
                steps=args.steps,
                progress=_stderr_line if args.progress or sys.stderr.isatty() else None,
                deadline_s=args.deadline,
            )
        finally:
            await runner.close_engine(engine)

    # The engine's warnings (a circuit opening, ...) go to stderr: stdout is the report.
    with rlog.redirected("warning", sys.stderr, fmt="console"):
        report = anyio.run(run, backend="asyncio")
    if report.unfinished:
        print(f"readdod eval: {runner.unfinished_line(report)}", file=sys.stderr)
    if args.json:
        print(render.json_text(msgspec.to_builtins(report) | {"passed": report.passed}))
    else:
        print(runner.format_report(report))
    return EXIT_OK if report.passed else EXIT_ERROR


def cmd_extract(args: argparse.Namespace) -> int:
    """Extract one page here and now: no daemon, nothing stored."""
    from readdod.extraction import extract

    cfg, _ = config.load(args.config)  # a bad config is reported even when the page needs none
    if args.json and args.markdown:
        print("readdod extract: --json and --markdown exclude each other", file=sys.stderr)
        return EXIT_USAGE
    source = args.source
    if args.html is None and not source:
        print("readdod extract: give a URL, --html FILE, or - (HTML on stdin)", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.html is not None or source == "-":
            # Saved pages are decoded as the fetcher decodes a body: BOM, <meta charset>, guess.
            page = read_capture_source(
                "-" if args.html is None else args.html,
                html=True,
                max_bytes=cfg.fetch.max_bytes,
                verb="extracts",
            )
            result = extract(page, source if source and source != "-" else None)
        else:
            result = _extract_url(args, source)
    except ExtractionError as exc:
        # The code is what scripts branch on; the message is what a person reads.
        if args.json:
            error = {"error_code": exc.error_code, "message": exc.message}
            print(render.json_text({"error": error | {"retryable": exc.retryable}}))
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result)).decode() + "\n")
    elif args.markdown:
        head = f"# {result.title}\n\n" if result.title else ""
        sys.stdout.write(f"{head}{result.markdown}\n")
    else:
        head = f"{result.title}\n\n" if result.title else ""
        sys.stdout.write(f"{head}{result.text}\n")
    return EXIT_OK


def _extract_url(args: argparse.Namespace, url: str) -> Any:
    from readdod.extraction.fetch import extract_url, make_client

    cfg, _ = config.load(args.config)

    async def run() -> Any:
        async with make_client(cfg.fetch) as client:
            return await extract_url(url, client=client)

    return anyio.run(run, backend="asyncio")


def cmd_tui(args: argparse.Namespace) -> int:
    """The live terminal view; it talks to the daemon over the socket like any client."""
    from readdod.cli.socket_verbs import socket_path

    path = socket_path(args)
    check_socket(path)  # another user's socket is refused before the screen is taken
    try:
        from readdod.tui.app import run
    except ImportError as exc:
        print(
            f"readdod: the TUI needs Textual ({exc.name} is not installed);"
            " install the extra: pip install 'readdod[tui]'",
            file=sys.stderr,
        )
        return EXIT_ERROR
    run(path)
    return EXIT_OK


#: Every verb that runs in this process, by the name typed on the command line.
LOCAL_VERBS: dict[str, LocalVerb] = {
    "serve": cmd_serve,
    "config": cmd_config,
    "demo": cmd_demo,
    "schemas": cmd_schemas,
    "eval": cmd_eval,
    "extract": cmd_extract,
    "import": source_verbs.cmd_import,
    **BROWSER_VERBS,
    **SERVER_VERBS,
    "tui": cmd_tui,
}
