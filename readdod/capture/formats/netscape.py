"""Netscape bookmark HTML: what every browser exports, and Pocket's older HTML export.

Each link is ``<DT><A HREF=... ADD_DATE=... TAGS="a,b">title</A>``, optionally
followed by ``<DD>`` and a description (often the page's own teaser, as
Shaarli and Firefox write it: kept as the source's description, never as the
intent). Pocket's HTML export writes ``TIME_ADDED`` instead of ``ADD_DATE``.
Folders (``<H3>`` then a ``<DL>``) give each link their path. The file is read
in chunks: what it holds is yielded as it is read.
"""

from __future__ import annotations

import html.parser
from collections.abc import Callable, Iterator

import msgspec

from readdod.capture.formats.entry import (
    Entry,
    Problem,
    Source,
    clean,
    folder_path,
    from_epoch,
    stream,
    tag_list,
    truthy,
)

#: Characters fed to the parser at a time.
CHUNK = 256 * 1024
#: The longest tag read (a bookmark's attributes, an icon's data: URI included).
MAX_TAG = 1 << 20
#: Folders nested deeper than this are kept at this depth.
MAX_DEPTH = 32
#: What marks a browser's own root folder in its export.
_ROOT_MARKS = frozenset({"personal_toolbar_folder", "unfiled_bookmarks_folder"})

#: Tags that end a ``<DD>`` description.
_ENDS_NOTE = frozenset({"dt", "dl", "h3", "hr"})


class _Reader(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Entry | Problem] = []
        self._link: dict[str, str | None] | None = None
        self._line = 0
        self._title: list[str] = []
        self._last: Entry | None = None
        self._note: list[str] | None = None
        #: The open folders; a folder's name waits for its <DL>.
        self._folders: list[str | None] = []
        self._heading: list[str] | None = None
        self._named: str | None = None
        self._root = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _ENDS_NOTE or tag == "a":
            self._end_note()
        if tag == "h3":
            self._last = None  # a <DD> after a folder's name describes the folder
            self._heading = []
            self._root = any(k in _ROOT_MARKS for k, _ in attrs)
        elif tag == "dl":
            self._folders.append(self._named)
            self._named = None
        if tag == "a":
            self._flush()
            self._link = dict(attrs)
            self._line = self.getpos()[0]
            self._title = []
        elif tag == "dd" and self._last is not None:
            self._note = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3" and self._heading is not None:
            self._named = None if self._root else clean(" ".join("".join(self._heading).split()))
            self._heading = None
        elif tag == "dl" and self._folders:
            self._folders.pop()
        if tag == "a" and self._link is not None:
            self._flush()
        elif tag in _ENDS_NOTE:
            self._end_note()

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        elif self._link is not None:
            self._title.append(data)
        elif self._note is not None:
            self._note.append(data)

    def close(self) -> None:
        super().close()
        self._flush()
        self._end_note()

    def _flush(self) -> None:
        """The open link as an entry (it ends at ``</A>``, or at the next ``<A>``)."""
        link, self._link = self._link, None
        if link is None:
            return
        self._end_note()
        href = clean(link.get("href"))
        if href is None:
            self.found.append(Problem(self._line, "a link without an address (no HREF)"))
            self._last = None
            return
        self._last = Entry(
            line=self._line,
            url=href,
            title=clean(" ".join("".join(self._title).split())),
            tags=tag_list(link.get("tags") or "", ","),
            saved_at=from_epoch(link.get("add_date") or link.get("time_added")),
            folder=folder_path([f for f in self._folders[:MAX_DEPTH] if f]),
            archived=link.get("toread") == "0" or truthy(link.get("archived")),
            starred=truthy(link.get("starred")) or truthy(link.get("favorite")),
        )
        self.found.append(self._last)

    def _end_note(self) -> None:
        """Attach the open ``<DD>`` text to the link before it."""
        note, self._note = self._note, None
        if note is None or self._last is None:
            return
        text = clean("".join(note))
        if text:
            # The link a <DD> belongs to is always the last thing read.
            self._last = msgspec.structs.replace(self._last, description=text)
            self.found[-1] = self._last


def _bounded(src: Source, report: Callable[[Problem], None]) -> Iterator[str]:
    """The file in chunks, with no more than :data:`MAX_TAG` characters between two
    ``>``: a tag that never ends would otherwise be parsed again at every chunk."""
    chunks = stream(src)
    since = 0  # characters since the last ">"
    dropping = False
    line = 1
    while chunk := chunks.read(CHUNK):
        out: list[str] = []
        start = 0
        for gt in [*(i for i, c in enumerate(chunk) if c == ">"), len(chunk)]:
            piece = chunk[start : gt + 1]
            start = gt + 1
            room = MAX_TAG - since
            if dropping or len(piece) > room:
                keep = "" if dropping else piece[: max(room, 0)]
                if not dropping:
                    report(
                        Problem(line, f"a tag longer than {MAX_TAG // 1024} KiB; its rest skipped")
                    )
                out.append(keep)
                dropping = not piece.endswith(">")
                since = 0 if piece.endswith(">") else since + len(keep)
                if piece.endswith(">"):
                    out.append('">')  # closes the attribute it was cut in, and the tag
            else:
                out.append(piece)
                since = 0 if piece.endswith(">") else since + len(piece)
            line += piece.count("\n")
        yield "".join(out)


def read(src: Source) -> Iterator[Entry | Problem]:
    reader = _Reader()
    for chunk in _bounded(src, lambda problem: reader.found.append(problem)):
        reader.feed(chunk)
        # The last entry may still take a <DD>: it stays until the next one is read.
        done, reader.found = reader.found[:-1], reader.found[-1:]
        yield from done
    reader.close()
    yield from reader.found
