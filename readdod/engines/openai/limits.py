"""``ai.rpm`` and ``ai.tpm``: requests and tokens per minute for one provider."""

from __future__ import annotations

import collections
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

#: Longest sleep of a request held back by ``ai.rpm``/``ai.tpm`` before it re-checks.
MAX_NAP_S: Final = 1.0


class RateLimiter:
    """Requests and tokens per minute for one provider, over a sliding minute."""

    def __init__(self, rpm: int, tpm: int) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self._window: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = anyio.Lock()

    def wait_s(self, now: float, tokens: int) -> float:
        """Seconds until ``tokens`` more may go out; 0 means now (and counts them)."""
        while self._window and self._window[0][0] <= now - 60:
            self._window.popleft()
        used = sum(t for _, t in self._window)
        rpm_ok = not self.rpm or len(self._window) < self.rpm
        tpm_ok = not self.tpm or not self._window or used + tokens <= self.tpm
        if rpm_ok and tpm_ok:
            self._window.append((now, tokens))
            return 0.0
        return max(self._window[0][0] + 60 - now, 0.01)

    def _full(self) -> str:
        """Which limit holds a request back, as the config names it."""
        return "ai.rpm" if self.rpm and len(self._window) >= self.rpm else "ai.tpm"

    async def acquire(
        self,
        tokens: int,
        *,
        on_wait: Callable[[str, float], Awaitable[None]] | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> bool:
        """Wait for room for ``tokens``; False, without counting them, once ``give_up()``."""
        if not self.rpm and not self.tpm:
            return True
        noted = False
        async with self._lock:
            while True:
                wait = self.wait_s(time.monotonic(), tokens)
                if not wait:
                    return True
                if not noted and on_wait is not None:
                    noted = True
                    await on_wait(self._full(), wait)
                if give_up is not None and give_up():
                    return False
                # In short naps, so a pause or a stop is seen within a second.
                await anyio.sleep(min(wait, MAX_NAP_S))
