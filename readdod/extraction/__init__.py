"""Turning a page (URL, HTML or text) into an :class:`~readdod.items.models.Extraction`.

Only the pure extractor is exported here so that importing the package never
pulls in httpx; the fetcher lives in :mod:`readdod.extraction.fetch`.
"""

from readdod.extraction.extract import article_text, extract, extract_text

__all__ = ["article_text", "extract", "extract_text"]
