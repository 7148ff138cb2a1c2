"""A ``get`` answer as the card a person reads in the TUI.

Pure: the item and what it shows in, styled text out. Each part says whose
version it is (readdod's or yours), since a person's edit wins over a regenerate.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from readdod.items.states import FAILED, Status


def _whose(art: dict[str, Any] | None) -> str:
    if art is None:
        return ""
    who = "yours" if art.get("created_by") == "user" else "readdod's"
    return f"v{art.get('version')} · {who}"


def _heading(out: Text, title: str, art: dict[str, Any] | None = None) -> None:
    out.append(f"\n{title}", style="bold")
    whose = _whose(art)
    if whose:
        out.append(f"  ({whose})", style="dim")
    out.append("\n")


def todo_done(todo: dict[str, Any]) -> bool:
    return bool(todo.get("done", False))


def todos_of(got: dict[str, Any]) -> list[dict[str, Any]]:
    """The todos the item shows, in the order ``todo`` numbers them: ``get``'s own list,
    else the card's (composed from the shown todos), else the todos artifact's."""
    listed = got.get("todos")
    if isinstance(listed, list):
        return sorted(listed, key=lambda t: int(t.get("index", 0)))
    arts = got.get("artifacts") or {}
    card = (arts.get("card") or {}).get("payload") or {}
    if card.get("todos"):
        return list(card["todos"])
    return list(((arts.get("todos") or {}).get("payload") or {}).get("items") or [])


def render(got: dict[str, Any]) -> Text:
    item = got["item"]
    arts = got.get("artifacts") or {}
    card_art = arts.get("card")
    card = (card_art or {}).get("payload") or {}
    summary = (arts.get("summary") or {}).get("payload") or {}
    score = (arts.get("score") or {}).get("payload") or {}
    out = Text()
    out.append(card.get("title") or item.get("title") or item.get("url") or "(untitled)", "bold")
    out.append(f"\n{item['status']}", style="reverse")
    out.append(f"  {item['id']}")
    if item.get("priority"):
        out.append(f"  {item['priority']}")
    if item.get("match_score") is not None:
        out.append(f"  fit {item['match_score']}/100")
    out.append(f"\nintent: {item.get('intent') or ''}")
    if item.get("tags"):
        out.append("  " + " ".join(f"#{t}" for t in item["tags"]), style="dim")
    source = (card.get("source") or {}).get("url") or item.get("final_url") or item.get("url")
    out.append(f"\nsource: {source or 'text capture'}", style="underline" if source else "")
    out.append("\n")
    failure = item.get("failure")
    if failure and Status(item["status"]) in FAILED:
        _heading(out, "Failed")
        out.append(
            f"at {failure.get('failed_step')}: {failure.get('error_code')}\n"
            f"{failure.get('message')}\n",
            style="red",
        )
        when = failure.get("next_attempt_at")
        out.append(f"readdod retries at {when}\n" if when else "r: retry it\n")
    if not card and not summary:
        out.append("\n\nno card yet", style="dim")
        return out
    one_liner = card.get("one_liner") or summary.get("tl_dr")
    if one_liner:
        _heading(out, "In one line", card_art)
        out.append(f"{one_liner}\n")
    if card.get("summary") or summary.get("intent_relevance"):
        _heading(out, "Summary", arts.get("summary"))
        out.append(f"{card.get('summary') or summary.get('intent_relevance')}\n")
    points = card.get("key_points") or summary.get("key_points") or []
    if points:
        _heading(out, "Key points", arts.get("summary"))
        for point in points:
            out.append(f"• {point}\n")
    todos = todos_of(got)
    if todos:
        _heading(out, "Todos", arts.get("todos"))
        for n, todo in enumerate(todos, 1):
            mark = "[x]" if todo_done(todo) else "[ ]"
            est = todo.get("estimate_min")
            out.append(f"{n}. {mark} {todo.get('title')}", style="dim" if todo_done(todo) else "")
            out.append(f"  ({todo.get('kind')}, {est} min)\n" if est else "\n", style="dim")
    reasons = score.get("reasons") or []
    if reasons:
        _heading(out, "Why this fit", arts.get("score"))
        for reason in reasons:
            out.append(f"• {reason}\n")
    if got.get("exported"):
        _heading(out, "Exported to")
        for path in got["exported"]:
            out.append(f"{path}\n")
    return out
