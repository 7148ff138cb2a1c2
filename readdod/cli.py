"""The `readdod` command: `serve` runs the daemon; every other verb is a client."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from readdod import __version__, config
from readdod.control.client import Client, RpcError
from readdod.errors import ConfigError, DaemonUnavailable, InstanceLocked, ReaddodError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_LOCKED = 3
EXIT_UNAVAILABLE = 4

TERMINAL = {"READY", "SHIPPED", "ARCHIVED", "FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT"}


# --- output -----------------------------------------------------------------


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _item_line(item: dict[str, Any]) -> str:
    score = item.get("match_score")
    label = item.get("title") or item.get("url") or item.get("intent") or ""
    return (
        f"{item['id']}  {item['status']:<17} {item.get('priority') or '--':<3}"
        f" {score if score is not None else '--':>3}  {label[:70]}"
    )


def render_card(item: dict[str, Any], artifacts: dict[str, Any]) -> str:
    """A card for people, from `get`'s answer."""
    lines = [f"{item.get('title') or item.get('url') or item['id']}"]
    lines.append(f"  id {item['id']} · {item['status']} · intent: {item['intent']}")
    card = artifacts.get("card", {}).get("payload")
    if card:
        lines.append(f"  {card['priority']} · match {card['match_score']}/100")
        lines.append("")
        lines.append(f"  {card['one_liner']}")
        lines.append("")
        lines.append("  Key points:")
        lines.extend(f"   • {k}" for k in card["key_points"])
        lines.append("  Todos:")
        lines.extend(
            f"   [ ] {t['title']} ({t['kind']}, ~{t['estimate_min']} min)" for t in card["todos"]
        )
        score = artifacts.get("score", {}).get("payload")
        if score:
            lines.append(f"  Why ({score['recommendation']}):")
            lines.extend(f"   - {r}" for r in score["reasons"])
        src = card.get("source") or {}
        if src.get("url"):
            lines.append(f"  Source: {src['url']}")
    failure = item.get("failure")
    if failure:
        lines.append(
            f"  FAILED at {failure['failed_step']}: {failure['error_code']}: {failure['message']}"
        )
    return "\n".join(lines)


# --- helpers ----------------------------------------------------------------


def _socket(args: argparse.Namespace) -> Path:
    cfg: config.Config | None = None
    if not args.socket and not os.environ.get("READDOD_SOCKET"):
        try:
            cfg, _ = config.load(args.config)
        except ConfigError:
            cfg = None
    return config.socket_path(cfg, args.socket)


def _read_source(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    try:
        return Path(value).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ReaddodError(f"cannot read {value}: {exc.strerror}") from exc


def _wait_for(client: Client, item_id: str, timeout_s: float) -> dict[str, Any]:
    """Poll until the item settles (READY, FAILED_*, ...) or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        got: dict[str, Any] = client.call("get", {"id": item_id})
        if got["item"]["status"] in TERMINAL or time.monotonic() > deadline:
            return got
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


# --- verbs ------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from readdod import daemon
    from readdod import logging as rlog

    cfg, path = config.load(args.config)
    stream = None
    if cfg.log.file:
        stream = Path(cfg.log.file).expanduser().open("a", buffering=1, encoding="utf-8")
    rlog.configure(cfg.log.level, stream)
    rlog.get_logger("readdod.cli").info(
        "daemon.starting", version=__version__, config=str(path) if path else None
    )
    anyio.run(daemon.serve, cfg, backend="asyncio")
    return EXIT_OK


def cmd_capture(args: argparse.Namespace, client: Client) -> int:
    if not args.intent:
        raise ReaddodError("--intent is required: say why you are saving this")
    params: dict[str, Any] = {"intent": args.intent}
    if args.url:
        params["url"] = args.url
    if args.html:
        params["html"] = _read_source(args.html)
    if args.text:
        params["text"] = _read_source(args.text)
    for key in ("title", "priority", "capture_id"):
        if getattr(args, key):
            params[key] = getattr(args, key)
    if args.tag:
        params["tags"] = args.tag
    res = client.call("capture", params)
    item = res["item"]
    if args.wait:
        got = _wait_for(client, item["id"], args.timeout)
        if args.json:
            _print_json(got)
        else:
            print(render_card(got["item"], got["artifacts"]))
        return EXIT_OK if got["item"]["status"] in ("READY", "SHIPPED") else EXIT_ERROR
    if args.json:
        _print_json(res)
    else:
        verb = "captured" if res["created"] else "already captured"
        print(f"{verb} {item['id']} ({item['status']})")
    return EXIT_OK


def cmd_ls(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"limit": args.limit}
    if args.status:
        params["status"] = [s.upper() for s in args.status]
    if args.priority:
        params["priority"] = args.priority
    if args.cursor:
        params["cursor"] = args.cursor
    res = client.call("list", params)
    if args.json:
        _print_json(res)
        return EXIT_OK
    if not res["items"]:
        print("no items")
    for item in res["items"]:
        print(_item_line(item))
    if res.get("next_cursor"):
        print(f"(more: --cursor {res['next_cursor']})")
    return EXIT_OK


def cmd_show(args: argparse.Namespace, client: Client) -> int:
    res = client.call("get", {"id": args.id, "history": args.history})
    if args.json:
        _print_json(res)
        return EXIT_OK
    print(render_card(res["item"], res["artifacts"]))
    runs = res.get("runs") or []
    if runs:
        print("  Runs:")
        for r in runs:
            print(f"   {r['run_id']} {r['mode']:<10} {r['status']:<9} attempts={r['attempts']}")
    for ev in res.get("events") or []:
        move = f"{ev['from_status'] or '-'} -> {ev['to_status'] or '-'}"
        detail = json.dumps(ev["detail"], ensure_ascii=False) if ev["detail"] else ""
        print(f"   {ev['at']} {ev['kind']:<10} {move:<36} {ev['trigger']:<6} {detail}")
    return EXIT_OK


def _simple(method: str, **extra: str) -> Any:
    def run(args: argparse.Namespace, client: Client) -> int:
        params: dict[str, Any] = {"id": args.id} if hasattr(args, "id") else {}
        for attr, key in extra.items():
            value = getattr(args, attr, None)
            if value:
                params[key] = value
        res = client.call(method, params)
        if args.json:
            _print_json(res)
        elif "item" in res:
            item = res["item"]
            tail = f" (run {res['run_id']})" if "run_id" in res else ""
            print(f"{item['id']} is {item['status']}{tail}")
        else:
            print(", ".join(f"{k}: {v}" for k, v in res.items()))
        return EXIT_OK

    return run


def cmd_demo(args: argparse.Namespace) -> int:
    from readdod.demo.runner import run_demo

    return run_demo(json_out=args.json)


# --- parser -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="readdod", description="Turn what you read into what you do."
    )
    parser.add_argument("--version", action="version", version=f"readdod {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="config file (default: $READDOD_CONFIG, XDG, /etc)")
    common.add_argument("--socket", help="control socket path")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    sub.add_parser("serve", parents=[common], help="run the daemon")
    sub.add_parser(
        "demo", parents=[common], help="run bundled sample pages through a private daemon"
    )
    sub.add_parser("ping", parents=[common], help="check that the daemon answers")

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
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor")

    p = sub.add_parser("show", parents=[common], help="show an item and its card")
    p.add_argument("id")
    p.add_argument("--history", action="store_true", help="include the event log")

    p = sub.add_parser("process", parents=[common], help="queue an item (retry, regenerate)")
    p.add_argument("id")
    p.add_argument("--regenerate", action="store_true", help="new run, new versions")
    p.add_argument("--refetch", action="store_true", help="fetch and extract again")

    p = sub.add_parser("archive", parents=[common], help="archive an item")
    p.add_argument("id")
    p.add_argument("--reason", choices=["USER_ARCHIVE", "FAILURE_ARCHIVE"])

    p = sub.add_parser("unarchive", parents=[common], help="bring an archived item back")
    p.add_argument("id")
    p.add_argument("--regenerate", action="store_true")

    p = sub.add_parser("ship", parents=[common], help="mark an item done")
    p.add_argument("id")

    sub.add_parser("pause", parents=[common], help="stop claiming work (survives restarts)")
    sub.add_parser("resume", parents=[common], help="resume claiming work")
    return parser


CLIENT_VERBS: dict[str, Any] = {
    "capture": cmd_capture,
    "ls": cmd_ls,
    "show": cmd_show,
    "process": _simple("process", regenerate="regenerate", refetch="refetch"),
    "archive": _simple("archive", reason="reason"),
    "unarchive": _simple("unarchive", regenerate="regenerate"),
    "ship": _simple("ship"),
    "pause": _simple("pause"),
    "resume": _simple("resume"),
    "ping": _simple("ping"),
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.verb == "serve":
            return cmd_serve(args)
        if args.verb == "demo":
            return cmd_demo(args)
        path = _socket(args)
        with Client(path) as client:
            code: int = CLIENT_VERBS[args.verb](args, client)
            return code
    except KeyboardInterrupt:
        return 130
    except ConfigError as exc:
        print(f"readdod: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except InstanceLocked as exc:
        print(f"readdod: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except DaemonUnavailable as exc:
        print(f"readdod: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except RpcError as exc:
        if getattr(args, "json", False):
            _print_json({"error": {"code": exc.rpc_code, "message": exc.message, "data": exc.data}})
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except ReaddodError as exc:
        print(f"readdod: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except msgspec.DecodeError as exc:
        print(f"readdod: the daemon sent something unreadable: {exc}", file=sys.stderr)
        return EXIT_ERROR
