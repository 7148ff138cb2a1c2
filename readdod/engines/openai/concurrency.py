"""How many requests one model server takes at once, learned from how it answers.

Servers differ: Ollama queues what it cannot run, llama.cpp's ``llama-server``
has a fixed number of slots, vLLM batches, hosted APIs answer 429, and
llama-cpp-python's server cuts a running stream short when the next request
arrives (its ``interrupt_requests``, on by default). So readdod does not ask a
person which: every server and model gets an adaptive limit, additive
increase and multiplicative decrease (AIMD, as TCP's congestion window).

- A 429 or a 503 halves the limit (at least 1). A stream cut short lowers it
  to 1: a server that cuts a stream because another request came (the only
  server known to cut) runs one request at a time whatever the limit, so
  halving would only cost another round of cuts. Requests that were already
  out when the limit fell say nothing new about it, so one burst of cuts
  lowers it once (each lowering starts an *epoch*).
- Sustained success raises it by one, up to ``ai.concurrency``: after
  ``RAISE_AFTER`` successes per request the limit allows. A raise that is
  cut again makes the next raise wait twice as long (up to
  ``2**MAX_BACKOFF``), so a server that takes one request at a time is
  probed rarely, not every few requests.

:class:`Aimd` is the arithmetic (pure); :class:`AdaptiveSlots` holds the
requests in flight to it with an anyio :class:`~anyio.CapacityLimiter`,
whose total is moved as the limit moves.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final

import anyio

#: Successes per allowed request before the limit is raised by one.
RAISE_AFTER: Final = 8
#: The most times the wait for a raise doubles after raises that were cut again.
MAX_BACKOFF: Final = 5
#: Requests for at most this many tokens do not count towards a raise.
SHORT_ANSWER_TOKENS: Final = 16


@dataclass
class Aimd:
    """The limit of one server: pure state, moved by what its requests met."""

    ceiling: int
    limit: int
    #: Starts at 0 and grows with every lowering; a request remembers the epoch it went
    #: out in.
    epoch: int = 0
    successes: int = 0
    #: Raises that were followed by a lowering before the next raise.
    backoff: int = 0
    #: Whether the last move was a raise (so a lowering now says the raise was too much).
    raised: bool = False

    @classmethod
    def start(cls, ceiling: int, learned: int | None) -> Aimd:
        """A limit at what was learned before, else at the ceiling (``ai.concurrency``)."""
        limit = ceiling if learned is None else max(1, min(learned, ceiling))
        return cls(ceiling=ceiling, limit=limit)

    def lower(self, epoch: int, *, cut: bool = False) -> bool:
        """A request of ``epoch`` was told to slow down, or its stream was ``cut``; True if
        the limit fell."""
        if epoch < self.epoch:
            return False  # out before the last lowering: already accounted for
        self.epoch += 1
        self.successes = 0
        if self.raised:
            self.backoff = min(self.backoff + 1, MAX_BACKOFF)
        self.raised = False
        if self.limit == 1:
            return False
        self.limit = 1 if cut else max(1, self.limit // 2)
        return True

    def succeed(self) -> bool:
        """A request went through whole; True if the limit rose."""
        if self.limit >= self.ceiling:
            self.successes = 0
            return False
        self.successes += 1
        if self.successes < RAISE_AFTER * self.limit * 2**self.backoff:
            return False
        self.successes = 0
        self.limit += 1
        self.raised = True
        return True


@dataclass(frozen=True)
class Slot:
    """One request's place: the epoch it went out in."""

    epoch: int


class AdaptiveSlots:
    """Requests in flight to one server and model, at most :attr:`limit` at once.

    ``on_change(limit, why)`` is told of every move, so it can be logged and kept.
    """

    def __init__(
        self,
        ceiling: int,
        learned: int | None = None,
        on_change: Callable[[int, str], None] | None = None,
    ) -> None:
        self.aimd = Aimd.start(ceiling, learned)
        self._slots = anyio.CapacityLimiter(self.aimd.limit)
        self._on_change = on_change

    @property
    def limit(self) -> int:
        return self.aimd.limit

    @property
    def in_flight(self) -> int:
        return self._slots.borrowed_tokens

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Wait for room, then hold one place for the request."""
        holder = object()
        await self._slots.acquire_on_behalf_of(holder)
        try:
            yield Slot(self.aimd.epoch)
        finally:
            self._slots.release_on_behalf_of(holder)

    def lower(self, slot: Slot, why: str, *, cut: bool = False) -> None:
        """The request in ``slot`` was told to slow down (``why``: 429, 503) or ``cut``."""
        if self.aimd.lower(slot.epoch, cut=cut):
            self._moved(why)

    def succeed(self, max_tokens: int) -> None:
        """A request for ``max_tokens`` went through whole."""
        if max_tokens <= SHORT_ANSWER_TOKENS:
            return
        if self.aimd.succeed():
            self._moved("sustained success")

    def _moved(self, why: str) -> None:
        # Lowering takes effect for requests not yet out; those in flight finish.
        self._slots.total_tokens = self.aimd.limit
        if self._on_change is not None:
            self._on_change(self.aimd.limit, why)
