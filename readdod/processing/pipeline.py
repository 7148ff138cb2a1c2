"""The tools the steps run with: the engine and the fetcher (DESIGN §4.1).

Each step is a module of :mod:`readdod.steps`, listed once there; this class
is what a step's ``run`` is given. Steps take what earlier steps of the same
run produced and return a payload; they raise :class:`readdod.errors.StepError`
subclasses on failure. They never touch the store or a status: the actor hands
their results to the core's lease book.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from readdod.engines.base import Engine
from readdod.extraction import extract
from readdod.extraction.fetch import FetchClient, extract_url
from readdod.items.models import Extraction
from readdod.runtime.retrying import OnRetry
from readdod.settings.config import FetchConfig
from readdod.steps import PAYLOAD_TYPES, Step, StepContext, StepResult


def decode_payload(step: str, raw: str | bytes) -> msgspec.Struct:
    """A stored artifact of ``step`` as its Struct."""
    return msgspec.json.decode(raw, type=PAYLOAD_TYPES[step])


class Pipeline:
    """Runs one step at a time for an actor, with the engine and the fetcher."""

    def __init__(self, engine: Engine, http: FetchClient, fetch: FetchConfig) -> None:
        self.engine = engine
        self.http = http
        self.fetch_cfg = fetch

    async def run(self, step: Step[Any], ctx: StepContext) -> StepResult:
        """``step`` run on what the run ``ctx`` knows so far."""
        return await step.run(ctx, self)

    async def fetch_page(self, url: str, on_retry: OnRetry | None) -> Extraction:
        return await extract_url(
            url,
            client=self.http,
            max_bytes=self.fetch_cfg.max_bytes,
            max_redirects=self.fetch_cfg.max_redirects,
            timeout_s=self.fetch_cfg.timeout_s,
            on_retry=on_retry,
        )

    async def extract_html(self, html: str, url: str | None) -> Extraction:
        return await anyio.to_thread.run_sync(lambda: extract(html, url, source="provided_html"))
