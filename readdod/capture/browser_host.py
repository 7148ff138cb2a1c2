"""`readdod browser-host`: a browser's native-messaging host, forwarding to the daemon.

The browser starts this process when an extension connects and talks to it
over stdin and stdout (:mod:`readdod.capture.native_messaging`); no TCP port
is opened. Each request goes to the daemon's Unix socket on a connection of
its own, so a daemon restarted meanwhile is simply found again. Whatever goes
wrong with one message is answered as an error and the host reads on; only a
stream cut inside a message ends it. Nothing but framed answers is written to
stdout: logs go to stderr (the browser's log) or a file.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from readdod.capture import native_messaging as nm
from readdod.control.client import Client, RpcError
from readdod.errors import ConfigError, DaemonUnavailable, ErrorCode
from readdod.runtime.logging import get_logger

log = get_logger("readdod.browser_host")

#: How long one request may wait for the daemon's answer.
CALL_TIMEOUT_S = 60.0


class BrowserHost:
    """Serves one browser connection: frames in, the daemon's answers out."""

    def __init__(
        self,
        socket: Path,
        *,
        max_message: int,
        timeout_s: float = CALL_TIMEOUT_S,
        config_error: str | None = None,
    ) -> None:
        self.socket = socket
        self.max_message = max_message
        self.timeout_s = timeout_s
        #: Why the config could not be read: every request is answered with it, so the
        #: person sees it in the extension rather than a host that died unheard.
        self.config_error = config_error

    def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """Answer every message until the browser closes the stream; the exit code."""
        reader = nm.FrameReader(stdin, self.max_message)
        log.info("browser_host.started", socket=str(self.socket), max_message=self.max_message)
        while True:
            try:
                frame = reader.next_frame()
            except nm.FrameTooLarge as exc:
                log.warning("browser_host.too_large", bytes=exc.length, limit=exc.limit)
                answer = nm.error_answer(
                    None,
                    nm.TOO_LARGE,
                    f"a message of {exc.length} bytes was skipped; the host takes at most"
                    f" {exc.limit} (a page of fetch.max_bytes, as a capture carries it)",
                    ErrorCode.PAYLOAD_TOO_LARGE,
                    status=nm.TOO_LARGE,
                )
                if not self._write(stdout, nm.bounded(answer)):
                    return 0
                continue
            except nm.FrameTruncated as exc:
                log.warning("browser_host.truncated", got=exc.got, wanted=exc.wanted)
                answer = nm.error_answer(
                    None,
                    nm.PARSE_ERROR,
                    f"the stream ended inside a message ({exc.got} of {exc.wanted} bytes);"
                    " nothing more can be read",
                    ErrorCode.VALIDATION_ERROR,
                )
                self._write(stdout, nm.bounded(answer))
                return 1
            if frame is None:
                log.info("browser_host.closed")
                return 0
            if not self._write(stdout, nm.bounded(self.answer(frame))):
                return 0

    def answer(self, frame: bytes) -> dict[str, Any]:
        """The answer to one message, never an exception."""
        try:
            req = nm.parse_request(frame)
        except nm.BadRequest as exc:
            log.warning("browser_host.bad_request", message=str(exc))
            return exc.answer
        except Exception as exc:
            # A message no rule foresaw must cost its answer, never the host.
            log.exception("browser_host.internal_error", bytes=len(frame))
            return nm.error_answer(
                None,
                500,
                f"the browser host failed on a message: {type(exc).__name__}: {exc}",
                ErrorCode.INTERNAL_ERROR,
                status=500,
            )
        started = time.monotonic()
        try:
            if self.config_error is not None:
                raise ConfigError(self.config_error)
            answer = nm.result_answer(req.id, self._call(req))
        except RpcError as exc:
            data = {"error_code": exc.error_code, **exc.data}
            answer = {
                "id": req.id,
                "error": {"code": exc.rpc_code, "message": exc.message, "data": data},
            }
        except ConfigError as exc:
            answer = nm.error_answer(
                req.id,
                500,
                f"readdod's config is broken, so the browser host cannot work: {exc.message};"
                " fix it (`readdod config` shows the problem)",
                ErrorCode.CONFIG_INVALID,
                status=500,
            )
        except DaemonUnavailable as exc:
            answer = nm.error_answer(
                req.id, nm.UNAVAILABLE, exc.message, ErrorCode(exc.error_code), status=503
            )
        except (OSError, msgspec.DecodeError) as exc:
            # A timeout, a reset, an unreadable answer: the daemon could not be heard.
            answer = nm.error_answer(
                req.id,
                nm.UNAVAILABLE,
                f"no answer from the daemon on {self.socket}: {str(exc) or type(exc).__name__}",
                ErrorCode.DAEMON_UNAVAILABLE,
                status=503,
            )
        except Exception as exc:
            log.exception("browser_host.internal_error", method=req.method)
            answer = nm.error_answer(
                req.id,
                500,
                f"the browser host failed: {type(exc).__name__}: {exc}",
                ErrorCode.INTERNAL_ERROR,
                status=500,
            )
        error = answer.get("error")
        log.info(
            "browser_host.request",
            method=req.method,
            id=req.id,
            bytes=len(frame),
            duration_ms=round((time.monotonic() - started) * 1000, 1),
            error_code=error["data"]["error_code"] if error else None,
        )
        return answer

    def _call(self, req: nm.HostRequest) -> Any:
        with Client(self.socket, timeout_s=self.timeout_s) as client:
            return client.call(req.method, req.params)

    @staticmethod
    def _write(stdout: BinaryIO, data: bytes) -> bool:
        """Write one answer; False when the browser is gone."""
        try:
            stdout.write(data)
            stdout.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            log.info("browser_host.browser_gone")
            return False
        return True
