"""Pocket's CSV export: ``title,url,time_added,tags,status``, tags joined by ``|``.

The columns are found by their header, so a file with more, fewer or reordered
columns still reads; only ``url`` is required.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from readdod.capture.formats.entry import Entry, Problem, clean, from_epoch, tag_list


def read(text: str) -> Iterator[Entry | Problem]:
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip().lower() for h in next(rows)]
    except StopIteration:
        return
    except csv.Error as exc:
        yield Problem(1, f"the header line is not CSV: {exc}")
        return
    if "url" not in header:
        yield Problem(1, f"no url column in the header (found: {', '.join(header) or 'none'})")
        return
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    while True:
        line = rows.line_num + 1
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Problem(line, f"not a CSV row: {exc}")
            continue
        if not any(cell.strip() for cell in row):
            continue

        def cell(name: str, row: list[str] = row) -> str | None:
            i = col.get(name)
            return clean(row[i]) if i is not None and i < len(row) else None

        url = cell("url")
        if url is None:
            yield Problem(line, "the row has no url")
            continue
        yield Entry(
            line=line,
            url=url,
            title=cell("title"),
            tags=tag_list(cell("tags") or "", "|"),
            saved_at=from_epoch(cell("time_added")),
        )
