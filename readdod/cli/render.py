"""Answers from the daemon turned into text for people: cards, tables, history, stats.

Pure: every function takes an answer (as the control socket decoded it) and
returns lines or a string; the verbs print them. ``--json`` prints the answer
itself, through :func:`json_text`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from readdod.cli.actions import next_actions


def json_text(obj: Any) -> str:
    """An answer as ``--json`` prints it: indented, non-ASCII kept as is."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


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
    about = _document_line(artifacts.get("extraction", {}).get("payload") or {})
    if about:
        lines.append(f"  {about}")
    if card:
        lines.append(f"  {card['priority']} · match {card['match_score']}/100")
        lines.append("")
        lines.append(f"  {card['one_liner']}")
        lines.append("")
        lines.append("  Key points:")
        lines.extend(f"   • {k}" for k in card["key_points"])
        lines.append("  Todos:")
        lines.extend(
            f"   {n}. [{'x' if t.get('done') else ' '}] {t['title']}"
            f" ({t['kind']}, ~{t['estimate_min']} min)"
            for n, t in enumerate(card["todos"], start=1)
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
    if item.get("lease_owner"):
        lines.append(
            f"  Being processed by {item['lease_owner']}, its lease held until"
            f" {item['lease_expires_at']} (renewed while it works)"
        )
    return "\n".join(lines)


def _document_line(extraction: dict[str, Any]) -> str:
    """Who wrote a document and how long it is (``by Ada Writer · PDF, 12 pages``)."""
    parts = [f"by {extraction['byline']}"] if extraction.get("byline") else []
    pages = extraction.get("page_count")
    if pages is not None:
        kind = "PDF, " if extraction.get("content_type") == "application/pdf" else ""
        parts.append(f"{kind}{pages} page{'s' if pages != 1 else ''}")
    return " · ".join(parts)


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
            if r.get("cached_tokens"):
                extra[-1] += f" ({r['cached_tokens']} cached)"
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
            if f.get("prompt_tokens") or f.get("completion_tokens"):
                lines.append(
                    f"        spent before failing: tokens {f.get('prompt_tokens', 0)}"
                    f"+{f.get('completion_tokens', 0)}"
                )
        if r.get("error_code") and not r.get("failures"):
            lines.append(f"      {r['error_code']}: {r.get('error_message') or ''}".rstrip())
        if r.get("last_error_code"):
            last = r.get("last_error_message") or ""
            lines.append(f"      last retried after {r['last_error_code']}: {last}")
    return lines


def show_lines(res: dict[str, Any], *, chunks: bool, versions: bool, history: bool) -> list[str]:
    """`show` for people: the card, where it went, its runs and chunks, and what to do next."""
    lines = [render_card(res["item"], res["artifacts"])]
    if res.get("siblings"):
        lines.append(f"  Same page, other intents: {', '.join(res['siblings'])}")
    lines.extend(f"  Exported to: {path}" for path in res.get("exported") or [])
    edited = [k for k, a in res["artifacts"].items() if a.get("created_by") == "user"]
    if edited:
        lines.append(f"  Edited by you: {', '.join(sorted(edited))}")
    lines.extend(
        _ledger_lines(
            res.get("runs") or [], res.get("attempts") or [], res["item"].get("ready_run_id")
        )
    )
    for step, p in (res.get("chunks") or {}).items():
        # Processing and retrying are one "active" figure; retries tell the rest.
        extra = "".join(f", {p[k]} {k}" for k in ("active", "error", "retries") if p.get(k))
        lines.append(f"  Chunks ({step}): {p['done']}/{p['total']} done{extra}")
    if chunks:
        lines.extend(_chunk_lines(res.get("chunk_list") or []))
    if versions:
        lines.append("  Versions:")
        for v in res.get("versions") or []:
            mark = "*" if v["shown"] else " "
            lines.append(
                f"  {mark} {v['artifact_type']:<10} v{v['version']:<3} {v['created_by']:<6}"
                f" run {v['run_id'] or '-'}  {v['created_at']}"
            )
    if history:
        lines.append("  History:")
        lines.extend(history_lines(res.get("events") or [], item_id=res["item"]["id"]))
    actions = next_actions(res["item"], has_card="card" in res["artifacts"])
    if actions:
        lines.append("  Next:")
        wide = max(len(cmd) for cmd, _ in actions)
        lines.extend(f"   {cmd:<{wide}}  {what}" for cmd, what in actions)
    return lines


def word(value: Any) -> str:
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


def ping_lines(res: dict[str, Any]) -> list[str]:
    """`ping` for people: the daemon's version, pid, uptime, and whether it claims work."""
    lines = [
        f"readdod {res['version']} is running (pid {res['pid']})",
        f"  uptime: {_duration(res['uptime_s'])}",
    ]
    paused = "yes (nothing new is claimed; `readdod resume` goes on)" if res["paused"] else "no"
    lines.append(f"  paused: {paused}")
    if "in_flight" in res:
        lines.append(f"  in flight: {res['in_flight']} item(s)")
    if res.get("worker_id"):
        lines.append(f"  worker: {res['worker_id']}")
    return lines


def health_lines(res: dict[str, Any]) -> list[str]:
    """`health` for people: the verdict, its reasons, then every check."""
    lines = [f"health: {res['status']}"]
    lines.extend(f"  - {reason}" for reason in res["reasons"])
    for name, check in res["checks"].items():
        value = check.get("value")
        lines.append(f"  {name:<18} {'--' if value is None else value!s:<10} {check['status']}")
    return lines + fleet_lines(res)


def fleet_lines(res: dict[str, Any]) -> list[str]:
    """The daemons that share the store: one line each, this one marked."""
    fleet = res.get("fleet") or []
    if not fleet:
        return []
    lines = [f"daemons: {len(fleet)}"]
    for d in fleet:
        state = "alive" if d["alive"] else f"silent {d['silent_s']:g} s"
        extra = ", paused" if d["paused"] else ""
        mark = " (this one)" if d.get("this") else ""
        lines.append(
            f"  {d['daemon_id']}{mark}: {state}, {d['in_flight']} in flight{extra},"
            f" since {d['started_at']}"
        )
    return lines


def stats_lines(res: dict[str, Any]) -> list[str]:
    """`stats` for people: counts by status and outcome, step durations, tokens, counters."""
    lines = [f"items: {res['items_total']}"]
    lines.extend(f"  {status:<18} {n}" for status, n in sorted(res["items_by_status"].items()))
    lines.append("runs:")
    lines.extend(f"  {status:<18} {n}" for status, n in sorted(res["runs_by_outcome"].items()))
    lines.append("attempts (each execution of a run):")
    attempts = sorted(res.get("attempts_by_outcome", {}).items())
    lines.extend(f"  {status:<18} {n}" for status, n in attempts)
    if res["step_durations_ms"]:
        lines.append("step durations (ms):      p50       p95   count")
        lines.extend(
            f"  {step:<18} {t['p50_ms']:>9.1f} {t['p95_ms']:>9.1f} {t['count']:>7}"
            for step, t in res["step_durations_ms"].items()
        )
    if ticked := res.get("todos"):
        lines.append(f"todos ticked done: {ticked['done']} on {ticked['items']} items")
    tok = res["tokens"]
    lines.append(f"tokens: {tok['total']} ({tok['prompt']} prompt, {tok['completion']} completion)")
    if store := res.get("store"):
        lines.append(
            f"store: {store['transactions']} transactions, {store['units']} units of work,"
            f" {store['statements']} statements; {store['reads']} reads"
            f" ({store['read_statements']} statements) since the daemon started"
        )
    if coll := res.get("collector"):
        runs = ", ".join(str(n) for n in coll["collections"])
        limits = ", ".join(str(n) for n in coll["thresholds"])
        lines.append(f"garbage collections: {runs} (youngest first; thresholds {limits})")
    return lines + fleet_lines(res)


def config_lines(path: Path | None, overrides: Sequence[str], shown: dict[str, Any]) -> list[str]:
    """The effective config as TOML one could paste into a file; unset keys commented out."""
    lines = [
        f"# file: {path if path else '(none: built-in defaults)'}",
        f"# environment overrides: {', '.join(overrides) if overrides else '(none)'}",
    ]
    for section, values in shown.items():
        lines.extend(("", f"[{section}]"))
        for key, value in values.items():
            if value is None:
                lines.append(f"# {key} = (unset)")
            else:
                lines.append(f"{key} = {_toml_value(value)}")
    return lines


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return f"{{ {inner} }}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


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


def feed_lines(feeds: list[dict[str, Any]]) -> list[str]:
    """`feed ls` for people: each feed, how its polls go, and why a failing one fails."""
    if not feeds:
        return ["no feeds; follow one with `readdod feed add URL --intent TEXT`"]
    lines = []
    for f in feeds:
        if f["failures"]:
            state = f"FAILING ({f['failures']} in a row)"
        elif f["last_ok_at"]:
            state = "ok"
        else:
            state = "not polled yet"
        lines.append(f"{f['id']}  {f['title'] or f['url']}")
        lines.append(f"  url      {f['url']}")
        lines.append(
            f"  intent   {f['intent']}" + (f"  tags: {', '.join(f['tags'])}" if f["tags"] else "")
        )
        lines.append(
            f"  state    {state}; {f['entries_captured']} entries captured;"
            f" last polled {f['last_polled_at'] or 'never'}; next poll {f['next_poll_at']}"
        )
        if f["failures"]:
            lines.append(f"  error    {f['last_error_code']}: {f['last_error']}")
            lines.append(
                f"           at {f['last_polled_at']}; last good poll {f['last_ok_at'] or 'never'}"
            )
    return lines
