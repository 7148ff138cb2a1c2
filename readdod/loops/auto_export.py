"""``daemon.auto_export``: export an item the moment its run makes it READY.

Built by the daemon: the core calls back after the READY commit (never
inside it), this queues the id, and one task exports the items in turn
through the core, which records what happened. An item that goes
somewhere else first (auto-skip, archive, regenerate) is left alone. At
start, the items a run made READY that were never exported (the daemon
stopped or crashed first) are queued again.
"""

from __future__ import annotations

import math

import anyio

from readdod.core import Core
from readdod.errors import ExportFailed, RequestError
from readdod.items.states import Trigger
from readdod.runtime.logging import get_logger

log = get_logger("readdod.export")


class AutoExporter:
    def __init__(self, core: Core) -> None:
        self.core = core
        self._send, self._recv = anyio.create_memory_object_stream[str](max_buffer_size=math.inf)
        core.units.on_ready(self._ready)

    def _ready(self, item_id: str) -> None:
        try:
            self._send.send_nowait(item_id)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the daemon is stopping; the item stays READY

    async def run(self) -> None:
        try:
            # The items a stop or a crash kept from being exported last time.
            for item_id in await self.core.reads.ready_from_runs():
                self._ready(item_id)
            async with self._recv:
                async for item_id in self._recv:
                    await self.export_one(item_id)
        finally:
            self._send.close()

    async def export_one(self, item_id: str) -> None:
        try:
            result = await self.core.exports.export(item_id, trigger=Trigger.SYSTEM)
        except ExportFailed as exc:
            log.warning(
                "export.auto_failed",
                item_id=item_id,
                error_code=exc.error_code,
                path=exc.path,
                error=exc.message,
            )
        except RequestError as exc:
            log.info("export.auto_skipped", item_id=item_id, error_code=exc.error_code)
        except Exception:
            log.exception("export.auto_crashed", item_id=item_id)
        else:
            log.info(
                "export.auto_done",
                item_id=item_id,
                files=result.files,
                reused=result.reused,
                export_key=result.export_key,
            )
