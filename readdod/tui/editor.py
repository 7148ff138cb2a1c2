"""Edit a card's JSON in ``$VISUAL`` / ``$EDITOR``, the terminal handed over meanwhile."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from textual.app import App, SuspendNotSupported


class EditFailed(Exception):
    """The edit could not be made or read back; nothing was saved."""


def editor_command() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def edit_json(app: App[Any], payload: Any) -> Any | None:
    """The edited payload, or None when the file came back unchanged."""
    command = editor_command()
    with tempfile.TemporaryDirectory(prefix="readdod-edit-") as tmp:
        path = Path(tmp) / "card.json"
        original = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
        path.write_text(original, encoding="utf-8")
        try:
            with app.suspend():
                code = subprocess.run([*command, str(path)], check=False).returncode
        except SuspendNotSupported as exc:
            raise EditFailed("this terminal cannot hand itself to an editor") from exc
        except OSError as exc:
            raise EditFailed(f"could not run {command[0]}: {exc}; nothing was saved") from exc
        if code != 0:
            raise EditFailed(f"{command[0]} exited with status {code}; nothing was saved")
        raw = path.read_text(encoding="utf-8")
    if raw == original:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise EditFailed(f"the edited card is not valid JSON ({exc}); nothing was saved") from exc
