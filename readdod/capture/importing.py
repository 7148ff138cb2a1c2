"""``readdod import``: an export's entries sent to the daemon as captures, in batches.

:func:`import_file` is the one way in: whoever imports (the CLI, or any other client
of the socket) gives it the file, the options and a progress callback, and gets
the :class:`Tally` back.
Every capture carries a capture_id derived from its entry (:mod:`.plan`), so
the daemon answers a repeat with the item it already has: running an import
again adds nothing, and an import cut short (Ctrl-C, a daemon restart) is
finished by running it again. A bad entry is reported with its line and
skipped; the rest go on.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import io
import itertools
import re
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, TextIO

import msgspec

from readdod.capture.formats import READERS, Entry, Problem, Skipped, detect, omnivore
from readdod.capture.formats.detect import HEAD, UnknownFormat
from readdod.capture.plan import Census, Options, Planned, census, plan
from readdod.control.client import Client, RpcError
from readdod.control.protocol import MAX_BATCH, MAX_LINE
from readdod.errors import DaemonUnavailable, ErrorCode, ReaddodError, UnsafeSocket
from readdod.extraction.charsets import decode_body

#: Captures sent in one line: enough to amortise the round trip, few enough for a
#: progress bar that moves and for batches to spread over the connections.
BATCH: Final = 100
#: Connections an import sends its batches on at once: the daemon answers each
#: connection's captures one after another, so captures from many connections are
#: what its group commit can make durable together (4 gave 1.6k captures/s, 16 gave
#: 3.7k, 32 gave 4.7k in bench/import.py); 16 leaves most of control.max_connections.
CONNECTIONS: Final = 16
#: A batch line is kept this far below the daemon's line limit.
BATCH_BYTES: Final = MAX_LINE - 64 * 1024
#: Refused entries listed one by one in the summary; the rest are counted.
SHOWN_PROBLEMS: Final = 20

_enc = msgspec.json.Encoder()


class ImportFileError(ReaddodError):
    """The file cannot be imported at all (unreadable, not a known format)."""


class Tally(msgspec.Struct):
    """What an import did, entry by entry: every entry of the file is in one count."""

    fmt: str
    total: int = 0
    new: int = 0
    already: int = 0
    #: (line, why) of every entry left out.
    refused: list[tuple[int, str]] = []
    #: Entries left out on purpose, by why (repeats merged into their first, feed rows...).
    skipped: dict[str, int] = {}
    #: Of the entries sent: brought in ARCHIVED, starred, with highlights.
    archived: int = 0
    starred: int = 0
    highlighted: int = 0
    #: Repeats whose intent was set (not yet processed), or kept (processed already).
    intent_set: int = 0
    intent_kept: int = 0
    #: Sent without an intent of the person's (``--intent`` gave theirs).
    intent_from: str = "note"
    dry_run: bool = False
    #: Why the import stopped before the end of the file (the daemon went away, Ctrl-C);
    #: None when it went through. Running it again finishes it.
    interrupted: str | None = None
    #: The person stopped it (Ctrl-C), rather than the daemon going away.
    cancelled: bool = False

    @property
    def done(self) -> int:
        return self.new + self.already + len(self.refused) + sum(self.skipped.values())

    @property
    def duplicates(self) -> int:
        return self.skipped.get(DUPLICATES, 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.fmt,
            "total": self.total,
            "new": self.new,
            "already": self.already,
            "duplicates": self.duplicates,
            "skipped": dict(self.skipped),
            "archived": self.archived,
            "starred": self.starred,
            "highlighted": self.highlighted,
            "intent_set": self.intent_set,
            "intent_kept": self.intent_kept,
            "refused": [{"line": line, "reason": why} for line, why in self.refused],
            "dry_run": self.dry_run,
            "interrupted": self.interrupted,
        }


#: The Skipped kind of a link met earlier in the same file.
DUPLICATES: Final = "repeats of a link met earlier in the file (merged)"
#: A file that is not UTF-8 is decoded whole by its declared charset: up to this size.
MAX_LEGACY_BYTES: Final = 64 * 2**20
#: A member of an export archive larger than this (uncompressed) is not read.
MAX_MEMBER: Final = 64 * 2**20
#: A member that claims to expand more than this many times is refused (a zip bomb).
MAX_RATIO: Final = 200

Found = Iterator[Entry | Problem | Skipped]


def _is_utf8(path: Path) -> bool:
    """Whether the file is UTF-8 throughout, read in chunks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    except OSError as exc:
        raise ImportFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return True


def open_text(path: Path) -> TextIO:
    """The file as text, read as it goes: UTF-8 (with or without a BOM); else (old browsers
    wrote Windows code pages) decoded whole by the charset it declares, within bounds."""
    if _is_utf8(path):
        return path.open(encoding="utf-8-sig", newline="")
    try:
        size = path.stat().st_size
        if size > MAX_LEGACY_BYTES:
            raise ImportFileError(
                f"{path} is not UTF-8 and is {size / 2**20:.0f} MB; convert it to UTF-8"
                " (iconv -t UTF-8) and import it again"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return io.StringIO(decode_body(data, None), newline="")


def read_file(path: Path) -> str:
    """The file's text, whole (for small files and tests)."""
    with open_text(path) as f:
        return f.read()


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    """A member's text, or None when it is too large or expands too much to be read."""
    if info.file_size > MAX_MEMBER:
        return None
    if info.file_size > 1 << 20 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return None
    with archive.open(info) as f:
        data = f.read(MAX_MEMBER + 1)  # the header's size is not trusted either
    if len(data) > MAX_MEMBER:
        return None
    return data.decode("utf-8-sig", errors="replace")


def _omnivore_archive(path: Path) -> Callable[[], Found]:
    """Every ``metadata_*.json`` of Omnivore's export archive, each page and highlights
    read when its entry is; a member too large to read is a problem naming it."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFileError(f"cannot read the archive {path}: {exc}") from exc
    metas = sorted(
        (i for i in infos if re.search(r"(^|/)metadata_[^/]*\.json$", i.filename)),
        key=lambda i: i.filename,
    )
    if not metas:
        raise ImportFileError(
            f"{path}: a zip archive without metadata_*.json files (not Omnivore's export)"
        )
    pages = {
        m.group(1): i
        for i in infos
        if (m := re.search(r"(?:^|/)content/([^/]+)\.html$", i.filename))
    }
    marks = {
        m.group(1): i
        for i in infos
        if (m := re.search(r"(?:^|/)highlights/([^/]+)\.md$", i.filename))
    }

    def found() -> Found:
        try:
            with zipfile.ZipFile(path) as archive:

                def lookup(table: dict[str, zipfile.ZipInfo]) -> Callable[[str], str | None]:
                    def get(slug: str) -> str | None:
                        info = table.get(slug)
                        return None if info is None else _member(archive, info)

                    return get

                for info in metas:
                    text = _member(archive, info)
                    if text is None:
                        yield Problem(
                            0,
                            f"{info.filename}: {info.file_size / 2**20:.0f} MB"
                            f" (from {info.compress_size} bytes): too large to read, skipped",
                        )
                        continue
                    for got in omnivore.read(text, lookup(pages), lookup(marks)):
                        if isinstance(got, Problem):
                            got = Problem(got.line, f"{info.filename}: {got.message}")
                        yield got
        except (OSError, zipfile.BadZipFile) as exc:
            raise ImportFileError(f"cannot read the archive {path}: {exc}") from exc

    return found


def _source(path: Path, fmt: str) -> tuple[str, Callable[[], Found]]:
    """The file's format (``fmt``, or detected for ``auto``) and a way to read it (again:
    an import reads it twice, to count and merge, then to send)."""
    if not path.exists():
        raise ImportFileError(f"cannot read {path}: no such file")
    if fmt in ("auto", "omnivore") and zipfile.is_zipfile(path):
        return "omnivore", _omnivore_archive(path)
    if fmt == "auto":
        with open_text(path) as f:
            head = f.read(HEAD)
        try:
            fmt = detect(path.name, head)
        except UnknownFormat as exc:
            raise ImportFileError(f"{path}: {exc}") from exc
    reader = READERS[fmt]

    def found() -> Found:
        with open_text(path) as f:
            yield from reader(f)

    return fmt, found


def entries(path: Path, fmt: str) -> tuple[str, list[Entry | Problem | Skipped]]:
    """The file's format and what it holds, whole (for tests and small files)."""
    fmt, found = _source(path, fmt)
    return fmt, list(found())


class Prepared(msgspec.Struct):
    """An import ready to send: the file counted, its repeats found, the intent settled."""

    census: Census
    opts: Options


def _prepare(
    found: Callable[[], Found],
    opts: Options,
    ask: Callable[[int], str | None] | None,
) -> Prepared:
    """Count the file (a first pass); entries with neither ``--intent`` nor a note of the
    person's own get the one answer ``ask`` gives (it is told how many), or are left out
    saying why."""
    counted = census(found(), opts)
    if counted.needs_intent and ask is not None and not opts.intent:
        answer = ask(counted.needs_intent)
        if answer:
            opts = msgspec.structs.replace(opts, intent=answer)
    return Prepared(counted, opts)


NO_INTENT: Final = (
    "no intent: the entry has no note of yours (a source's description is not an intent);"
    " give --intent (why you saved these links)"
)


def _planned(found: Callable[[], Found], prep: Prepared, tally: Tally) -> Iterator[Planned]:
    """The captures to send, in file order (a second pass); what is left out is counted
    into ``tally`` as it is met."""
    for got in plan(found(), prep.opts, prep.census):
        if isinstance(got, Problem):
            tally.refused.append((got.line, got.message))
        elif isinstance(got, Skipped):
            tally.skipped[got.kind] = tally.skipped.get(got.kind, 0) + 1
        elif got.needs_intent:
            tally.refused.append((got.line, NO_INTENT))
        else:
            yield got


def _batches(planned: Iterable[Planned]) -> Iterator[list[Planned]]:
    """Runs of captures whose batch line stays within the daemon's limits."""
    batch: list[Planned] = []
    size = 2
    for p in planned:
        cost = len(_enc.encode(p.params)) + 64
        if batch and (len(batch) >= min(BATCH, MAX_BATCH) or size + cost > BATCH_BYTES):
            yield batch
            batch, size = [], 2
        batch.append(p)
        size += cost
    if batch:
        yield batch


def _reason(error: dict[str, Any]) -> str:
    data = error.get("data") or {}
    code = data.get("error_code") or f"RPC_{error.get('code')}"
    return f"{code}: {error.get('message', '')}"


def _count(tally: Tally, p: Planned) -> None:
    tally.archived += p.archived
    tally.starred += p.starred
    tally.highlighted += p.highlights > 0


def _send(client: Client, batch: list[Planned], tally: Tally) -> None:
    """Capture a batch (one line; a capture too long for a batch goes alone) and count."""
    ids = itertools.count(1)
    reqs = [
        {"jsonrpc": "2.0", "id": next(ids), "method": "capture", "params": p.params} for p in batch
    ]
    line = _enc.encode(reqs[0] if len(reqs) == 1 else reqs) + b"\n"
    try:
        client.send_raw(line)
        answer = msgspec.json.decode(client.read_raw())
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise DaemonUnavailable(f"lost the connection to the daemon ({exc})") from exc
    answers = answer if isinstance(answer, list) else [answer]
    by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
    for req, p in zip(reqs, batch, strict=True):
        got = by_id.get(req["id"])
        if got is None:
            whole = answers[0] if len(answers) == 1 and isinstance(answers[0], dict) else {}
            why = _reason(whole["error"]) if "error" in whole else "no answer from the daemon"
            tally.refused.append((p.line, why))
        elif "result" in got:
            if got["result"].get("created"):
                tally.new += 1
            else:
                tally.already += 1
                tally.intent_set += bool(got["result"].get("intent_set"))
        elif (got["error"].get("data") or {}).get("error_code") == ErrorCode.IDEMPOTENCY_CONFLICT:
            # Imported before, with another intent or title: the link is there (processed
            # already when it was only the intent, which then stays).
            tally.already += 1
            tally.intent_kept += "intent" in p.params
        else:
            tally.refused.append((p.line, _reason(got["error"])))


def _run(
    connect: Callable[[], Client] | None,
    planned: Iterable[Planned],
    tally: Tally,
    progress: Callable[[Tally], None],
    *,
    connections: int = CONNECTIONS,
) -> Tally:
    """Send every capture (none without ``connect``: a dry run); ``progress`` after each batch.

    Batches go out on a few connections at once, so the daemon commits
    captures of several batches together (its group commit) instead of one
    fsync per capture.
    """
    progress(tally)
    if connect is None:
        for p in planned:
            _count(tally, p)
            tally.new += 1
        progress(tally)
        return tally
    lock = threading.Lock()
    queue = _batches(planned)
    stop = threading.Event()
    sent = 0
    batches = 0

    def worker() -> None:
        nonlocal sent, batches
        with connect() as client:
            try:
                client.call("ping")
            except RpcError as exc:
                if exc.error_code == ErrorCode.TOO_MANY_CONNECTIONS:
                    return  # the daemon serves enough clients: the other connections go on
                raise
            while not stop.is_set():
                with lock:
                    batch = next(queue, None)
                    if batch is None:
                        return
                    batches += 1
                counted = Tally(fmt=tally.fmt)
                _send(client, batch, counted)
                with lock:
                    sent += 1
                    tally.new += counted.new
                    tally.already += counted.already
                    tally.intent_set += counted.intent_set
                    tally.intent_kept += counted.intent_kept
                    tally.refused.extend(counted.refused)
                    for p in batch:
                        _count(tally, p)
                    progress(tally)

    workers = max(1, min(connections, -(-tally.total // BATCH)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(worker) for _ in range(workers)]
        try:
            for f in concurrent.futures.as_completed(futures):
                f.result()
        except BaseException:
            # Ctrl-C or a lost daemon: the batches on their way finish, no new one starts.
            stop.set()
            raise
    if sent < batches:
        raise DaemonUnavailable(
            "the daemon refused every connection of this import (control.max_connections)"
        )
    tally.refused.sort()
    return tally


def import_file(
    path: Path,
    opts: Options,
    connect: Callable[[], Client] | None,
    progress: Callable[[Tally], None] | None = None,
    *,
    ask: Callable[[int], str | None] | None = None,
    connections: int = CONNECTIONS,
) -> Tally:
    """Import the export file at ``path``: read it (``opts.fmt``, or ``auto`` to detect
    it), count it, settle the intent (``ask`` is asked once for entries without one),
    and send its captures on connections ``connect`` opens (None: a dry run, nothing
    sent); ``progress`` is called with the tally as it grows.

    Refused entries are counted, not raised; a daemon that goes away (or Ctrl-C) ends
    the import early with :attr:`Tally.interrupted` saying why. A file that cannot be
    imported at all raises :class:`ImportFileError`.
    """
    fmt, found = _source(path, opts.fmt)
    prep = _prepare(found, msgspec.structs.replace(opts, fmt=fmt), ask)
    tally = Tally(
        fmt=fmt,
        total=prep.census.entries,
        dry_run=connect is None,
        intent_from="given" if prep.opts.intent else "note",
    )
    try:
        if connect is not None:
            connect().close()  # the daemon answers, before any progress is shown
        shown = progress or (lambda _: None)
        _run(connect, _planned(found, prep, tally), tally, shown, connections=connections)
    except UnsafeSocket:
        raise  # nothing was sent: said once, with its code, as every client says it
    except DaemonUnavailable as exc:
        tally.interrupted = str(exc)
    except KeyboardInterrupt:
        tally.interrupted, tally.cancelled = "interrupted", True
    return tally


class Bar:
    """A one-line progress bar on a terminal, redrawn at most every ``interval_s``."""

    WIDTH: Final = 30

    def __init__(self, out: TextIO, interval_s: float = 0.1) -> None:
        self.out = out
        self.interval_s = interval_s
        self._last = 0.0
        self._drawn = False

    def __call__(self, tally: Tally) -> None:
        now = time.monotonic()
        if tally.done < tally.total and now - self._last < self.interval_s:
            return
        self._last = now
        filled = self.WIDTH * tally.done // tally.total if tally.total else self.WIDTH
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.out.write(
            f"\r[{bar}] {tally.done}/{tally.total}  new {tally.new} · already there"
            f" {tally.already} · refused {len(tally.refused)}"
        )
        self.out.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self.out.flush()


def summary_lines(tally: Tally, source: str) -> list[str]:
    verb = "would import" if tally.dry_run else "imported"
    lines = [
        f"{verb} {source} ({tally.fmt}): {tally.total} entries; new {tally.new},"
        f" already there {tally.already}, refused {len(tally.refused)}"
        + "".join(f", {n} {kind}" for kind, n in sorted(tally.skipped.items()))
    ]
    kept = []
    if tally.archived:
        kept.append(f"{tally.archived} archived as you had them (not fetched; --process-archived)")
    if tally.starred:
        kept.append(f"{tally.starred} starred (ls --tag starred)")
    if tally.highlighted:
        kept.append(f"{tally.highlighted} with your highlights")
    if kept:
        lines.append("  of those sent: " + "; ".join(kept))
    if tally.intent_from == "note":
        lines.append(
            "  intent: each entry's own note; entries without one were left out (--intent);"
            " a source's description is kept as its description, never as the intent"
        )
    if tally.intent_set or tally.intent_kept:
        lines.append(
            f"  intent set on {tally.intent_set} items not yet processed;"
            f" {tally.intent_kept} processed already keep theirs"
        )
    for line, why in tally.refused[:SHOWN_PROBLEMS]:
        lines.append(f"  line {line}: {why}")
    if len(tally.refused) > SHOWN_PROBLEMS:
        lines.append(f"  ... and {len(tally.refused) - SHOWN_PROBLEMS} more (--json lists all)")
    return lines


def ask_on_tty(stdin: TextIO, out: TextIO) -> Callable[[int], str | None] | None:
    """A prompt for one intent for every entry without one; None when no one can answer."""
    if not stdin.isatty():
        return None

    def ask(count: int) -> str | None:
        out.write(
            f"{count} entries have no note to take their intent from.\n"
            "Why did you save them? (one intent for all; empty to leave them out): "
        )
        out.flush()
        answer = stdin.readline().strip()
        return answer or None

    return ask
