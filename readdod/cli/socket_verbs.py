"""The verbs that ask the daemon, through :mod:`readdod.control.client`.

Each verb turns its options into a method's params, calls it once (``watch``
reads on), and prints the answer: ``--json`` as it came, otherwise as
:mod:`readdod.cli.render` words it. The daemon changes every status; a verb
only asks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from readdod.cli import render, source_verbs, todo_verbs
from readdod.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_UNAVAILABLE, HEALTH_EXIT
from readdod.cli.inputs import read_capture_source, read_pdf_source, read_source, shown
from readdod.control.client import Client, RpcError
from readdod.errors import ConfigError, DaemonUnavailable, ErrorCode, ReaddodError
from readdod.items import todos
from readdod.settings import config

#: A verb that asks the daemon: the command line and an open client in, an exit code out.
SocketVerb = Callable[[argparse.Namespace, Client], int]

TERMINAL = {"READY", "SHIPPED", "ARCHIVED", "FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT"}


def socket_path(args: argparse.Namespace) -> Path:
    """The daemon's socket. The config is read even when --socket names it: a bad one
    is an error to report, never a reason to quietly dial a default socket."""
    cfg, _ = config.load(args.config)
    return config.socket_path(cfg, args.socket)


def _capture_limit(args: argparse.Namespace) -> int:
    """The largest page a capture may hand in: fetch.max_bytes, as the config says."""
    return _fetch_config(args).max_bytes


def _fetch_config(args: argparse.Namespace) -> config.FetchConfig:
    """``[fetch]`` as the config says (its defaults if the file cannot be read)."""
    try:
        cfg, _ = config.load(args.config)
    except ConfigError:
        return config.FetchConfig()
    return cfg.fetch


def _wait_for(client: Client, item_id: str, timeout_s: float) -> dict[str, Any]:
    """Poll until the item settles (READY, FAILED_*, ...) or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        got: dict[str, Any] = client.call("get", {"id": item_id})
        # CAPTURED: queued by nobody (daemon.auto_process is off), so it never settles.
        if got["item"]["status"] in TERMINAL | {"CAPTURED"} or time.monotonic() > deadline:
            return got
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)


def cmd_capture(args: argparse.Namespace, client: Client) -> int:
    if not args.intent:
        raise ReaddodError("--intent is required: say why you are saving this")
    params: dict[str, Any] = {"intent": args.intent}
    if args.url:
        params["url"] = args.url
    if args.pdf:
        params.update(pdf_params(args.pdf, _fetch_config(args)))
    source = args.html or args.text
    if source:
        limit = _capture_limit(args)
        key = "html" if args.html else "text"
        params[key] = read_capture_source(source, html=key == "html", max_bytes=limit)
    for key in ("title", "priority", "capture_id"):
        if getattr(args, key):
            params[key] = getattr(args, key)
    if args.tag:
        params["tags"] = args.tag
    try:
        res = client.call("capture", params)
    except RpcError as exc:
        # The daemon may run with another config than this command read: name the file.
        refused = (ErrorCode.PAYLOAD_TOO_LARGE, ErrorCode.UNSUPPORTED_CONTENT)
        if source and exc.error_code in refused:
            name = "standard input" if source == "-" else shown(source)
            raise RpcError(exc.rpc_code, f"{name}: {exc.message}", exc.data) from None
        raise
    item = res["item"]
    if args.wait:
        got = _wait_for(client, item["id"], args.timeout)
        if args.json:
            print(render.json_text(got))
        else:
            print(render.render_card(got["item"], got["artifacts"]))
        settled = got["item"]
        if settled["status"] == "CAPTURED":
            print(
                f"readdod: {settled['id']} is CAPTURED and the daemon does not process items"
                f" by itself (daemon.auto_process is off); queue it with"
                f" `readdod process {settled['id']}`",
                file=sys.stderr,
            )
        elif settled["status"] not in TERMINAL:
            print(
                f"readdod: {settled['id']} is still {settled['status']} after"
                f" {args.timeout:g} s; `readdod show {settled['id']}` tells how it goes",
                file=sys.stderr,
            )
        # A card archived as SYSTEM_SKIP was made fine; it just scored low.
        done = settled["status"] in ("READY", "SHIPPED") or settled["archive_reason"] == (
            "SYSTEM_SKIP"
        )
        return EXIT_OK if done else EXIT_ERROR
    if args.json:
        print(render.json_text(res))
    else:
        verb = "captured" if res["created"] else "already captured"
        print(f"{verb} {item['id']} ({item['status']})")
    return EXIT_OK


def pdf_params(value: str, fetch: config.FetchConfig) -> dict[str, Any]:
    """A PDF's capture: its text, its title, and where it came from."""
    from readdod.extraction.pdf import document_of

    doc = read_pdf_source(value, fetch=fetch)
    params: dict[str, Any] = {
        "text": doc.text,
        "origin": {"source": f"pdf:{Path(value).name if value != '-' else '-'}"},
        # Author, date and pages: the daemon's extraction of the text carries them.
        "document": msgspec.to_builtins(document_of(doc)),
    }
    if doc.title:
        params["title"] = doc.title
    return params


def cmd_ls(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"limit": args.limit}
    if args.status:
        params["status"] = [s.upper() for s in args.status]
    if args.priority:
        params["priority"] = args.priority
    if args.cursor:
        params["cursor"] = args.cursor
    if args.tag:
        params["tags"] = args.tag
    if args.query:
        params["query"] = args.query
    res = client.call("list", params)
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    if not res["items"]:
        print("no items")
    else:
        print("\n".join(render.ls_table(res["items"])))
    if res.get("next_cursor"):
        print(f"(more: --cursor {res['next_cursor']})")
    return EXIT_OK


def cmd_show(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"id": args.id, "history": args.history, "versions": args.versions}
    if args.chunks:
        params["include"] = ["chunks"]
    res = client.call("get", params)
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    lines = render.show_lines(res, chunks=args.chunks, versions=args.versions, history=args.history)
    print("\n".join(lines))
    return EXIT_OK


def cmd_edit(args: argparse.Namespace, client: Client) -> int:
    """Edit an artifact: from --file, or in $EDITOR on the shown version's JSON.

    ``--discard`` sets your versions aside, so the system's version shows again.
    """
    if args.discard:
        res = client.call("edit", {"id": args.id, "type": args.type, "discard": True})
        if args.json:
            print(render.json_text(res))
        else:
            art = res["artifact"]
            print(
                f"discarded your {args.type} of {args.id}; it shows version {art['version']}"
                f" ({'yours' if art['created_by'] == 'user' else 'the system' + chr(39) + 's'})"
            )
        return EXIT_OK
    if args.file:
        raw = read_source(args.file)
    else:
        import shlex
        import subprocess
        import tempfile

        artifacts = client.call("get", {"id": args.id})["artifacts"]
        if args.type not in artifacts:
            raise ReaddodError(f"item {args.id} has no {args.type} yet; process it first")
        current = artifacts[args.type]
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.TemporaryDirectory(prefix="readdod-edit-") as tmp:
            path = Path(tmp) / f"{args.id}.{args.type}.json"
            # As stored: without the ticks `get` adds to each todo (`todo done` sets those).
            payload = todos.without_ticks(args.type, current["payload"])
            original = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
            path.write_text(original, encoding="utf-8")
            if subprocess.run([*shlex.split(editor), str(path)], check=False).returncode != 0:
                raise ReaddodError(f"{editor} exited with an error; nothing was saved")
            raw = path.read_text(encoding="utf-8")
        if raw == original:
            print("no change; nothing saved")
            return EXIT_OK
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise ReaddodError(f"the edited {args.type} is not valid JSON: {exc}") from exc
    res = client.call("edit", {"id": args.id, "type": args.type, "payload": payload})
    if args.json:
        print(render.json_text(res))
    else:
        art = res["artifact"]
        print(f"saved {art['artifact_type']} version {art['version']} of {args.id} (yours)")
    return EXIT_OK


def cmd_retry_failed(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"dry_run": args.dry_run}
    if args.step:
        params["step"] = args.step
    res = client.call("retry_failed", params)
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    verb = "would queue" if args.dry_run else "queued"
    print(f"{verb} {res['count']} failed item(s) again")
    for item_id in res["requeued"]:
        print(f"  {item_id}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"id": args.id}
    if args.format:
        params["format"] = args.format
    if args.out:
        # The daemon has its own working directory: send an absolute folder.
        params["out_dir"] = str(Path(args.out).expanduser().absolute())
    if args.export_key:
        params["export_key"] = args.export_key
    res = client.call("export", params)
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    for path in res["files"]:
        print(path)
    for path in res.get("rewritten") or []:
        print(
            f"readdod: {path} was gone; written again as this export_key first wrote it",
            file=sys.stderr,
        )
    if res["reused"] and not res.get("rewritten"):
        print(
            f"readdod: {args.id} was already exported with this export_key; nothing written",
            file=sys.stderr,
        )
        for path in res["files"]:
            if not Path(path).exists():
                print(
                    f"readdod: {path} is gone; give a new --export-key to write it again",
                    file=sys.stderr,
                )
    return EXIT_OK


def _simple(method: str, **extra: str) -> SocketVerb:
    """A verb that sends the item's id and the options in ``extra`` (option -> param) as is."""

    def run(args: argparse.Namespace, client: Client) -> int:
        params: dict[str, Any] = {"id": args.id} if hasattr(args, "id") else {}
        for attr, key in extra.items():
            value = getattr(args, attr, None)
            if value:
                params[key] = value
        res = client.call(method, params)
        if args.json:
            print(render.json_text(res))
        elif "item" in res:
            item = res["item"]
            tail = f" (run {res['run_id']})" if "run_id" in res else ""
            print(f"{item['id']} is {item['status']}{tail}")
        else:
            print(", ".join(f"{k}: {render.word(v)}" for k, v in res.items()))
        return EXIT_OK

    return run


def _report(
    args: argparse.Namespace, res: dict[str, Any], lines: Callable[[Any], list[str]]
) -> None:
    """An answer as JSON (``--json``), or as the lines ``lines`` makes of it for people."""
    print(render.json_text(res) if args.json else "\n".join(lines(res)))


def cmd_ping(args: argparse.Namespace, client: Client) -> int:
    _report(args, client.call("ping"), render.ping_lines)
    return EXIT_OK


def cmd_backup(args: argparse.Namespace, client: Client) -> int:
    """The daemon writes the copy (it can read its own database, even sandboxed)."""
    path = str(Path(args.path).expanduser().absolute())
    if args.path.endswith("/"):
        path += "/"  # a directory, even one that does not exist: refuse rather than make a file
    res = client.call("backup", {"path": path})
    if args.json:
        print(render.json_text(res))
    else:
        print(f"backed up to {res['path']} ({res['bytes']} bytes, {res['pages']} pages)")
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, client: Client) -> int:
    params = {"id": args.id} if args.id else {}
    with Client(client.path, timeout_s=None) as live:
        live.call("watch", params)
        view = render.WatchView()
        while True:
            try:
                raw = live.read_raw()
            except DaemonUnavailable:
                print("readdod: the daemon closed the watch", file=sys.stderr)
                return EXIT_UNAVAILABLE
            msg = json.loads(raw)
            if msg.get("method") != "event":
                continue
            ev = msg["params"]
            try:
                if args.json:
                    print(json.dumps(ev, ensure_ascii=False), flush=True)
                else:
                    print(view.line(ev), flush=True)
            except BrokenPipeError:
                # The reader went away (`readdod watch | head`): stop quietly.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_OK
            if ev.get("event") == "watch.dropped":
                reason = (ev.get("data") or {}).get("reason", "")
                print(f"readdod: the daemon dropped this watch: {reason}", file=sys.stderr)
                return EXIT_ERROR


def cmd_health(args: argparse.Namespace, client: Client) -> int:
    res = client.call("health")
    _report(args, res, render.health_lines)
    return HEALTH_EXIT.get(res["status"], EXIT_ERROR)


def cmd_stats(args: argparse.Namespace, client: Client) -> int:
    _report(args, client.call("stats"), render.stats_lines)
    return EXIT_OK


def cmd_prune(args: argparse.Namespace, client: Client) -> int:
    res = client.call("prune", {"dry_run": args.dry_run})
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    removed = res["removed"]
    verb = "would remove" if res["dry_run"] else "removed"
    print(
        f"{verb} {removed['runs']} runs ({removed['attempts']} attempts,"
        f" {removed['chunks']} chunks), {removed['events']} events and"
        f" {removed['artifacts']} superseded artifact versions"
    )
    return EXIT_OK


def cmd_metrics(args: argparse.Namespace, client: Client) -> int:
    """The exposition text as is (a scraper's input); ``--json`` wraps it with its type."""
    res = client.call("metrics", {"format": args.format})
    if args.json:
        print(render.json_text(res))
    else:
        sys.stdout.write(res["text"])
    return EXIT_OK


#: Every verb that asks the daemon, by the name typed on the command line.
CLIENT_VERBS: dict[str, SocketVerb] = {
    "capture": cmd_capture,
    "ls": cmd_ls,
    "show": cmd_show,
    "process": _simple("process", regenerate="regenerate", refetch="refetch"),
    "archive": _simple("archive", reason="reason", cancel="cancel"),
    "edit": cmd_edit,
    "retry-failed": cmd_retry_failed,
    "unarchive": _simple("unarchive", regenerate="regenerate"),
    "ship": _simple("ship"),
    "export": cmd_export,
    "pause": _simple("pause"),
    "resume": _simple("resume"),
    "ping": cmd_ping,
    "backup": cmd_backup,
    "watch": cmd_watch,
    "health": cmd_health,
    "stats": cmd_stats,
    "prune": cmd_prune,
    "feed": source_verbs.cmd_feed,
    "todo": todo_verbs.cmd_todo,
    "todos": todo_verbs.cmd_todos_export,
    "metrics": cmd_metrics,
}
