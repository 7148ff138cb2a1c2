"""The extraction step: the article's text from a page, a PDF's text, or the text given.

A capture with ``text`` needs no fetch, one with ``html`` no fetch either; a
link is fetched (DESIGN §4.5). What fails here leaves the item FAILED_EXTRACTION.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from readdod.extraction.extract import extract_document, extract_text
from readdod.items.models import ArtifactMeta, Extraction
from readdod.items.states import Status
from readdod.runtime.retrying import OnRetry
from readdod.steps.base import Step, StepContext, StepResult, no_problems

#: The extraction has no prompt template: its meta names the version of the
#: extraction contract (seed 001 §2.1) that the payload follows.
TEMPLATE_VERSION: Final = "extraction.v1"


class Fetcher(Protocol):
    """What the step asks of the pipeline: the I/O of reading a page."""

    async def fetch_page(self, url: str, on_retry: OnRetry | None) -> Extraction:
        """The page at ``url`` fetched and extracted."""
        ...

    async def extract_html(self, html: str, url: str | None) -> Extraction:
        """A page's HTML given at capture, extracted (away from the event loop)."""
        ...


async def run(ctx: StepContext, tools: Fetcher) -> StepResult:
    html, text, document = await ctx.source()
    if text is not None and document is not None:
        payload = extract_document(text, document, title=ctx.title, url=ctx.url)
    elif text is not None:
        payload = extract_text(text, title=ctx.title, url=ctx.url)
    elif html is not None:
        payload = await tools.extract_html(html, ctx.url)
    else:
        assert ctx.url is not None
        payload = await tools.fetch_page(ctx.url, ctx.hooks.on_retry)
    fields: dict[str, Any] = {}
    if payload.final_url:
        fields["final_url"] = payload.final_url
    if ctx.title is None and payload.title:
        fields["title"] = payload.title[:300]
    meta = ArtifactMeta(
        run_id=None,
        engine="extractor",
        engine_version=payload.extractor,
        template_version=TEMPLATE_VERSION,
    )
    return StepResult(payload=payload, meta=meta, item_fields=fields)


STEP: Final = Step[Fetcher](
    name="extraction",
    wire="extract",
    payload=Extraction,
    user_payload=Extraction,
    needs=(),
    gated=False,
    fails_as=Status.FAILED_EXTRACTION,
    check=no_problems,
    user_check=no_problems,
    run=run,
    reused_on_regenerate=True,
)
