"""One error tree for readdod, with stable codes.

::

    ReaddodError                      error_code, message for people
    ├── RequestError                  answered to a client; has an HTTP-like status
    │   ├── NotFound                    404 NOT_FOUND
    │   ├── InvalidTransition           409 INVALID_TRANSITION / PROCESSING_IN_PROGRESS
    │   ├── ValidationFailed            422 VALIDATION_ERROR
    │   ├── IdempotencyConflict         409 IDEMPOTENCY_CONFLICT
    │   ├── PayloadTooLarge             413 PAYLOAD_TOO_LARGE
    │   ├── UnsupportedContent          415 UNSUPPORTED_CONTENT (binary data handed in as a page)
    │   ├── Forbidden                   403 FORBIDDEN
    │   ├── ShuttingDown                503 SHUTTING_DOWN
    │   ├── StoreBusy                   503 STORE_BUSY (another process holds the database)
    │   ├── StoreWriteFailed            503 STORE_WRITE_FAILED (disk full, file size limit)
    │   ├── BackupUnsupported           501 BACKUP_UNSUPPORTED (use the database's own tool)
    │   ├── InternalError               500 INTERNAL_ERROR
    │   └── ExportFailed                500 EXPORT_RENDER_FAILED / EXPORT_WRITE_FAILED
    ├── StepError                     a pipeline step failed; becomes items.failure
    │   ├── ExtractionError             EXTRACTION_*  -> FAILED_EXTRACTION
    │   ├── AIError                     AI_*, RUN_INCONSISTENT -> FAILED_AI
    │   ├── WorkerLost                  WORKER_LOST
    │   └── ExportError                 EXPORT_* -> FAILED_EXPORT (a SHIPPED item stays)
    ├── ConfigError                   a bad config file or value
    │   └── StoreAuthFailed             STORE_AUTH_FAILED: the database refused the login
    ├── InstanceLocked                another daemon owns the database
    └── DaemonUnavailable             (client side) no daemon answers on the socket
        └── UnsafeSocket                SOCKET_UNSAFE: a socket directory or daemon not to trust

Failure kinds come from these types, never from matching message text.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


class ErrorCode(enum.StrEnum):
    # requests
    NOT_FOUND = "NOT_FOUND"
    INVALID_TRANSITION = "INVALID_TRANSITION"
    PROCESSING_IN_PROGRESS = "PROCESSING_IN_PROGRESS"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    UNSUPPORTED_CONTENT = "UNSUPPORTED_CONTENT"
    FORBIDDEN = "FORBIDDEN"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    TOO_MANY_CONNECTIONS = "TOO_MANY_CONNECTIONS"
    # extraction
    EXTRACTION_FETCH_FAILED = "EXTRACTION_FETCH_FAILED"
    EXTRACTION_PARSE_FAILED = "EXTRACTION_PARSE_FAILED"
    EXTRACTION_EMPTY = "EXTRACTION_EMPTY"
    EXTRACTION_TOO_LARGE = "EXTRACTION_TOO_LARGE"
    EXTRACTION_UNSUPPORTED_TYPE = "EXTRACTION_UNSUPPORTED_TYPE"
    EXTRACTION_BLOCKED_ADDRESS = "EXTRACTION_BLOCKED_ADDRESS"
    EXTRACTION_BLOCKED_BY_SITE = "EXTRACTION_BLOCKED_BY_SITE"
    # AI steps
    AI_TIMEOUT = "AI_TIMEOUT"
    AI_SCHEMA_INVALID = "AI_SCHEMA_INVALID"
    AI_PARSE_ERROR = "AI_PARSE_ERROR"
    AI_RATE_LIMITED = "AI_RATE_LIMITED"
    AI_PROVIDER_ERROR = "AI_PROVIDER_ERROR"
    AI_INPUT_EMPTY = "AI_INPUT_EMPTY"
    AI_INPUT_TOO_SHORT = "AI_INPUT_TOO_SHORT"
    AI_REFUSED = "AI_REFUSED"
    RUN_INCONSISTENT = "RUN_INCONSISTENT"
    # export
    EXPORT_RENDER_FAILED = "EXPORT_RENDER_FAILED"
    EXPORT_WRITE_FAILED = "EXPORT_WRITE_FAILED"
    # runtime
    WORKER_LOST = "WORKER_LOST"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    CONFIG_INVALID = "CONFIG_INVALID"
    INSTANCE_LOCKED = "INSTANCE_LOCKED"
    STORE_BUSY = "STORE_BUSY"
    STORE_WRITE_FAILED = "STORE_WRITE_FAILED"
    BACKUP_UNSUPPORTED = "BACKUP_UNSUPPORTED"
    STORE_AUTH_FAILED = "STORE_AUTH_FAILED"
    DAEMON_UNAVAILABLE = "DAEMON_UNAVAILABLE"
    SOCKET_UNSAFE = "SOCKET_UNSAFE"


#: Whether trying the same thing again can succeed, decided once per code: the
#: ``retryable`` of an item's failure (seed 000 §6.1, see :func:`is_retryable`)
#: and of an error answer. True for what passes or is fixed outside the item
#: (timeouts, a lost worker, a model's answer that a new run may get right, a
#: busy store, an export, whose retry is exporting again); False where the
#: same input fails the same way (an address readdod will not fetch, a page
#: too large, of a type it cannot read or without text, a model that refuses,
#: a request that is wrong as sent). None where one code covers both and the
#: error itself says which (:attr:`StepError.retryable`): a fetch that the
#: network broke off or that got a 404, a provider's 503 or its refusal of
#: the API key, a rate limit or an account out of quota.
#:
#: It says what a person or a client may do; it queues nothing. Retries across
#: runs (:mod:`readdod.core.retry_policy`) follow the error's own flag and need a
#: failure class with a rule, which WORKER_LOST and EXPORT_* do not have: a
#: worker lost again and again is a crash loop, and an export is retried by
#: the next export.
RETRYABLE: Final[Mapping[ErrorCode, bool | None]] = {
    # requests
    ErrorCode.NOT_FOUND: False,
    ErrorCode.INVALID_TRANSITION: False,
    ErrorCode.PROCESSING_IN_PROGRESS: True,
    ErrorCode.VALIDATION_ERROR: False,
    ErrorCode.IDEMPOTENCY_CONFLICT: False,
    ErrorCode.PAYLOAD_TOO_LARGE: False,
    ErrorCode.FORBIDDEN: False,
    ErrorCode.SHUTTING_DOWN: True,
    ErrorCode.TOO_MANY_CONNECTIONS: True,
    ErrorCode.UNSUPPORTED_CONTENT: False,
    # extraction
    ErrorCode.EXTRACTION_FETCH_FAILED: None,
    ErrorCode.EXTRACTION_PARSE_FAILED: False,
    ErrorCode.EXTRACTION_EMPTY: False,
    ErrorCode.EXTRACTION_TOO_LARGE: False,
    ErrorCode.EXTRACTION_UNSUPPORTED_TYPE: False,
    ErrorCode.EXTRACTION_BLOCKED_ADDRESS: False,
    ErrorCode.EXTRACTION_BLOCKED_BY_SITE: False,
    # AI steps
    ErrorCode.AI_TIMEOUT: True,
    ErrorCode.AI_SCHEMA_INVALID: True,
    ErrorCode.AI_PARSE_ERROR: True,
    ErrorCode.AI_RATE_LIMITED: None,
    ErrorCode.AI_PROVIDER_ERROR: None,
    ErrorCode.AI_INPUT_EMPTY: False,
    ErrorCode.AI_INPUT_TOO_SHORT: False,
    ErrorCode.AI_REFUSED: False,
    ErrorCode.RUN_INCONSISTENT: True,
    # export
    ErrorCode.EXPORT_RENDER_FAILED: True,
    ErrorCode.EXPORT_WRITE_FAILED: True,
    # runtime
    ErrorCode.WORKER_LOST: True,
    ErrorCode.INTERNAL_ERROR: True,
    ErrorCode.CONFIG_INVALID: False,
    ErrorCode.INSTANCE_LOCKED: False,
    ErrorCode.STORE_BUSY: True,
    ErrorCode.STORE_WRITE_FAILED: True,
    ErrorCode.BACKUP_UNSUPPORTED: False,
    ErrorCode.STORE_AUTH_FAILED: False,
    ErrorCode.DAEMON_UNAVAILABLE: True,
    ErrorCode.SOCKET_UNSAFE: False,
}


def is_retryable(code: ErrorCode, said: bool) -> bool:
    """A failure's ``retryable``: the decision for ``code``, else what the error ``said``."""
    decided = RETRYABLE[code]
    return said if decided is None else decided


class ReaddodError(Exception):
    """Root of every error readdod raises on purpose."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    @property
    def error_code(self) -> str:
        return self.code.value


# --- errors answered to clients -------------------------------------------


class RequestError(ReaddodError):
    http_status: int = 400

    def data(self) -> dict[str, Any]:
        return {
            "error_code": self.error_code,
            "status": self.http_status,
            "retryable": is_retryable(self.code, False),
        }


class NotFound(RequestError):
    code = ErrorCode.NOT_FOUND
    http_status = 404


class InvalidTransition(RequestError):
    code = ErrorCode.INVALID_TRANSITION
    http_status = 409

    def __init__(self, message: str, *, src: str, dst: str, code: ErrorCode | None = None) -> None:
        super().__init__(message, code=code)
        self.src = src
        self.dst = dst

    def data(self) -> dict[str, Any]:
        return {**super().data(), "from": self.src, "to": self.dst}


class ValidationFailed(RequestError):
    code = ErrorCode.VALIDATION_ERROR
    http_status = 422


class IdempotencyConflict(RequestError):
    code = ErrorCode.IDEMPOTENCY_CONFLICT
    http_status = 409


class PayloadTooLarge(RequestError):
    code = ErrorCode.PAYLOAD_TOO_LARGE
    http_status = 413


class UnsupportedContent(RequestError):
    """Content handed in as HTML or text is binary (an executable, an image, an archive)."""

    code = ErrorCode.UNSUPPORTED_CONTENT
    http_status = 415


class SourceRefused(RequestError):
    """A source to follow (``feed add``) could not be fetched or read when it was added;
    the code is the fetch's or the reading's (``EXTRACTION_*``), the message says why."""

    code = ErrorCode.EXTRACTION_FETCH_FAILED
    http_status = 422


class Forbidden(RequestError):
    code = ErrorCode.FORBIDDEN
    http_status = 403


class ShuttingDown(RequestError):
    code = ErrorCode.SHUTTING_DOWN
    http_status = 503


class StoreBusy(RequestError):
    code = ErrorCode.STORE_BUSY
    http_status = 503


class StoreWriteFailed(RequestError):
    """The database files cannot grow or be written (disk full, ``ulimit -f``, I/O error)."""

    code = ErrorCode.STORE_WRITE_FAILED
    http_status = 503


class BackupUnsupported(RequestError):
    """The store cannot copy itself here; the message names the tool that can (pg_dump)."""

    code = ErrorCode.BACKUP_UNSUPPORTED
    http_status = 501


class InternalError(RequestError):
    code = ErrorCode.INTERNAL_ERROR
    http_status = 500


class IllegalTransition(InternalError):
    """readdod itself tried a move :data:`readdod.items.states.TRANSITIONS` forbids: a bug.

    A real exception, not an ``assert``: the table is enforced under ``python -O`` too.
    """


class ExportFailed(RequestError):
    """An export request failed; the item's new status and the path at fault go in ``data``."""

    code = ErrorCode.EXPORT_WRITE_FAILED
    http_status = 500

    def __init__(
        self, message: str, *, code: ErrorCode, item_status: str, path: str | None
    ) -> None:
        super().__init__(message, code=code)
        self.item_status = item_status
        self.path = path

    def data(self) -> dict[str, Any]:
        return {**super().data(), "item_status": self.item_status, "path": self.path}


# --- pipeline failures -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spent:
    """What a step's requests cost before it failed, as the model server reported it: an
    answer that was then rejected (a parse error, the gate) was still paid for."""

    model: str | None
    prompt_tokens: int
    completion_tokens: int
    #: Of the prompt tokens, those the server took from its prompt cache (where it says).
    cached_tokens: int | None = None


class StepError(ReaddodError):
    """A step failed. The core records it as ``items.failure``."""

    retryable: bool = False
    #: The tokens the step had spent when it failed; set by engines that call a model.
    spent: Spent | None = None

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        retryable: bool | None = None,
        debug: str | None = None,
        retry_after: float | None = None,
        timed_out: bool | None = None,
    ) -> None:
        super().__init__(message, code=code)
        if retryable is not None:
            self.retryable = retryable
        self.debug = debug
        #: Seconds the other side asked us to wait (HTTP ``Retry-After``).
        self.retry_after = retry_after
        #: The step ran out of time (the attempt ends as ``timeout``, not ``failed``).
        self.timed_out = self.code is ErrorCode.AI_TIMEOUT if timed_out is None else timed_out


class ExtractionError(StepError):
    code = ErrorCode.EXTRACTION_PARSE_FAILED


class AIError(StepError):
    code = ErrorCode.AI_PROVIDER_ERROR


class WorkerLost(StepError):
    code = ErrorCode.WORKER_LOST


class ExportError(StepError):
    """Rendering or writing an export failed; ``path`` is the file or folder at fault."""

    code = ErrorCode.EXPORT_WRITE_FAILED

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        path: str | None = None,
        debug: str | None = None,
    ) -> None:
        super().__init__(message, code=code, retryable=False, debug=debug)
        self.path = path


# --- process-level errors --------------------------------------------------


class ConfigError(ReaddodError):
    code = ErrorCode.CONFIG_INVALID


class StoreAuthFailed(ConfigError):
    """The database refused the daemon's login (a wrong password, no such role, no
    pg_hba.conf rule): waiting cannot help, so the daemon stops at start and says so."""

    code = ErrorCode.STORE_AUTH_FAILED


class InstanceLocked(ReaddodError):
    code = ErrorCode.INSTANCE_LOCKED


class DaemonUnavailable(ReaddodError):
    code = ErrorCode.DAEMON_UNAVAILABLE


class UnsafeSocket(DaemonUnavailable):
    """The socket's directory may be another user's, or the daemon answering is: nothing is
    sent (a client) or bound (the daemon). The message names the path and the fix."""

    code = ErrorCode.SOCKET_UNSAFE
