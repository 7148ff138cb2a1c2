"""A pure model of readdod's items: the state machine of DESIGN §3 and what
each operation does to an item's runs, artifact versions and exports.

The model-based test (tests/test_model_based.py) drives the real daemon and
this model with the same operations and compares them after every step, so
the model is written from the design, not from the daemon's code: it imports
nothing of readdod. Items are numbered in the order they were captured; runs
are numbered per item in the order they were made. No I/O.

Operations either return what the daemon must answer or raise
:class:`Refused` with the error code the daemon must give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

CAPTURED: Final = "CAPTURED"
QUEUED: Final = "QUEUED"
PROCESSING: Final = "PROCESSING"
READY: Final = "READY"
FAILED_EXTRACTION: Final = "FAILED_EXTRACTION"
FAILED_AI: Final = "FAILED_AI"
FAILED_EXPORT: Final = "FAILED_EXPORT"
SHIPPED: Final = "SHIPPED"
ARCHIVED: Final = "ARCHIVED"

STEPS: Final = ("extraction", "summary", "score", "todos", "card")
#: How a failure names each step (seed 000 §6.1); ``retry_failed`` takes either name.
WIRE_STEP: Final = {
    "extraction": "extract",
    "summary": "summarize",
    "score": "score",
    "todos": "todos",
    "card": "card",
}
AI_STEPS: Final = STEPS[1:]
FAILED: Final = frozenset({FAILED_EXTRACTION, FAILED_AI, FAILED_EXPORT})

#: DESIGN §3: (from, to) a person may ask for. System moves are the model's own doing.
USER_MOVES: Final = frozenset(
    {
        (CAPTURED, QUEUED),
        (CAPTURED, ARCHIVED),
        (QUEUED, ARCHIVED),
        (READY, SHIPPED),
        (READY, ARCHIVED),
        (READY, QUEUED),
        (FAILED_EXTRACTION, QUEUED),
        (FAILED_AI, QUEUED),
        (FAILED_EXTRACTION, ARCHIVED),
        (FAILED_AI, ARCHIVED),
        (FAILED_EXPORT, SHIPPED),
        (FAILED_EXPORT, FAILED_EXPORT),
        (FAILED_EXPORT, QUEUED),
        (FAILED_EXPORT, ARCHIVED),
        (SHIPPED, SHIPPED),
        (SHIPPED, ARCHIVED),
        (ARCHIVED, READY),
        (ARCHIVED, QUEUED),
    }
)

#: How the fake model server misbehaves, and the error code the item must fail with.
AI_FAULTS: Final = {
    "invalid": "AI_SCHEMA_INVALID",
    "badjson": "AI_PARSE_ERROR",
    "refuse": "AI_REFUSED",
}
EXTRACTION_FAILURE: Final = "EXTRACTION_EMPTY"
EXPORT_FAILURE: Final = "EXPORT_WRITE_FAILED"

Kind = Literal["url", "text", "html"]
Folder = Literal["good", "blocked"]


class Refused(Exception):
    """The daemon must refuse the request with ``code`` (and, for moves, from/to)."""

    def __init__(self, code: str, src: str | None = None, dst: str | None = None) -> None:
        super().__init__(f"{code} {src}->{dst}")
        self.code = code
        self.src = src
        self.dst = dst


@dataclass(frozen=True)
class Outcome:
    """How the next runs of a source's items go."""

    extraction_fails: bool = False
    #: The AI step whose requests fail, and how.
    ai_step: str | None = None
    ai_fault: str = "invalid"

    def describe(self) -> str:
        if self.extraction_fails:
            return "extraction fails"
        if self.ai_step:
            return f"{self.ai_fault} at {self.ai_step}"
        return "ok"


@dataclass
class Source:
    """What is captured: a page (url), a page with its HTML sent along (html) or pasted
    text, and the intent with its token."""

    token: str
    kind: Kind
    outcome: Outcome = Outcome()
    #: For html: the HTML sent has no article, so every extraction of it fails.
    empty_html: bool = False

    def extraction_fails(self, outcome: Outcome) -> bool:
        if self.kind == "html":
            return self.empty_html
        return self.kind == "url" and outcome.extraction_fails


@dataclass
class Run:
    mode: str
    status: str
    refetch: bool = False
    attempts: int = 0


@dataclass(frozen=True)
class Version:
    type: str
    version: int
    created_by: str
    run: int | None


@dataclass(frozen=True)
class Failure:
    step: str
    code: str
    attempts: int


@dataclass
class Item:
    source: Source
    status: str
    failure: Failure | None = None
    archive_reason: str | None = None
    current_run: int | None = None
    runs: list[Run] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    #: Formats exported to the good folder: one file per format.
    formats: set[str] = field(default_factory=set)
    #: Export records: (chosen key or None for the default one, format, card version).
    exports: list[tuple[str | None, str, int]] = field(default_factory=list)
    #: The run the item is READY on: its card is what the item shows.
    ready_run: int | None = None
    #: The shown score's: a person's, else that of the run that made the item READY.
    priority: str = "P2"
    #: Every transition, as the event log must have it: (from, to, trigger).
    moves: list[tuple[str, str, str]] = field(default_factory=list)

    def latest(self, typ: str) -> Version | None:
        """The version a person sees: their newest edit first, else the system's version
        of the run the item shows (the one it is READY on, else its current run); an
        extraction that run reused is the newest one."""
        run = self.ready_run if self.ready_run is not None else self.current_run
        mine = [
            v
            for v in self.versions
            if v.type == typ and (v.created_by == "user" or v.run == run or typ == "extraction")
        ]
        if not mine:
            return None
        return max(mine, key=lambda v: (v.created_by == "user", v.run == run, v.version))

    def of_run(self, run: int) -> set[str]:
        return {v.type for v in self.versions if v.run == run and v.created_by == "system"}

    def add(self, typ: str, created_by: str, run: int | None) -> int:
        version = 1 + max((v.version for v in self.versions if v.type == typ), default=0)
        self.versions.append(Version(typ, version, created_by, run))
        return version


@dataclass(frozen=True)
class ItemView:
    """What the test compares for one item; run numbers stand for run ids."""

    status: str
    failure: Failure | None
    archive_reason: str | None
    current_run: int | None
    runs: tuple[tuple[str, str, int], ...]
    versions: tuple[tuple[str, int, str, int | None], ...]
    shown: tuple[tuple[str, int, str], ...]
    exported: tuple[str, ...]
    exports: tuple[tuple[str | None, str, int], ...]
    priority: str
    moves: tuple[tuple[str, str, str], ...]


EXTENSIONS: Final = {"markdown": ".md", "json": ".json"}


class Model:
    """``scored``: the priority the model server's score gives; ``edited``: a person's;
    ``auto_process``: the daemon queues what it captures (``daemon.auto_process``)."""

    def __init__(self, *, scored: str, edited: str, auto_process: bool = False) -> None:
        self.scored = scored
        self.edited = edited
        self.auto_process = auto_process
        self.items: list[Item] = []
        self.paused = False
        #: export key -> (item, format). Default keys are tuples, chosen keys strings.
        self.keys: dict[object, tuple[int, str]] = {}
        #: capture_id -> (source token, item).
        self.capture_ids: dict[str, tuple[str, int]] = {}
        #: process_request_id -> (item, run).
        self.requests: dict[str, tuple[int, int]] = {}

    # --- helpers -------------------------------------------------------------

    def _move(self, item: Item, dst: str) -> None:
        """A move a person asked for, if §3 allows it."""
        if (item.status, dst) not in USER_MOVES:
            raise Refused(
                "PROCESSING_IN_PROGRESS" if item.status == PROCESSING else "INVALID_TRANSITION",
                item.status,
                dst,
            )
        item.moves.append((item.status, dst, "user"))
        item.status = dst

    @staticmethod
    def _system(item: Item, dst: str) -> None:
        """A move the daemon makes by itself."""
        item.moves.append((item.status, dst, "system"))
        item.status = dst

    def _new_run(self, item: Item, mode: str, refetch: bool = False) -> int:
        item.runs.append(Run(mode, "queued", refetch))
        item.current_run = len(item.runs) - 1
        return item.current_run

    def _enqueue(self, item: Item, mode: str | None, refetch: bool = False) -> None:
        """Queue ``item`` on a new run of ``mode``, or resume its current run."""
        self._move(item, QUEUED)
        if mode is not None or item.current_run is None:
            self._new_run(item, mode or "PROCESS", refetch)
        else:
            item.runs[item.current_run].status = "queued"
        item.failure = None
        item.archive_reason = None

    def _complete_run(self, item: Item) -> int | None:
        """The newest run with all four AI artifacts (the current run first)."""
        order = [item.current_run] if item.current_run is not None else []
        order += list(reversed(range(len(item.runs))))
        for run in dict.fromkeys(order):
            if set(AI_STEPS) <= item.of_run(run):
                return run
        return None

    # --- operations ----------------------------------------------------------

    def capture(self, source: Source, capture_id: str | None) -> tuple[int, bool]:
        if capture_id is not None and capture_id in self.capture_ids:
            token, index = self.capture_ids[capture_id]
            if token != source.token:
                raise Refused("IDEMPOTENCY_CONFLICT")
            return index, False
        if source.kind != "text":
            for index, item in enumerate(self.items):
                if item.source is source:
                    return index, False
        item = Item(source, CAPTURED)
        self.items.append(item)
        index = len(self.items) - 1
        if capture_id is not None:
            self.capture_ids[capture_id] = (source.token, index)
        if self.auto_process:
            self._system(item, QUEUED)
            self._new_run(item, "PROCESS")
        return index, True

    def process(
        self, index: int, *, regenerate: bool, refetch: bool, request_id: str | None
    ) -> int:
        """Returns the run the item is queued on."""
        item = self.items[index]
        if request_id is not None and request_id in self.requests:
            seen_item, run = self.requests[request_id]
            if seen_item != index:
                raise Refused("IDEMPOTENCY_CONFLICT")
            return run
        src = item.status
        if src == READY and not regenerate:
            raise Refused("INVALID_TRANSITION", src, QUEUED)
        if src == CAPTURED:
            mode: str | None = "PROCESS"
        elif src in (FAILED_EXTRACTION, FAILED_AI) and not (regenerate or refetch):
            mode = None
        else:
            mode = "REGENERATE"
        self._enqueue(item, mode, refetch)
        assert item.current_run is not None
        if request_id is not None:
            self.requests[request_id] = (index, item.current_run)
        return item.current_run

    def ship(self, index: int) -> None:
        item = self.items[index]
        if item.status == SHIPPED:
            return
        self._move(item, SHIPPED)
        item.failure = None

    def archive(self, index: int, reason: str | None, *, cancel: bool = False) -> None:
        item = self.items[index]
        if reason not in (None, "USER_ARCHIVE", "FAILURE_ARCHIVE"):
            raise Refused("VALIDATION_ERROR")
        if item.status == PROCESSING and cancel:
            self._system(item, QUEUED)  # the run stops; it writes nothing more
        src = item.status
        self._move(item, ARCHIVED)
        item.archive_reason = reason or ("FAILURE_ARCHIVE" if src in FAILED else "USER_ARCHIVE")
        if src == QUEUED and item.current_run is not None:
            item.runs[item.current_run].status = "cancelled"

    def unarchive(self, index: int, *, regenerate: bool) -> None:
        item = self.items[index]
        if item.status != ARCHIVED:
            busy = item.status == PROCESSING
            raise Refused(
                "PROCESSING_IN_PROGRESS" if busy else "INVALID_TRANSITION",
                item.status,
                QUEUED if regenerate else READY,
            )
        complete = None if regenerate else self._complete_run(item)
        if complete is not None:
            self._move(item, READY)
            item.current_run = item.ready_run = complete
            item.priority = self.edited if self._edited(item, "score") else self.scored
            item.failure = None
            item.archive_reason = None
            return
        finished = item.current_run is not None and item.runs[item.current_run].status == (
            "succeeded"
        )
        self._enqueue(item, "REGENERATE" if regenerate or finished else None)

    def retry_failed(self, step: str | None, *, dry_run: bool = False) -> list[int]:
        picked = []
        for index, item in enumerate(self.items):
            if item.status not in (FAILED_EXTRACTION, FAILED_AI):
                continue
            assert item.failure is not None
            if step is not None and item.failure.step != WIRE_STEP.get(step, step):
                continue
            picked.append(index)
            if not dry_run:
                self._enqueue(item, None)
        return picked

    def set_paused(self, paused: bool) -> bool:
        self.paused = paused
        return paused

    def edit(self, index: int, typ: str) -> int:
        item = self.items[index]
        if item.status == PROCESSING:
            raise Refused("PROCESSING_IN_PROGRESS", item.status, item.status)
        base = item.latest(typ)
        if base is None:
            raise Refused("NOT_FOUND")
        if typ == "score":
            item.priority = self.edited
        return item.add(typ, "user", base.run)

    def export(self, index: int, fmt: str, folder: Folder, key: str | None) -> bool:
        """Returns whether an earlier export was reused (nothing written)."""
        item = self.items[index]
        if item.status not in (READY, FAILED_EXPORT, SHIPPED):
            raise Refused(
                "PROCESSING_IN_PROGRESS" if item.status == PROCESSING else "INVALID_TRANSITION",
                item.status,
                SHIPPED,
            )
        card, score = item.latest("card"), item.latest("score")
        the_key: object = key
        if key is None:
            # A person's summary or todos are on the card shown: a new one exports anew.
            edits = tuple(
                (typ, v.version)
                for typ in ("summary", "todos")
                if (v := item.latest(typ)) is not None and v.created_by == "user"
            )
            the_key = (
                index,
                card.version if card else 0,
                score.version if score else None,
                fmt,
                folder,
                edits,
            )
        if the_key in self.keys:
            if self.keys[the_key] != (index, fmt):
                raise Refused("IDEMPOTENCY_CONFLICT")
            if item.status != SHIPPED:
                self._move(item, SHIPPED)
                item.failure = None
            return True
        if folder == "blocked":
            item.runs.append(Run("EXPORT", "failed", attempts=1))
            if item.status != SHIPPED:
                prev = item.failure
                attempts = prev.attempts + 1 if prev and prev.step == "export" else 1
                self._system(item, FAILED_EXPORT)
                item.failure = Failure("export", EXPORT_FAILURE, attempts)
            raise Refused(EXPORT_FAILURE)
        self.keys[the_key] = (index, fmt)
        item.exports.append((key, fmt, card.version if card else 0))
        item.runs.append(Run("EXPORT", "succeeded", attempts=1))
        self._move(item, SHIPPED)
        item.failure = None
        item.formats.add(fmt)
        return False

    # --- the daemon's own work -----------------------------------------------

    def settle(self) -> None:
        """Run every QUEUED item to its end, unless the daemon is paused."""
        if self.paused:
            return
        for item in self.items:
            if item.status == QUEUED:
                self._run(item)

    def start(self, index: int) -> str:
        """Claim a QUEUED item whose first AI step will not answer; returns that step.

        The run writes what comes before (its extraction, if it needs one) and
        stays PROCESSING.
        """
        item = self.items[index]
        assert item.status == QUEUED and not self.paused
        held = self._run(item, hold=True)
        assert held is not None
        return held

    def _run(self, item: Item, *, hold: bool = False) -> str | None:
        """Run ``item`` to its end; with ``hold``, stop at its first AI step and return it."""
        assert item.current_run is not None
        number = item.current_run
        run = item.runs[number]
        run.status = "running"
        run.attempts += 1
        self._system(item, PROCESSING)
        outcome = Outcome() if hold else item.source.outcome
        done = item.of_run(number)
        for step in STEPS:
            if step in done:
                continue
            if hold and step in AI_STEPS:
                return step
            if step == "extraction":
                reuse = run.mode == "REGENERATE" and not run.refetch
                if reuse and item.latest("extraction") is not None:
                    continue
                if item.source.extraction_fails(outcome):
                    self._fail(item, run, step, EXTRACTION_FAILURE)
                    return None
            elif outcome.ai_step == step:
                self._fail(item, run, step, AI_FAULTS[outcome.ai_fault])
                return None
            item.add(step, "system", number)
        run.status = "succeeded"
        item.ready_run = number
        item.priority = self.edited if self._edited(item, "score") else self.scored
        self._system(item, READY)
        item.failure = None
        return None

    @staticmethod
    def _edited(item: Item, typ: str) -> bool:
        """Whether a person's version of ``typ`` is what the item shows."""
        shown = item.latest(typ)
        return shown is not None and shown.created_by == "user"

    def _fail(self, item: Item, run: Run, step: str, code: str) -> None:
        run.status = "failed"
        self._system(item, FAILED_EXTRACTION if step == "extraction" else FAILED_AI)
        item.failure = Failure(WIRE_STEP[step], code, run.attempts)

    # --- what is compared ------------------------------------------------------

    def view(self, index: int) -> ItemView:
        item = self.items[index]
        shown = []
        for typ in sorted({v.type for v in item.versions}):
            v = item.latest(typ)
            if v is not None:  # none: only other runs made one, and the item shows this run
                shown.append((typ, v.version, v.created_by))
        return ItemView(
            status=item.status,
            failure=item.failure,
            archive_reason=item.archive_reason,
            current_run=item.current_run,
            runs=tuple((r.mode, r.status, r.attempts) for r in item.runs),
            versions=tuple(sorted((v.type, v.version, v.created_by, v.run) for v in item.versions)),
            shown=tuple(shown),
            exported=tuple(sorted(EXTENSIONS[f] for f in item.formats)),
            exports=tuple(sorted(item.exports, key=repr)),
            priority=item.priority,
            moves=tuple(item.moves),
        )
