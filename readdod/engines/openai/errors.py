"""The openai library's exceptions as readdod's :class:`~readdod.errors.AIError` codes.

Pure. Each failed request gets a message that names the server and what to
change, a code, whether a retry may help, and a verdict for the circuit
breaker: only an unreachable server or a 5xx counts against it.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import openai

from readdod.engines.openai import formats
from readdod.errors import AIError, ErrorCode
from readdod.runtime import retrying
from readdod.settings.config import AIConfig

#: The client gives up this much before readdod's own deadline, so its error is the one seen.
CLIENT_TIMEOUT_RATIO: Final = 0.9

#: The most characters of a server's own error message that readdod's messages quote.
QUOTE_CHARS: Final = 300

#: ``down`` (counts against the circuit), ``answered`` (the server is up), ``neutral``
#: (a timeout says neither), ``fallback`` (the server named the response format: ask in
#: the next one), ``adapt`` (the server named a request parameter readdod can change),
#: ``context`` (the request does not fit the model's context) or ``foreign`` (not a
#: request failure: let it through).
Verdict = Literal["down", "answered", "neutral", "fallback", "adapt", "context", "foreign"]


class ContextExceeded(AIError):
    """The request does not fit the model's context; ``server_context``: its size, if said."""

    def __init__(self, message: str, server_context: int | None, debug: str | None) -> None:
        super().__init__(message, code=ErrorCode.AI_PROVIDER_ERROR, retryable=False, debug=debug)
        self.server_context = server_context


def quote(exc: openai.APIStatusError) -> str:
    """The server's own explanation of an error answer, shortened for a person."""
    text = formats.error_text(exc.body, fallback=str(exc.message or ""))
    if len(text) > QUOTE_CHARS:
        text = text[: QUOTE_CHARS - 1].rstrip() + "…"
    return f': "{text}"' if text else ""


class Down(Exception):
    """The server could not be reached or answered 5xx: counts against the circuit."""

    def __init__(self, error: AIError) -> None:
        super().__init__(error.message)
        self.error = error


def map_status(exc: openai.APIStatusError, where: str, api_key_env: str) -> AIError:
    """An HTTP error status the server answered with."""
    status = exc.status_code
    if status == 429:
        body = exc.body if isinstance(exc.body, dict) else {}
        if body.get("code") == "insufficient_quota":
            return AIError(
                f"the model server {where} says the account is out of quota;"
                " add credit or switch ai.base_url, then retry the item",
                code=ErrorCode.AI_RATE_LIMITED,
                retryable=False,
            )
        return AIError(
            f"the model server {where} is rate limiting readdod (HTTP 429);"
            " lower ai.rpm / ai.tpm / ai.concurrency if this keeps happening",
            code=ErrorCode.AI_RATE_LIMITED,
            retryable=True,
            retry_after=retrying.retry_after_s(exc.response.headers),
        )
    if status in (401, 403):
        return AIError(
            f"the model server {where} refused the API key (HTTP {status});"
            f" set ${api_key_env} or the systemd credential of that name",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=False,
        )
    if status == 404:
        return AIError(
            f"the model server {where} answered 404: the model or the endpoint does not"
            " exist there; check ai.model and ai.base_url (it usually ends in /v1)",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=False,
        )
    return AIError(
        f"the model server {where} answered HTTP {status}{quote(exc)}",
        code=ErrorCode.AI_PROVIDER_ERROR,
        retryable=status in (408, 409),
        debug=str(exc.body)[:1000] if exc.body is not None else None,
    )


def _about_request(exc: openai.APIStatusError) -> tuple[str, Verdict | None]:
    """What an error answer's own words say it is about: the format, the context, a
    parameter readdod can change, or none of those."""
    text = formats.error_text(exc.body, fallback=str(exc.message or ""))
    said = f"{text} {formats.error_code(exc.body)}"
    if exc.status_code in (400, 413, 422, 500) and formats.context_overflow(said):
        return text, "context"
    if exc.status_code in (400, 422) and re.search(
        r"max_completion_tokens|stream_options|logprobs", said, re.I
    ):
        return text, "adapt"
    if exc.status_code not in (401, 403, 404, 429) and formats.names_format(said):
        return text, "fallback"
    return text, None


def classify(
    exc: Exception, *, server: str, model: str, cfg: AIConfig, mode: str
) -> tuple[AIError | None, Verdict]:
    """Type a failed request to ``server``: (error, verdict); ``mode``: the response format
    the request asked for (one of :data:`formats.LADDER`)."""
    where = f"{server} (model {model})"
    if isinstance(exc, openai.APIStatusError):
        text, about = _about_request(exc)
        if about == "context":
            # llama-server gives its context as a field of the error: n_ctx.
            size = formats.context_size(text) or formats.context_size(str(exc.body))
            fits = f"at most {size}, the server's context" if size else "what the server has"
            return ContextExceeded(
                f"the text does not fit the context of the model at {where}{quote(exc)};"
                f" readdod splits texts to fit ai.context_tokens: set it to {fits}",
                size,
                str(exc.body)[:1000] if exc.body is not None else None,
            ), "context"
        if about == "adapt":
            # The error stands if readdod has nothing left to change.
            return map_status(exc, where, cfg.api_key_env), "adapt"
        if about == "fallback":
            if cfg.structured_output == "auto" and formats.next_format(mode) is not None:
                return None, "fallback"
            return AIError(
                f"the model server {where} does not take the response format {mode!r}"
                f'{quote(exc)}; set ai.structured_output to "auto" so readdod finds one'
                " it takes",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=False,
                debug=str(exc.body)[:1000] if exc.body is not None else None,
            ), "answered"
    if isinstance(exc, TimeoutError):
        return AIError(
            f"the model server {where} did not answer within {cfg.timeout_s:g} s (ai.timeout_s)",
            code=ErrorCode.AI_TIMEOUT,
            retryable=True,
        ), "neutral"
    if isinstance(exc, openai.APITimeoutError):
        if "Connect" in type(exc.__cause__).__name__:
            return AIError(
                f"cannot connect to the model server {where}: connection timed out",
                code=ErrorCode.AI_PROVIDER_ERROR,
                retryable=True,
            ), "down"
        return AIError(
            f"the model server {where} did not answer within"
            f" {cfg.timeout_s * CLIENT_TIMEOUT_RATIO:g} s (ai.timeout_s)",
            code=ErrorCode.AI_TIMEOUT,
            retryable=True,
        ), "neutral"
    if isinstance(exc, openai.APIConnectionError):
        return AIError(
            f"cannot connect to the model server {where}; is it running?",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=True,
            debug=repr(exc.__cause__ or exc),
        ), "down"
    if isinstance(exc, openai.InternalServerError):
        return AIError(
            f"the model server {where} failed (HTTP {exc.status_code}){quote(exc)}",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=True,
            debug=str(exc.body)[:1000] if exc.body is not None else None,
        ), "down"
    if isinstance(exc, openai.APIStatusError):
        return map_status(exc, where, cfg.api_key_env), "answered"
    if isinstance(exc, ValueError):
        # A 200 whose body is not JSON: a proxy's error page, or a base_url that is no API.
        return AIError(
            f"the model server {where} answered with something that is not a chat"
            " completion; check ai.base_url (it usually ends in /v1)",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=True,
            debug=str(exc)[:500],
        ), "answered"
    if isinstance(exc, openai.APIError):
        return AIError(
            f"the model server {where} sent an answer readdod cannot read ({exc})",
            code=ErrorCode.AI_PROVIDER_ERROR,
            retryable=False,
        ), "answered"
    return None, "foreign"
