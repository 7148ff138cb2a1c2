"""`todo done|undo ID N` and `todos export`: a person's todos, ticked and handed on.

Both ask the daemon only: a tick through the ``todo`` method, an export by
paging through ``list`` and asking ``get`` for each item's ticked todos.
The file is written whole or not at all.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from readdod.cli import render
from readdod.cli.exits import EXIT_OK
from readdod.control.client import Client, RpcError
from readdod.errors import ErrorCode, ReaddodError, ValidationFailed
from readdod.export.atomic import write_atomic
from readdod.tasks import RENDERERS, TaskTodo, todos_of

#: Items asked for per ``list`` page.
PAGE: Final = 200


def cmd_todo(args: argparse.Namespace, client: Client) -> int:
    done = args.todo_action == "done"
    res = client.call("todo", {"id": args.id, "index": args.n, "done": done})
    if args.json:
        print(render.json_text(res))
        return EXIT_OK
    todo = res["todos"][args.n - 1]
    mark = "[x]" if todo["done"] else "[ ]"
    print(f"{res['item']['id']} todo {args.n} {mark} {todo['title']}")
    return EXIT_OK


def statuses(raw: str) -> list[str]:
    """``READY,SHIPPED`` as the list ``list`` takes; the daemon names an unknown one."""
    found = [s.strip().upper() for s in raw.split(",") if s.strip()]
    if not found:
        raise ValidationFailed("--status names no status; give e.g. READY,SHIPPED")
    return list(dict.fromkeys(found))


def collect(client: Client, status: list[str]) -> list[TaskTodo]:
    """Every todo of every item in ``status``, newest item first, each in its order."""
    out: list[TaskTodo] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"status": status, "limit": PAGE}
        if cursor:
            params["cursor"] = cursor
        page = client.call("list", params)
        for item in page["items"]:
            try:
                got = client.call("get", {"id": item["id"]})
            except RpcError as exc:
                if exc.error_code == ErrorCode.NOT_FOUND:
                    continue  # gone between the page and the get
                raise
            out.extend(todos_of(got))
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def cmd_todos_export(args: argparse.Namespace, client: Client) -> int:
    todos = collect(client, statuses(args.status))
    data = RENDERERS[args.format](todos, datetime.now(UTC).replace(microsecond=0))
    if args.out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        path = Path(args.out).expanduser()
        if path.is_dir():
            raise ReaddodError(f"--out {args.out} is a folder; name a file to write")
        try:
            write_atomic(path, data)
        except OSError as exc:
            raise ReaddodError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
        items = len({t.item_id for t in todos})
        if args.json:
            summary = {"path": str(path), "format": args.format, "todos": len(todos)}
            print(render.json_text(summary | {"items": items}))
        else:
            print(
                f"wrote {len(todos)} todos of {items} items to {path} ({args.format})",
                file=sys.stderr,
            )
    return EXIT_OK
