"""``readdod import``: an export's entries sent to the daemon as captures, in batches.

Every capture carries a capture_id derived from its entry (:mod:`.plan`), so
the daemon answers a repeat with the item it already has: running an import
again adds nothing, and an import cut short (Ctrl-C, a daemon restart) is
finished by running it again. A bad entry is reported with its line and
skipped; the rest go on.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import re
import threading
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, TextIO

import msgspec

from readdod.capture.formats import READERS, Entry, Problem, detect, omnivore
from readdod.capture.formats.detect import HEAD, UnknownFormat
from readdod.capture.plan import Options, Planned, plan, with_intent
from readdod.control.client import Client, RpcError
from readdod.control.protocol import MAX_BATCH, MAX_LINE
from readdod.errors import DaemonUnavailable, ErrorCode, ReaddodError
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
    """What an import did, entry by entry."""

    fmt: str
    total: int = 0
    new: int = 0
    already: int = 0
    #: (line, why) of every entry left out.
    refused: list[tuple[int, str]] = []
    dry_run: bool = False

    @property
    def done(self) -> int:
        return self.new + self.already + len(self.refused)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.fmt,
            "total": self.total,
            "new": self.new,
            "already": self.already,
            "refused": [{"line": line, "reason": why} for line, why in self.refused],
            "dry_run": self.dry_run,
        }


def read_file(path: Path) -> str:
    """The file's text: UTF-8 (with or without a BOM), UTF-16 with a BOM, the charset an
    HTML export declares, else a guess (old browsers wrote Windows code pages)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        # Valid UTF-8 is UTF-8, whatever a page kept inside a JSON export declares.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return decode_body(data, None)


def _omnivore_archive(path: Path) -> list[Entry | Problem]:
    """Every ``metadata_*.json`` of Omnivore's export archive; a problem names its member."""
    found: list[Entry | Problem] = []
    try:
        with zipfile.ZipFile(path) as archive:
            names = sorted(
                n for n in archive.namelist() if re.search(r"(^|/)metadata_[^/]*\.json$", n)
            )
            if not names:
                raise ImportFileError(
                    f"{path}: a zip archive without metadata_*.json files (not Omnivore's export)"
                )
            pages = {
                m.group(1): archive.read(n).decode("utf-8", errors="replace")
                for n in archive.namelist()
                if (m := re.search(r"(?:^|/)content/([^/]+)\.html$", n))
            }
            for name in names:
                text = archive.read(name).decode("utf-8-sig", errors="replace")
                for got in omnivore.read(text, pages):
                    if isinstance(got, Problem):
                        got = Problem(got.line, f"{name}: {got.message}")
                    found.append(got)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFileError(f"cannot read the archive {path}: {exc}") from exc
    return found


def entries(path: Path, fmt: str) -> tuple[str, list[Entry | Problem]]:
    """The file's format (``fmt``, or detected for ``auto``) and what it holds."""
    if fmt in ("auto", "omnivore") and zipfile.is_zipfile(path):
        return "omnivore", _omnivore_archive(path)
    text = read_file(path)
    if fmt == "auto":
        try:
            fmt = detect(path.name, text[:HEAD])
        except UnknownFormat as exc:
            raise ImportFileError(f"{path}: {exc}") from exc
    return fmt, list(READERS[fmt](text))


def prepare(
    found: Iterable[Entry | Problem],
    opts: Options,
    ask: Callable[[int], str | None] | None,
) -> tuple[list[Planned], list[Problem]]:
    """The captures to send and the entries left out. Entries with neither ``--intent``
    nor a note of their own get the one answer ``ask`` gives (it is told how many),
    or are left out saying why."""
    planned: list[Planned] = []
    problems: list[Problem] = []
    for got in plan(found, opts):
        if isinstance(got, Problem):
            problems.append(got)
        else:
            planned.append(got)
    missing = sum(p.needs_intent for p in planned)
    intent = ask(missing) if missing and ask is not None else None
    if missing:
        kept = []
        for p in planned:
            if not p.needs_intent:
                kept.append(p)
            elif intent:
                kept.append(with_intent(p, intent))
            else:
                problems.append(
                    Problem(
                        p.line,
                        "no intent: the entry has no note to take it from; give --intent"
                        " (why you saved these links)",
                    )
                )
        planned = kept
    problems.sort(key=lambda p: p.line)
    return planned, problems


def _batches(planned: list[Planned]) -> Iterable[list[Planned]]:
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


def send(client: Client, batch: list[Planned], tally: Tally) -> None:
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
        elif (got["error"].get("data") or {}).get("error_code") == ErrorCode.IDEMPOTENCY_CONFLICT:
            # Imported before, with another intent or title: the link is there.
            tally.already += 1
        else:
            tally.refused.append((p.line, _reason(got["error"])))


def run(
    connect: Callable[[], Client] | None,
    planned: list[Planned],
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
        tally.new = len(planned)
        progress(tally)
        return tally
    batches = list(_batches(planned))
    lock = threading.Lock()
    queue = iter(batches)
    stop = threading.Event()
    sent = 0

    def worker() -> None:
        nonlocal sent
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
                counted = Tally(fmt=tally.fmt)
                send(client, batch, counted)
                with lock:
                    sent += 1
                    tally.new += counted.new
                    tally.already += counted.already
                    tally.refused.extend(counted.refused)
                    progress(tally)

    workers = max(1, min(connections, len(batches)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(worker) for _ in range(workers)]
        try:
            for f in concurrent.futures.as_completed(futures):
                f.result()
        except BaseException:
            # Ctrl-C or a lost daemon: the batches on their way finish, no new one starts.
            stop.set()
            raise
    if sent < len(batches):
        raise DaemonUnavailable(
            "the daemon refused every connection of this import (control.max_connections)"
        )
    tally.refused.sort()
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
    ]
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
