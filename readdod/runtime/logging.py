"""readdod's log lines: JSON (journald-friendly) with the §8 fields, scrubbed of secrets.

Loggers render the JSON themselves; structlog, configured by :func:`configure`,
renders the console format and exceptions and lets tests capture lines.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import re
import sys
import threading
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any, ClassVar, TextIO

import msgspec
import structlog

from readdod.runtime.clock import utc_second
from readdod.runtime.dsn import SECRET_PARAMS
from readdod.runtime.dsn import redact as redact_dsn

_encoder = msgspec.json.Encoder()
REDACTED = "[redacted]"

_SECRET_NAME = re.compile(
    r"(^|_)(api_?key|token|password|passwd|secret|credentials?|authorization|cookie)($|_)", re.I
)
#: libpq's secret parameters as one alternation (readdod.runtime.dsn keeps the list).
_LIBPQ_SECRETS = "|".join(sorted(SECRET_PARAMS, key=len, reverse=True))
_SECRET_PATTERNS = [
    # user:password@ in URLs, up to the last @ of the authority (``app:p@ss@host``)
    (re.compile(r"(://[^/@:\s]+:)[^/?#\s]*@"), rf"\g<1>{REDACTED}@"),
    # credentials in query strings
    (
        re.compile(
            r"([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature"
            rf"|{_LIBPQ_SECRETS})=)[^&#\s]+",
            re.I,
        ),
        rf"\g<1>{REDACTED}",
    ),
    # header-looking text: "Authorization: Bearer x", "Bearer x", "Basic x"
    (
        re.compile(
            r"(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',}]+",
            re.I,
        ),
        rf"\g<1>{REDACTED}",
    ),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+"), rf"\g<1> {REDACTED}"),
    # OpenAI-style keys
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    # a libpq connection string's secrets (store.dsn: password=, sslpassword=, ...), quoted
    # (to its closing quote, or to the end) or not (to a space, backslash escapes included)
    (
        re.compile(
            rf"(\b(?:{_LIBPQ_SECRETS})\s*=\s*)(?!\[redacted\])(?:'(?:[^'\\]|\\.)*(?:'|$)|(?:\\.|[^\s\\])+)",
            re.I,
        ),
        rf"\g<1>{REDACTED}",
    ),
]
_PG_URI = re.compile(r"(?i)\bpostgres(?:ql)?://[^\s\"'<>]*")
_secrets: set[str] = set()
_sink: LogSink | None = None


def add_secret(value: str | None) -> None:
    """Never let ``value`` (an API key read at startup) reach a log line verbatim."""
    if value and len(value) >= 4:
        _secrets.add(value)


# What one of the patterns above needs somewhere in the text; most values have none
# of it, and plain substring tests are far cheaper than the patterns (every line pays).
_MAYBE_SECRET = re.compile(r"://|[?&]|sk-|authoriz|bearer|basic|password|secret|scram_", re.I)


def _maybe_secret(text: str) -> bool:
    return _MAYBE_SECRET.search(text) is not None


# Fields readdod itself fills with known-safe values (ids it made, names from fixed sets).
_SAFE_KEYS = frozenset(
    {
        "ts",
        "level",
        "event",
        "logger_name",
        "item_id",
        "run_id",
        "worker_id",
        "step",
        "from",
        "to",
        "trigger",
        "error_code",
    }
)


def _scrub_text(text: str) -> str:
    if _secrets:
        for secret in _secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
    if not _maybe_secret(text):
        return text
    if "postgres" in text.lower():
        # A PostgreSQL URI as readdod.runtime.dsn reads it (percent-encoded names, a raw @).
        text = _PG_URI.sub(lambda m: redact_dsn(m[0]), text)
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    return text


def scrub_text(text: str) -> str:
    """``text`` with anything secret-looking replaced, as the logs show it."""
    return _scrub_text(text)


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    return key != "event" and _SECRET_NAME.search(key) is not None


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, dict):
        return {
            k: REDACTED if _SECRET_NAME.search(str(k)) else _scrub_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_scrub_value(v) for v in value]
    return value


def scrub(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Blank secret-named fields and secret-looking text in every log line."""
    for key in event.keys() - _SAFE_KEYS:
        value = event[key]
        if value is None:
            continue
        if _secret_name(key):
            event[key] = REDACTED
        elif isinstance(value, str):
            event[key] = _scrub_text(value)
        elif isinstance(value, BaseException):
            event[key] = _scrub_text(f"{type(value).__name__}: {value}")
        elif not isinstance(value, int | float):
            event[key] = _scrub_value(value)
    return event


class LogSink:
    """Where log lines go: a stream, or a file that can be reopened for logrotate.

    On the event loop, lines are gathered and written once per turn of the
    loop (one write for the dozens of lines a busy turn makes, where a write
    each was a tenth of the daemon's time); from any other thread, or with
    no loop running, a line is written at once. A ``kill -9`` can lose the
    lines of the turn it interrupts, nothing older.
    """

    def __init__(self, path: Path | None, stream: TextIO) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._held: list[str] = []
        self._flush_scheduled = False
        self._owned = path is not None
        self._file: TextIO = self._open() if path is not None else stream
        #: Lines lost because the log could not be written (disk full, ``ulimit -f``).
        self.lost = 0
        self._losing = False

    def _open(self) -> TextIO:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.open("a", buffering=1, encoding="utf-8")

    def emit(self, line: str) -> None:
        """Write one whole line, on the event loop at the end of this turn of the loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._held.append(line)
            if loop is None:
                self._write_held()
            elif not self._flush_scheduled:
                self._flush_scheduled = True
                loop.call_soon(self.flush)

    def flush(self) -> None:
        with self._lock:
            self._flush_scheduled = False
            self._write_held()

    def _write_held(self) -> None:
        """Write and push out what is held, so a reader tailing the log sees it now.

        A log that cannot be written (disk full, ``ulimit -f``) costs lines, never the
        daemon: they are counted, and stderr says so when the losing starts.
        """
        if not self._held:
            return
        lines, self._held = self._held, []
        try:
            self._file.write("".join(lines))
            self._file.flush()
        except OSError as exc:
            self.lost += len(lines)
            if not self._losing:
                self._losing = True
                try:
                    sys.stderr.write(f"readdod: log lines are being lost: {exc}\n")
                    sys.stderr.flush()
                except OSError:
                    pass
        else:
            if self._losing:
                self._losing = False

    def isatty(self) -> bool:
        return self._file.isatty()

    def reopen(self) -> str | None:
        if self.path is None:
            return None
        fresh = self._open()
        with self._lock:
            self._write_held()
            old, self._file = self._file, fresh
        old.close()
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self._write_held()
            if self._owned:
                self._file.close()


_LEVELS: dict[str, int] = {
    name.lower(): number for name, number in logging.getLevelNamesMapping().items()
}
_LEVELS["exception"] = logging.ERROR
_format_exc_info = structlog.processors.ExceptionRenderer()


class _State:
    """What :func:`configure` sets; read on every line, so loggers can be cached."""

    level = logging.INFO
    console: structlog.dev.ConsoleRenderer | None = None
    #: structlog's processor chain while readdod renders JSON lines; ``[]`` otherwise.
    chain: ClassVar[list[Any]] = []


def _render(_: Any, method: str, event: MutableMapping[str, Any]) -> str:
    """The whole pipeline in one processor: filter, stamp, scrub, render.

    :func:`configure` makes this structlog's only processor, so a line that
    goes through structlog comes out as the one a :class:`Logger` writes itself.
    """
    if not _enabled(method):
        raise structlog.DropEvent
    if "exc_info" in event:
        event = _format_exc_info(None, method, event)
    if _State.console is not None:
        _stamp(method, event)
        return _State.console(None, method, event)
    return _json_line(method, {"ts": "", "level": "", "event": event.pop("event"), **event})


#: structlog's chain as :func:`configure` sets it.
_READDOD_CHAIN: list[Any] = [_render]


def _enabled(method: str) -> bool:
    return _LEVELS.get(method, logging.INFO) >= _State.level


def _stamp(method: str, event: MutableMapping[str, Any]) -> None:
    """Set the line's level and time (whatever the caller passed as those) and scrub it."""
    event["level"] = "error" if method == "exception" else method
    event["ts"] = _timestamp()
    scrub(None, method, event)


def _json_line(method: str, line: dict[str, Any]) -> str:
    """``line``, whose first keys are ts, level and event, stamped, scrubbed and encoded."""
    _stamp(method, line)
    return _encoder.encode(line).decode()


def _timestamp() -> str:
    """RFC 3339 UTC with microseconds."""
    now = time.time()
    whole = int(now)
    return f"{utc_second(whole)}.{int((now - whole) * 1_000_000):06d}Z"


class _SinkLogger:
    """structlog's output end: whatever sink :func:`configure` set last."""

    def msg(self, message: str) -> None:
        sink = _sink
        if sink is not None:
            sink.emit(message + "\n")

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


def _sink_logger(*_: Any) -> _SinkLogger:
    return _SinkLogger()


class Logger:
    """A named logger with fields bound to it, writing readdod's JSON lines itself.

    structlog's bound loggers run a generic chain for every line (the lazy
    proxy, the level method, copying the context, the processors, checking
    what came back, looking up the output method): half of a line's cost,
    and the hot path logs a dozen lines per item. A line is handed to
    structlog only when it needs what structlog does: the console renderer,
    exceptions, %-arguments, or processors that are not readdod's (before
    :func:`configure`, or while ``structlog.testing.capture_logs`` swaps them
    in place). The line is the same either way: structlog's chain ends in
    :func:`_render`.
    """

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def bind(self, **fields: Any) -> Logger:
        """This logger with ``fields`` added to every line."""
        return Logger({**self._fields, **fields})

    def debug(self, event: str, *args: Any, **kw: Any) -> None:
        self._line(logging.DEBUG, "debug", event, args, kw)

    def info(self, event: str, *args: Any, **kw: Any) -> None:
        self._line(logging.INFO, "info", event, args, kw)

    def warning(self, event: str, *args: Any, **kw: Any) -> None:
        self._line(logging.WARNING, "warning", event, args, kw)

    def error(self, event: str, *args: Any, **kw: Any) -> None:
        self._line(logging.ERROR, "error", event, args, kw)

    def critical(self, event: str, *args: Any, **kw: Any) -> None:
        self._line(logging.CRITICAL, "critical", event, args, kw)

    def exception(self, event: str, *args: Any, **kw: Any) -> None:
        """An error line with the exception being handled."""
        structlog.get_logger(**self._fields).exception(event, *args, **kw)

    def _line(
        self, number: int, method: str, event: str, args: tuple[Any, ...], kw: dict[str, Any]
    ) -> None:
        if args or _State.chain != _READDOD_CHAIN or "exc_info" in kw:
            getattr(structlog.get_logger(**self._fields), method)(event, *args, **kw)
            return
        if number < _State.level:
            return
        line = _json_line(method, {"ts": "", "level": "", "event": event, **self._fields, **kw})
        sink = _sink
        if sink is not None:
            sink.emit(line + "\n")


def _use_readdod_chain() -> None:
    """Make :func:`_render` structlog's only processor, ending in the sink.

    ``structlog.testing.capture_logs`` changes the configured list in place
    (bound loggers keep a reference to it); :class:`Logger` watches the same
    list to know when to hand lines over.
    """
    structlog.configure(
        processors=list(_READDOD_CHAIN),
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=_sink_logger,
    )
    _State.chain = structlog.get_config()["processors"] if _State.console is None else []


def configure(
    level: str = "info",
    stream: TextIO | None = None,
    *,
    fmt: str = "json",
    file: str | Path | None = None,
) -> LogSink:
    """One JSON object per line: ts (RFC 3339 UTC), level, event, then fields.

    ``fmt="console"`` renders aligned lines for people instead. With ``file``
    the lines go to that file, reopened by :func:`reopen` (SIGHUP). Importing
    readdod configures nothing: the program's entry (``readdod serve``, a
    verb that logs, a test session) calls this, and it configures structlog too.
    """
    global _sink
    if _sink is not None:
        _sink.close()
    sink = LogSink(Path(file).expanduser() if file else None, stream or sys.stdout)
    _sink = sink
    _State.level = logging.getLevelNamesMapping()[level.upper()]
    _State.console = (
        structlog.dev.ConsoleRenderer(colors=sink.isatty(), timestamp_key="ts", sort_keys=False)
        if fmt == "console"
        else None
    )
    _use_readdod_chain()
    return sink


@contextlib.contextmanager
def redirected(level: str, stream: TextIO, *, fmt: str = "json") -> Iterator[None]:
    """Log to ``stream`` at ``level`` for a while, then as before (the sink kept open)."""
    global _sink
    saved = _sink, _State.level, _State.console
    flush()
    _sink = None  # so configure does not close the sink it replaces
    try:
        configure(level, stream, fmt=fmt)
        yield
    finally:
        flush()
        _sink, _State.level, _State.console = saved
        _use_readdod_chain()


def flush() -> None:
    """Write the lines held for the end of this turn of the loop now (before exiting)."""
    if _sink is not None:
        _sink.flush()


# A loop closed with a flush still scheduled would drop the lines of its last turn.
atexit.register(flush)


def current_file() -> str | None:
    return str(_sink.path) if _sink is not None and _sink.path is not None else None


def reopen() -> str | None:
    """Reopen the log file (after logrotate renamed it); the path, or None for stdout."""
    return _sink.reopen() if _sink is not None else None


def get_logger(name: str) -> Logger:
    return Logger({"logger_name": name})


#: Lines one library's logger may write per window; the rest are counted, not written.
LIBRARY_BURST = 5
LIBRARY_WINDOW_S = 60.0
#: A library's message is cut to this many characters (a driver may quote a whole query).
LIBRARY_MESSAGE_MAX = 2000


class LibraryHandler(logging.Handler):
    """The standard library's log records (psycopg, psycopg_pool, httpx, asyncio, warnings)
    as readdod's JSON lines, ``library.log``, at most :data:`LIBRARY_BURST` per logger per
    :data:`LIBRARY_WINDOW_S`: a pool retrying every second while its server is away
    says so a few times a minute, and the first line of the next window says how
    many were held back (``suppressed``). Never plain text in the JSON-lines log."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        #: logger name -> [window start, lines written in it, lines held back]
        self._windows: dict[str, list[float]] = {}
        self._guard = threading.Lock()

    def _admit(self, name: str) -> tuple[bool, int]:
        """Whether a line of ``name`` is written now, and how many it reports held back."""
        now = self._clock()
        with self._guard:
            window = self._windows.get(name)
            carried = 0
            if window is None or now - window[0] >= LIBRARY_WINDOW_S:
                carried = int(window[2]) if window is not None else 0
                window = self._windows[name] = [now, 0, 0]
            if window[1] >= LIBRARY_BURST:
                window[2] += 1
                return False, 0
            window[1] += 1
            return True, carried

    def emit(self, record: logging.LogRecord) -> None:
        try:
            admitted, held = self._admit(record.name)
            if not admitted:
                return
            fields: dict[str, Any] = {"message": record.getMessage()[:LIBRARY_MESSAGE_MAX]}
            if held:
                fields["suppressed"] = held
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                fields["error"] = f"{type(exc).__name__}: {exc}"[:LIBRARY_MESSAGE_MAX]
            line = Logger({"logger_name": record.name})
            if record.levelno >= logging.ERROR:
                line.error("library.log", **fields)
            elif record.levelno >= logging.WARNING:
                line.warning("library.log", **fields)
            elif record.levelno >= logging.INFO:
                line.info("library.log", **fields)
            else:
                line.debug("library.log", **fields)
        except Exception:
            self.handleError(record)


def capture_libraries(level: str = "info") -> LibraryHandler:
    """Send every library's standard-library logging (and ``warnings``) through
    :class:`LibraryHandler`: warnings and worse, everything at ``level = "debug"``."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, LibraryHandler):
            root.removeHandler(handler)
    handler = LibraryHandler()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if level.lower() == "debug" else logging.WARNING)
    logging.captureWarnings(True)
    return handler
