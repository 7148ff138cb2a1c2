"""What readdod learned about each model server, kept across restarts.

One small JSON file (``model-servers.json`` in the data directory) maps
``<base_url> <model>`` to the response format the server took, the context
it said it has and how many requests it took at once
(:mod:`.concurrency`), so a restarted daemon asks in the right format, at
the right pace, at once. A missing or unreadable file is an empty memory: what it held is
learned again from the server's answers.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Final

import msgspec

from readdod.runtime.logging import get_logger

log = get_logger("readdod.engines.openai")

FILENAME: Final = "model-servers.json"


class Learned(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What one server and model accepted."""

    format: str | None = None
    context_tokens: int | None = None
    #: The adaptive limit of requests in flight, as it last moved.
    concurrency: int | None = None


class ServerMemory:
    """The learned facts of every server and model, in one file (or in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._all: dict[str, Learned] = {}
        if path is not None:
            try:
                self._all = msgspec.json.decode(path.read_bytes(), type=dict[str, Learned])
            except FileNotFoundError:
                pass
            except (OSError, msgspec.DecodeError) as exc:
                log.warning("ai.server_memory_unreadable", path=str(path), error=str(exc))

    @staticmethod
    def key(server: str, model: str) -> str:
        return f"{server} {model}"

    def get(self, server: str, model: str) -> Learned:
        return self._all.get(self.key(server, model)) or Learned()

    def remember(
        self,
        server: str,
        model: str,
        *,
        format: str | None = None,
        context: int | None = None,
        concurrency: int | None = None,
    ) -> None:
        """Keep what was learned; written at once, atomically, so a crash keeps it too."""
        old = self.get(server, model)
        new = Learned(
            format=format or old.format,
            context_tokens=context if context is not None else old.context_tokens,
            concurrency=concurrency if concurrency is not None else old.concurrency,
        )
        if new == old:
            return
        self._all[self.key(server, model)] = new
        if self.path is not None:
            try:
                self._write(self.path)
            except OSError as exc:
                log.warning("ai.server_memory_unwritable", path=str(self.path), error=str(exc))

    def _write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(msgspec.to_builtins(self._all), indent=2, sort_keys=True) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".model-servers.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
