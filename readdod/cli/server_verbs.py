"""`readdod server check`: ask the configured model server what it takes, here, now.

Runs without the daemon (it needs none, and a daemon's requests would blur
what two requests at once do); what it finds is kept in the data directory,
where the daemon keeps what it learns of each server.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio
import msgspec

from readdod.cli.exits import EXIT_ERROR, EXIT_OK
from readdod.cli.render import json_text
from readdod.errors import ConfigError
from readdod.settings import config
from readdod.text.controls import visible


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """The server verbs, added to the command line's subparsers."""
    p = sub.add_parser("server", help="check the model server ai.base_url names")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = actions.add_parser(
        "check",
        parents=[common],
        help="what the server takes: formats, context, speed, two requests at once",
    )
    a.add_argument("--base-url", dest="base_url", help="another server than ai.base_url")
    a.add_argument("--model", help="another model than ai.model")
    a.add_argument(
        "--no-remember",
        dest="remember",
        action="store_false",
        help="do not keep the findings for the daemon (model-servers.json)",
    )


def cmd_server(args: argparse.Namespace) -> int:
    from readdod.engines.openai import read_api_key
    from readdod.engines.openai.check import check
    from readdod.engines.openai.servers import FILENAME, ServerMemory

    cfg, _ = config.load(args.config)
    ai = cfg.ai
    changes = {k: v for k, v in (("base_url", args.base_url), ("model", args.model)) if v}
    if changes:
        try:
            ai = msgspec.convert({**msgspec.structs.asdict(ai), **changes}, type=config.AIConfig)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"--base-url/--model: {exc}") from exc
    memory = ServerMemory(config.data_dir(cfg) / FILENAME) if args.remember else None
    key = read_api_key(ai.api_key_env)
    print(f"checking {ai.model} at {ai.base_url} (a minute on a small machine)…", file=sys.stderr)
    report = anyio.run(lambda: check(ai, api_key=key, memory=memory), backend="asyncio")
    if args.json:
        print(json_text(msgspec.to_builtins(report)))
    else:
        print(render_report(report))
    return EXIT_OK if report.reachable else EXIT_ERROR


def one_line(text: str) -> str:
    """A server's words on one line, any control character shown as a sign."""
    return visible(" ".join(text.split()))


def render_report(report: Any) -> str:
    """The findings for a person: what the server did, then the settings to use."""
    lines = [f"server  {one_line(report.base_url)}  model {one_line(report.model)}"]
    if not report.reachable:
        lines.append(f"  unreachable: {one_line(report.error or '')}")
        return "\n".join(lines)
    lines.append("formats (most structured first):")
    for fmt, said in report.formats.items():
        lines.append(f"  {fmt:<20} {one_line(said)}")
    ctx = report.context_tokens
    lines.append(
        f"context  {ctx} tokens (from {report.context_source})" if ctx else "context  not said"
    )
    if report.tokens_per_s is not None:
        lines.append(f"speed    {report.tokens_per_s:g} tokens/s written")
    lines.append(f"two streams at once: {report.two_streams}")
    for n, s in enumerate(report.streams, 1):
        first = "-" if s.first_token_s is None else f"{s.first_token_s:.1f}s"
        detail = f"  {one_line(s.detail)}" if s.detail else ""
        lines.append(
            f"  request {n}: {s.outcome:<8} sent {s.started_s:.1f}s, first token {first},"
            f" ended {s.ended_s:.1f}s, {s.completion_tokens} events{detail}"
        )
    for note in report.notes:
        lines.append(f"note: {one_line(note)}")
    if report.settings:
        lines.append("settings to use ([ai] in config.toml):")
        for key, value in report.settings.items():
            lines.append(f"  {key.removeprefix('ai.')} = {json_text(value)}")
    else:
        lines.append("settings: the defaults suit this server")
    return "\n".join(lines)


SERVER_VERBS = {"server": cmd_server}
