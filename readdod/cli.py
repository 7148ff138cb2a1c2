"""The `readdod` command: `serve` runs the daemon; every other verb is a client."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import anyio
import msgspec

from readdod import __version__, config, sniff
from readdod.control.client import Client, RpcError
from readdod.errors import (
    ConfigError,
    DaemonUnavailable,
    ErrorCode,
    ExtractionError,
    InstanceLocked,
    PayloadTooLarge,
    ReaddodError,
    RequestError,
    UnsupportedContent,
)
from readdod.states import TRANSITIONS, Status, Trigger, allowed

#: Exit codes; README.md lists them. `health` answers 0/1/2 for ok/degraded/unhealthy.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CONFIG = 2
EXIT_LOCKED = 3
EXIT_UNAVAILABLE = 4
#: A command line argparse (or a verb) cannot make sense of: sysexits' EX_USAGE.
EXIT_USAGE = 64
EXIT_INTERRUPTED = 130

TERMINAL = {"READY", "SHIPPED", "ARCHIVED", "FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT"}


# --- output -----------------------------------------------------------------


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _age(stamp: str | None, now: float | None = None) -> str:
    """How long ago an RFC 3339 time was, in one short unit (``45s``, ``3h``, ``12d``)."""
    if not stamp:
        return "--"
    secs = max(0, int((now if now is not None else time.time()) - _epoch(stamp)))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _epoch(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _status_cell(item: dict[str, Any]) -> str:
    """The status, with why an archived item was archived (``ARCHIVED:SYSTEM_SKIP``)."""
    reason = item.get("archive_reason")
    return f"{item['status']}:{reason}" if reason else str(item["status"])


def ls_table(items: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """`ls` for people: one line per item, its status, priority, score, age, title and intent."""
    rows = [
        (
            str(item["id"]),
            _status_cell(item),
            str(item.get("priority") or "--"),
            "--" if item.get("match_score") is None else str(item["match_score"]),
            _age(item.get("created_at"), now),
            _cut(" ".join(str(item.get("title") or item.get("url") or "--").split()), 50),
            _cut(" ".join(str(item.get("intent") or "").split()), 60),
        )
        for item in items
    ]
    head = ("ID", "STATUS", "PRI", "SCORE", "AGE", "TITLE", "INTENT")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(r: tuple[str, ...]) -> str:
        ident, status, pri, score, age, title, intent = r
        return (
            f"{ident:<{widths[0]}}  {status:<{widths[1]}}  {pri:<{widths[2]}}"
            f"  {score:>{widths[3]}}  {age:>{widths[4]}}  {title:<{widths[5]}}  {intent}"
        ).rstrip()

    return [line(head), *(line(r) for r in rows)]


def render_card(item: dict[str, Any], artifacts: dict[str, Any]) -> str:
    """A card for people, from `get`'s answer."""
    card = artifacts.get("card", {}).get("payload")
    heading = item.get("title") or (card or {}).get("title") or item.get("url") or item["id"]
    lines = [str(heading)]
    lines.append(f"  id {item['id']} · {item['status']} · intent: {item['intent']}")
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
        if failure.get("next_attempt_at"):
            lines.append(f"  Retrying by itself at {failure['next_attempt_at']}")
        elif failure["failed_step"] == "export":
            lines.append(f"  Export again with `readdod export {item['id']} [--out DIR]`")
        elif failure.get("retryable"):
            lines.append(f"  Retry with `readdod process {item['id']}`")
        else:
            lines.append(
                f"  Once the cause is fixed: `readdod process {item['id']}`;"
                f" or `readdod archive {item['id']}`"
            )
    if item.get("archive_reason"):
        lines.append(f"  Archived: {item['archive_reason']}")
    return "\n".join(lines)


# --- helpers ----------------------------------------------------------------


def _socket(args: argparse.Namespace) -> Path:
    """The daemon's socket. The config is read even when --socket names it: a bad one
    is an error to report, never a reason to quietly dial a default socket."""
    cfg, _ = config.load(args.config)
    return config.socket_path(cfg, args.socket)


def _shown(value: str) -> str:
    return value if len(value) <= 120 and "\n" not in value else f"{value[:60]!r}…"


def _unreadable(value: str, exc: OSError) -> ReaddodError:
    return ReaddodError(
        f"cannot read the file {_shown(value)}: {exc.strerror or exc}"
        " (--html and --text take a file name, or - for standard input)"
    )


def _config_hint(args: argparse.Namespace, exc: ConfigError) -> str:
    """Where the bad config came from, and what to do about it."""
    if exc.message.startswith("environment"):
        return "fix or unset that variable (`readdod config` shows what applies once it loads)"
    if getattr(args, "config", None):
        return "fix the file, or give another with --config"
    if os.environ.get("READDOD_CONFIG"):
        return "fix the file, or point $READDOD_CONFIG at another one (or unset it)"
    return "fix the file, or give another with --config"


def _read_source(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    try:
        return Path(value).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _unreadable(value, exc) from exc


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _capture_limit(args: argparse.Namespace) -> int:
    """The largest page a capture may hand in: fetch.max_bytes, as the config says."""
    try:
        cfg, _ = config.load(args.config)
    except ConfigError:
        return config.FetchConfig().max_bytes
    return cfg.fetch.max_bytes


def _read_capture_source(value: str, *, html: bool, max_bytes: int) -> str:
    """The page or text of ``--html``/``--text``, decoded as a fetched page would be.

    A file over ``max_bytes`` or one that is binary is refused here, naming it,
    before anything is sent.
    """
    from readdod.extraction.fetch import decode_body

    name = "standard input" if value == "-" else _shown(value)
    try:
        if value == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
            size = len(data)
        else:
            with Path(value).open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = f.read(max_bytes + 1) if size <= max_bytes else b""
    except OSError as exc:
        raise _unreadable(value, exc) from exc
    if max(size, len(data)) > max_bytes:
        what = f"is {_mb(size)}" if value != "-" else f"is over {_mb(max_bytes)}"
        raise PayloadTooLarge(
            f"{name} {what}; readdod captures at most {_mb(max_bytes)} of"
            f" {'html' if html else 'text'} (fetch.max_bytes)"
        )
    kind = sniff.binary_kind(data)
    if kind is not None:
        raise UnsupportedContent(
            f"{name} looks like {kind}, not {'a web page' if html else 'text'}: readdod"
            " captures HTML pages (--html) and plain text (--text) only"
        )
    return decode_body(data, None)


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


# --- verbs ------------------------------------------------------------------


def _register_secrets(cfg: config.Config) -> None:
    """Tell the log scrubber every secret's value: the API key and systemd credentials."""
    from readdod import logging as rlog

    key_env = getattr(cfg.ai, "api_key_env", None)
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if key_env:
        rlog.add_secret(os.environ.get(key_env))
    if creds:
        try:
            for entry in Path(creds).iterdir():
                if entry.is_file() and entry.stat().st_size <= 64 * 1024:
                    rlog.add_secret(entry.read_text(errors="replace").strip())
        except OSError:
            pass


def cmd_config(args: argparse.Namespace) -> int:
    cfg, path, overrides = config.load_with_overrides(args.config)
    shown = config.redacted(cfg)
    if args.json:
        _print_json({"file": str(path) if path else None, "overrides": overrides, "config": shown})
        return EXIT_OK
    print(f"# file: {path if path else '(none: built-in defaults)'}")
    print(f"# environment overrides: {', '.join(overrides) if overrides else '(none)'}")
    for section, values in shown.items():
        print(f"\n[{section}]")
        for key, value in values.items():
            if value is None:
                print(f"# {key} = (unset)")
            else:
                print(f"{key} = {_toml_value(value)}")
    return EXIT_OK


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return f"{{ {inner} }}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def cmd_serve(args: argparse.Namespace) -> int:
    from readdod import collector, daemon
    from readdod import logging as rlog

    cfg, path, overrides = config.load_with_overrides(args.config)
    rlog.configure(cfg.log.level, fmt=cfg.log.format, file=cfg.log.file)
    _register_secrets(cfg)
    rlog.get_logger("readdod.cli").info(
        "daemon.starting",
        version=__version__,
        config=str(path) if path else None,
        overrides=overrides,
    )
    collector.tune()
    anyio.run(daemon.serve, cfg, backend="asyncio")
    return EXIT_OK


def cmd_capture(args: argparse.Namespace, client: Client) -> int:
    if not args.intent:
        raise ReaddodError("--intent is required: say why you are saving this")
    params: dict[str, Any] = {"intent": args.intent}
    if args.url:
        params["url"] = args.url
    source = args.html or args.text
    if source:
        limit = _capture_limit(args)
        key = "html" if args.html else "text"
        params[key] = _read_capture_source(source, html=key == "html", max_bytes=limit)
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
            name = "standard input" if source == "-" else _shown(source)
            raise RpcError(exc.rpc_code, f"{name}: {exc.message}", exc.data) from None
        raise
    item = res["item"]
    if args.wait:
        got = _wait_for(client, item["id"], args.timeout)
        if args.json:
            _print_json(got)
        else:
            print(render_card(got["item"], got["artifacts"]))
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
    if args.tag:
        params["tags"] = args.tag
    if args.query:
        params["query"] = args.query
    res = client.call("list", params)
    if args.json:
        _print_json(res)
        return EXIT_OK
    if not res["items"]:
        print("no items")
    else:
        print("\n".join(ls_table(res["items"])))
    if res.get("next_cursor"):
        print(f"(more: --cursor {res['next_cursor']})")
    return EXIT_OK


def cmd_show(args: argparse.Namespace, client: Client) -> int:
    params: dict[str, Any] = {"id": args.id, "history": args.history, "versions": args.versions}
    if args.chunks:
        params["include"] = ["chunks"]
    res = client.call("get", params)
    if args.json:
        _print_json(res)
        return EXIT_OK
    print(render_card(res["item"], res["artifacts"]))
    if res.get("siblings"):
        print(f"  Same page, other intents: {', '.join(res['siblings'])}")
    for path in res.get("exported") or []:
        print(f"  Exported to: {path}")
    edited = [k for k, a in res["artifacts"].items() if a.get("created_by") == "user"]
    if edited:
        print(f"  Edited by you: {', '.join(sorted(edited))}")
    for line in _ledger_lines(
        res.get("runs") or [], res.get("attempts") or [], res["item"].get("ready_run_id")
    ):
        print(line)
    for step, p in (res.get("chunks") or {}).items():
        # Processing and retrying are one "active" figure; retries tell the rest.
        extra = "".join(f", {p[k]} {k}" for k in ("active", "error", "retries") if p.get(k))
        print(f"  Chunks ({step}): {p['done']}/{p['total']} done{extra}")
    if args.chunks:
        for line in _chunk_lines(res.get("chunk_list") or []):
            print(line)
    if args.versions:
        print("  Versions:")
        for v in res.get("versions") or []:
            mark = "*" if v["shown"] else " "
            print(
                f"  {mark} {v['artifact_type']:<10} v{v['version']:<3} {v['created_by']:<6}"
                f" run {v['run_id'] or '-'}  {v['created_at']}"
            )
    if args.history:
        print("  History:")
        for line in history_lines(res.get("events") or [], item_id=res["item"]["id"]):
            print(line)
    actions = next_actions(res["item"], has_card="card" in res["artifacts"])
    if actions:
        print("  Next:")
        wide = max(len(cmd) for cmd, _ in actions)
        for cmd, what in actions:
            print(f"   {cmd:<{wide}}  {what}")
    return EXIT_OK


def _field_value(value: Any) -> str:
    if isinstance(value, str) and value and not any(c.isspace() for c in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def history_lines(events: list[dict[str, Any]], *, item_id: str | None = None) -> list[str]:
    """The event log, one line per event, with every field the daemon sent.

    ``at kind from -> to trigger run=RUN`` then every detail key as ``key=value``,
    and any other field of the event (``seq=``, ...) the same way.
    """
    fixed = {"at", "kind", "from_status", "to_status", "trigger", "run_id", "detail"}
    lines = []
    for ev in events:
        move = f"{ev.get('from_status') or '-'} -> {ev.get('to_status') or '-'}"
        fields = [f"run={ev.get('run_id') or '-'}"]
        fields += [f"{k}={_field_value(v)}" for k, v in (ev.get("detail") or {}).items()]
        fields += [
            f"{k}={_field_value(v)}"
            for k, v in ev.items()
            if k not in fixed and not (k == "item_id" and v == item_id)
        ]
        lines.append(
            f"   {ev.get('at', '')} {ev.get('kind', ''):<10} {move:<36}"
            f" {ev.get('trigger') or '-':<6} {' '.join(fields)}"
        )
    return lines


def _chunk_lines(chunks: list[dict[str, Any]]) -> list[str]:
    """Every chunk of the current run; a done chunk's last error says it was retried."""
    if not chunks:
        return ["  No chunks: the text was short enough to be read in one piece."]
    lines = [f"  {'step':<8} {'chunk':>5}  {'status':<10} {'retries':>7}  {'model':<16} last error"]
    for c in chunks:
        error = ""
        if c["last_error_code"]:
            error = f"{c['last_error_code']}: {(c['last_error_message'] or '')[:100]}"
        lines.append(
            f"  {c['step']:<8} {c['idx']:>5}  {c['status']:<10} {c['retries']:>7}"
            f"  {c['model'] or '-':<16} {error}".rstrip()
        )
    return lines


S = Status
#: Non-transition actions and user transitions, as (order, command, what it does).
_Action = tuple[int, str, str]


def _moves(src: Status, dst: Status, item_id: str) -> list[_Action]:
    """The commands that make a person's ``src -> dst`` transition happen."""
    if dst is S.ARCHIVED:
        return [(90, f"readdod archive {item_id}", "put it away (`unarchive` brings it back)")]
    if dst is S.READY:  # ARCHIVED -> READY
        return [(50, f"readdod unarchive {item_id}", "bring it back (queued if it has no card)")]
    if dst in (S.SHIPPED, S.FAILED_EXPORT):
        again = " again" if src in (S.SHIPPED, S.FAILED_EXPORT) else ""
        out = [(20, f"readdod export {item_id}", f"write the card as a file{again}")]
        if src is not S.SHIPPED:
            out.append((80, f"readdod ship {item_id}", "mark it done without writing a file"))
        return out
    if dst is S.QUEUED:
        if src is S.CAPTURED:
            return [(10, f"readdod process {item_id}", "process it")]
        if src is S.READY:
            return [(40, f"readdod process {item_id} --regenerate", "make new versions")]
        if src is S.ARCHIVED:
            return [(55, f"readdod unarchive {item_id} --regenerate", "bring it back, made anew")]
        if src is S.FAILED_EXPORT:
            return [(40, f"readdod process {item_id}", "make the card again")]
        return [(10, f"readdod process {item_id}", "retry (from the step that failed)")]
    return []


def next_actions(item: dict[str, Any], *, has_card: bool) -> list[tuple[str, str]]:
    """What a person can do with the item now, as (command to type, what it does).

    Taken from the transition table: every move a user may make from the
    item's state, plus waiting while the daemon works on it, cancelling a
    PROCESSING item (it goes back to QUEUED first) and editing a READY card.
    """
    src = Status(item["status"])
    item_id = str(item["id"])
    found: list[_Action] = []
    for (frm, dst), triggers in TRANSITIONS.items():
        if frm is src and Trigger.USER in triggers:
            found.extend(_moves(src, dst, item_id))
    works = allowed(src, S.PROCESSING, Trigger.SYSTEM) or src is S.PROCESSING
    if works:
        found.append((5, f"readdod watch {item_id}", "wait: follow it until it settles"))
    if (
        src is S.PROCESSING
        and allowed(S.PROCESSING, S.QUEUED, Trigger.SYSTEM)
        and allowed(S.QUEUED, S.ARCHIVED, Trigger.USER)
    ):
        found.append((90, f"readdod archive {item_id} --cancel", "stop it and put it away"))
    if src is S.READY and has_card:
        found.append((30, f"readdod edit {item_id} card", "change the card (your version wins)"))
    seen: set[str] = set()
    out = []
    for _, cmd, what in sorted(found, key=lambda a: a[0]):
        if cmd not in seen:
            seen.add(cmd)
            out.append((cmd, what))
    return out


def _attempt_line(n: int, a: dict[str, Any]) -> str:
    """One execution of a run: how it started, where it got, and how it ended."""
    steps = a.get("first_step") or "?"
    if a.get("last_step") and a.get("last_step") != a.get("first_step"):
        steps += f" -> {a['last_step']}"
    took = ""
    if a.get("started_at") and a.get("finished_at"):
        took = f" in {_epoch(a['finished_at']) - _epoch(a['started_at']):.1f}s"
    why = ""
    if a.get("error_code") or a.get("error_message"):
        why = f": {a.get('error_code') or ''} {a.get('error_message') or ''}".rstrip()
    return (
        f"      attempt {n} {a['mode']:<10} {a['status']:<9} {steps}{took}"
        f" (worker {a.get('worker_id') or '-'}){why}"
    )


def _ledger_lines(
    runs: list[dict[str, Any]],
    attempts: Sequence[dict[str, Any]] = (),
    shown_run: str | None = None,
) -> list[str]:
    """Every run, what it reached, why it stopped, and each attempt at it."""
    if not runs:
        return []
    by_run: dict[str, list[dict[str, Any]]] = {}
    for a in attempts:
        by_run.setdefault(a["run_id"], []).append(a)
    lines = ["  Runs (* the card shown):"]
    for r in runs:
        reached = r.get("steps_done") or []
        where = f"reached {reached[-1]}" if reached else "no step done"
        if r["mode"] == "EXPORT":
            where = "file written" if r["status"] == "succeeded" else "nothing written"
        if r["status"] == "running" and r.get("current_step"):
            where = f"at {r['current_step']}"
        took = ""
        if r.get("started_at") and r.get("finished_at"):
            took = f" in {_epoch(r['finished_at']) - _epoch(r['started_at']):.1f}s"
        extra = []
        if r.get("models"):
            extra.append("model " + ",".join(r["models"]))
        if r.get("prompt_tokens") or r.get("completion_tokens"):
            extra.append(f"tokens {r.get('prompt_tokens', 0)}+{r.get('completion_tokens', 0)}")
        if r.get("retries"):
            extra.append(f"step retries {r['retries']}")
        mark = "*" if r["run_id"] == shown_run else " "
        lines.append(
            f"  {mark}{r['run_id']} {r['mode']:<10} {r['status']:<9} attempts={r['attempts']}"
            f" {where}{took}" + (f" ({'; '.join(extra)})" if extra else "")
        )
        for n, a in enumerate(by_run.get(r["run_id"], []), 1):
            lines.append(_attempt_line(n, a))
        for f in r.get("failures") or []:
            why = f.get("message") or ""
            lines.append(f"      {f['at']} failed at {f['step']}: {f['error_code']}: {why}")
        if r.get("error_code") and not r.get("failures"):
            lines.append(f"      {r['error_code']}: {r.get('error_message') or ''}".rstrip())
        if r.get("last_error_code"):
            last = r.get("last_error_message") or ""
            lines.append(f"      last retried after {r['last_error_code']}: {last}")
    return lines


def cmd_edit(args: argparse.Namespace, client: Client) -> int:
    """Edit an artifact: from --file, or in $EDITOR on the shown version's JSON.

    ``--discard`` sets your versions aside, so the system's version shows again.
    """
    if args.discard:
        res = client.call("edit", {"id": args.id, "type": args.type, "discard": True})
        if args.json:
            _print_json(res)
        else:
            art = res["artifact"]
            print(
                f"discarded your {args.type} of {args.id}; it shows version {art['version']}"
                f" ({'yours' if art['created_by'] == 'user' else 'the system' + chr(39) + 's'})"
            )
        return EXIT_OK
    if args.file:
        raw = _read_source(args.file)
    else:
        import shlex
        import subprocess
        import tempfile

        shown = client.call("get", {"id": args.id})["artifacts"]
        if args.type not in shown:
            raise ReaddodError(f"item {args.id} has no {args.type} yet; process it first")
        current = shown[args.type]
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.TemporaryDirectory(prefix="readdod-edit-") as tmp:
            path = Path(tmp) / f"{args.id}.{args.type}.json"
            original = json.dumps(current["payload"], indent=2, ensure_ascii=False) + "\n"
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
        _print_json(res)
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
        _print_json(res)
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
        _print_json(res)
        return EXIT_OK
    for path in res["files"]:
        print(path)
    if res["reused"]:
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
            print(", ".join(f"{k}: {_word(v)}" for k, v in res.items()))
        return EXIT_OK

    return run


def _word(value: Any) -> str:
    """A value as a person reads it: ``yes``/``no`` rather than ``True``/``False``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "--" if value is None else str(value)


def _duration(seconds: float) -> str:
    """A span in the two largest units that matter (``45 s``, ``3 min 12 s``, ``2 d 4 h``)."""
    secs = max(0, int(seconds))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if secs >= size or (unit == "s" and not parts):
            parts.append(f"{secs // size} {unit}")
            secs %= size
        elif parts:
            break
        if len(parts) == 2:
            break
    return " ".join(parts)


def cmd_ping(args: argparse.Namespace, client: Client) -> int:
    res = client.call("ping")
    if args.json:
        _print_json(res)
        return EXIT_OK
    print(f"readdod {res['version']} is running (pid {res['pid']})")
    print(f"  uptime: {_duration(res['uptime_s'])}")
    paused = "yes (nothing new is claimed; `readdod resume` goes on)" if res["paused"] else "no"
    print(f"  paused: {paused}")
    if "in_flight" in res:
        print(f"  in flight: {res['in_flight']} item(s)")
    if res.get("worker_id"):
        print(f"  worker: {res['worker_id']}")
    return EXIT_OK


def cmd_backup(args: argparse.Namespace, client: Client) -> int:
    """The daemon writes the copy (it can read its own database, even sandboxed)."""
    path = str(Path(args.path).expanduser().absolute())
    if args.path.endswith("/"):
        path += "/"  # a directory, even one that does not exist: refuse rather than make a file
    res = client.call("backup", {"path": path})
    if args.json:
        _print_json(res)
    else:
        print(f"backed up to {res['path']} ({res['bytes']} bytes, {res['pages']} pages)")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from readdod.demo.runner import run_demo

    return run_demo(json_out=args.json)


def cmd_schemas(args: argparse.Namespace) -> int:
    from readdod import schemas

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


def cmd_eval(args: argparse.Namespace) -> int:
    from readdod import logging as rlog
    from readdod.engines import make_engine
    from readdod.evaluation import runner

    cfg, _ = config.load(args.config)
    ai = cfg.ai
    if args.engine:
        try:
            ai = msgspec.convert(
                {**msgspec.structs.asdict(ai), "engine": args.engine}, type=config.AIConfig
            )
        except msgspec.ValidationError as exc:
            raise ConfigError(f"--engine {args.engine}: {exc}") from exc
    pages = runner.load_golden(Path(args.golden) if args.golden else None)

    async def run() -> runner.Report:
        engine = make_engine(ai)
        try:
            return await runner.evaluate(engine, pages)
        finally:
            await runner.close_engine(engine)

    # The engine's warnings (a circuit opening, ...) go to stderr: stdout is the report.
    with rlog.redirected("warning", sys.stderr, fmt="console"):
        report = anyio.run(run, backend="asyncio")
    if args.json:
        _print_json(msgspec.to_builtins(report) | {"passed": report.passed})
    else:
        print(runner.format_report(report))
    return EXIT_OK if report.passed else EXIT_ERROR


def cmd_extract(args: argparse.Namespace) -> int:
    """Extract one page here and now: no daemon, nothing stored."""
    from readdod.extraction import extract

    config.load(args.config)  # a bad config is reported even when this page needs none of it
    if args.json and args.markdown:
        print("readdod extract: --json and --markdown exclude each other", file=sys.stderr)
        return EXIT_USAGE
    source = args.source
    if args.html is None and not source:
        print("readdod extract: give a URL, --html FILE, or - (HTML on stdin)", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.html is not None:
            result = extract(_read_source(args.html), source if source and source != "-" else None)
        elif source == "-":
            result = extract(sys.stdin.read())
        else:
            result = _extract_url(args, source)
    except ExtractionError as exc:
        # The code is what scripts branch on; the message is what a person reads.
        if args.json:
            error = {"error_code": exc.error_code, "message": exc.message}
            _print_json({"error": error | {"retryable": exc.retryable}})
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


def _clock(at: str) -> str:
    return at[11:19] if len(at) >= 19 else at


class WatchView:
    """The live view of `watch`: one line per event with the item's state so far."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def line(self, ev: dict[str, Any]) -> str:
        data = ev.get("data") or {}
        name = ev.get("event", "")
        item_id = ev.get("item_id")
        if not item_id:
            extra = " ".join(f"{k}={v}" for k, v in data.items())
            return f"{_clock(ev.get('at', ''))}  {name} {extra}".rstrip()
        st = self.items.setdefault(
            item_id, {"status": "", "step": "", "chunks": "", "error": "", "reason": ""}
        )
        if name == "item.captured":
            st["status"] = "CAPTURED"
        if "to" in data:
            st["status"] = data["to"]
            # Why it moved (an archive reason such as SYSTEM_SKIP, or cancel, lease_expired).
            st["reason"] = f"reason {data['reason']}" if data.get("reason") else ""
            if data["to"] != "PROCESSING":
                st["step"] = st["chunks"] = ""
            if not str(data["to"]).startswith("FAILED_"):
                st["error"] = ""
        if "step" in data:
            state = {"step.started": "", "step.finished": " done", "step.retrying": " retrying"}
            st["step"] = f"{data['step']}{state.get(name, '')}"
            if name == "step.started":
                # Chunk counts and errors belong to the step that had them.
                st["chunks"] = st["error"] = ""
        done = data.get("chunks_done", data.get("done"))
        total = data.get("chunks_total", data.get("total"))
        if done is not None and total is not None:
            active = data.get("active")
            st["chunks"] = f"chunks {done}/{total}" + (f", {active} active" if active else "")
        if data.get("error_code"):
            st["error"] = f"last error {data['error_code']}"
        parts = [st["status"] or "?", st["reason"], st["step"], st["chunks"], st["error"]]
        shown = "  ".join(p for p in parts if p)
        return f"{_clock(ev.get('at', ''))}  {item_id}  {name:<16} {shown}"


def cmd_watch(args: argparse.Namespace, client: Client) -> int:
    params = {"id": args.id} if args.id else {}
    with Client(client.path, timeout_s=None) as live:
        live.call("watch", params)
        view = WatchView()
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


HEALTH_EXIT = {"ok": 0, "degraded": 1, "unhealthy": 2}


def cmd_health(args: argparse.Namespace, client: Client) -> int:
    res = client.call("health")
    if args.json:
        _print_json(res)
    else:
        print(f"health: {res['status']}")
        for reason in res["reasons"]:
            print(f"  - {reason}")
        for name, check in res["checks"].items():
            value = check.get("value")
            print(f"  {name:<18} {'--' if value is None else value!s:<10} {check['status']}")
    return HEALTH_EXIT.get(res["status"], EXIT_ERROR)


def cmd_stats(args: argparse.Namespace, client: Client) -> int:
    res = client.call("stats")
    if args.json:
        _print_json(res)
        return EXIT_OK
    print(f"items: {res['items_total']}")
    for status, n in sorted(res["items_by_status"].items()):
        print(f"  {status:<18} {n}")
    print("runs:")
    for status, n in sorted(res["runs_by_outcome"].items()):
        print(f"  {status:<18} {n}")
    print("attempts (each execution of a run):")
    for status, n in sorted(res.get("attempts_by_outcome", {}).items()):
        print(f"  {status:<18} {n}")
    if res["step_durations_ms"]:
        print("step durations (ms):      p50       p95   count")
        for step, t in res["step_durations_ms"].items():
            print(f"  {step:<18} {t['p50_ms']:>9.1f} {t['p95_ms']:>9.1f} {t['count']:>7}")
    tok = res["tokens"]
    print(f"tokens: {tok['total']} ({tok['prompt']} prompt, {tok['completion']} completion)")
    if store := res.get("store"):
        print(
            f"store: {store['transactions']} transactions, {store['units']} units of work,"
            f" {store['statements']} statements; {store['reads']} reads"
            f" ({store['read_statements']} statements) since the daemon started"
        )
    if coll := res.get("collector"):
        runs = ", ".join(str(n) for n in coll["collections"])
        limits = ", ".join(str(n) for n in coll["thresholds"])
        print(f"garbage collections: {runs} (youngest first; thresholds {limits})")
    return EXIT_OK


def cmd_prune(args: argparse.Namespace, client: Client) -> int:
    res = client.call("prune", {"dry_run": args.dry_run})
    if args.json:
        _print_json(res)
        return EXIT_OK
    removed = res["removed"]
    verb = "would remove" if res["dry_run"] else "removed"
    print(
        f"{verb} {removed['runs']} runs, {removed['events']} events and"
        f" {removed['artifacts']} superseded artifact versions of archived items"
    )
    return EXIT_OK


# --- parser -----------------------------------------------------------------


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
    p = sub.add_parser("prune", parents=[common], help="apply retention to archived items now")
    p.add_argument("--dry-run", action="store_true", help="only count what would go")
    return parser


CLIENT_VERBS: dict[str, Any] = {
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
    "backup": lambda args, client: cmd_backup(args, client),
    "watch": cmd_watch,
    "health": cmd_health,
    "stats": cmd_stats,
    "prune": cmd_prune,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.verb == "serve":
            return cmd_serve(args)
        if args.verb == "config":
            return cmd_config(args)
        if args.verb == "demo":
            return cmd_demo(args)
        if args.verb == "schemas":
            return cmd_schemas(args)
        if args.verb == "eval":
            return cmd_eval(args)
        if args.verb == "extract":
            return cmd_extract(args)
        path = _socket(args)
        with Client(path) as client:
            code: int = CLIENT_VERBS[args.verb](args, client)
            return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`readdod stats | head`): stop quietly, as `watch` does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except ConfigError as exc:
        print(f"readdod: config error: {exc}", file=sys.stderr)
        print(f"readdod: {_config_hint(args, exc)}", file=sys.stderr)
        return EXIT_CONFIG
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
    except RequestError as exc:
        # Refused here before asking the daemon (a file too big, binary): said as it would.
        if getattr(args, "json", False):
            error = {"code": exc.http_status, "message": exc.message, "data": exc.data()}
            _print_json({"error": error})
        print(f"readdod: {exc.error_code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except ReaddodError as exc:
        print(f"readdod: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except msgspec.DecodeError as exc:
        print(f"readdod: the daemon sent something unreadable: {exc}", file=sys.stderr)
        return EXIT_ERROR
