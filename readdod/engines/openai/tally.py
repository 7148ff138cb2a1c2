"""What one step's requests cost, recorded in its artifact's meta, or on its error when it
fails."""

from __future__ import annotations

from typing import TypeVar

from readdod.engines.base import EngineOutput
from readdod.errors import Spent, StepError

T = TypeVar("T")


class Tally:
    """Tokens, latency, requests and templates of one step, across its retries and repairs."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.prompt_tokens = 0
        self.completion_tokens = 0
        #: Prompt tokens the server took from its cache; None when it does not say.
        self.cached_tokens: int | None = None
        self.latency_ms = 0.0
        self.requests = 0
        self.templates: list[str] = []
        #: What :meth:`take` handed over already: (prompt, completion, cached) tokens.
        self._taken = (0, 0, 0)

    def output(self, payload: T) -> EngineOutput[T]:
        return EngineOutput(
            payload=payload,
            template_version="+".join(dict.fromkeys(self.templates)),
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_tokens=self.cached_tokens,
            latency_ms=round(self.latency_ms),
            attempts=self.requests,
        )

    def take(self) -> Spent | None:
        """The tokens spent since the last ``take`` (None: none), for a chunk's ledger."""
        now = (self.prompt_tokens, self.completion_tokens, self.cached_tokens or 0)
        prompt, completion, cached = (a - b for a, b in zip(now, self._taken, strict=True))
        self._taken = now
        if not (prompt or completion):
            return None
        return Spent(
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached if self.cached_tokens is not None else None,
        )

    def charge(self, error: StepError) -> None:
        """Put what the step spent on ``error``, so a failed step's tokens are counted too."""
        if self.prompt_tokens or self.completion_tokens:
            error.spent = Spent(
                model=self.model,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                cached_tokens=self.cached_tokens,
            )
