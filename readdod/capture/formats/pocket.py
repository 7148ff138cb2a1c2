"""Pocket's CSV export: ``title,url,time_added,tags,status``, tags joined by ``|``.

The columns are found by their header, so a file with more, fewer or reordered
columns still reads; only ``url`` is required. ``status`` is ``unread`` or
``archive`` (read). Instapaper's and Readwise Reader's CSV exports have readers
of their own (:mod:`.instapaper`, :mod:`.readwise`).
"""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats import csvscan
from readdod.capture.formats.entry import Entry, Problem, Source, clean, from_epoch, tag_list


def table(src: Source) -> Iterator[tuple[int, dict[str, str | None]] | Problem]:
    """Each row as {header: cell} (headers lower-cased), with its line; a problem for a
    broken row, or one for the whole file without a ``url`` column."""
    header: list[str] | None = None
    for got in csvscan.rows(src):
        if isinstance(got, Problem):
            if header is None:
                yield Problem(got.line, f"the header line is not CSV: {got.message}")
                return
            yield got
            continue
        line, row = got
        if header is None:
            header = [h.strip().lower() for h in row]
            if "url" not in header:
                found = ", ".join(header) or "none"
                yield Problem(line, f"no url column in the header (found: {found})")
                return
            continue
        if not any(cell.strip() for cell in row):
            continue
        cells: dict[str, str | None] = {}
        for name, value in zip(header, row, strict=False):
            cells.setdefault(name, clean(value))
        yield line, cells


def read(src: Source) -> Iterator[Entry | Problem]:
    for got in table(src):
        if isinstance(got, Problem):
            yield got
            continue
        line, cell = got
        url = cell.get("url")
        if url is None:
            yield Problem(line, "the row has no url")
            continue
        added = from_epoch(cell.get("time_added"))
        archived = (cell.get("status") or "").lower() in ("archive", "archived", "read")
        yield Entry(
            line=line,
            url=url,
            title=cell.get("title"),
            tags=tag_list(cell.get("tags") or "", "|"),
            saved_at=added,
            archived=archived,
        )
