"""Who is in the fleet: the daemon registry's rows as `health` and `stats` show them (pure)."""

from __future__ import annotations

from typing import Final

import msgspec

from readdod.runtime.clock import iso
from readdod.store.rows import DaemonRow

#: Missed heartbeats after which a daemon counts as gone (it beats every lease TTL / 3).
SILENT_BEATS: Final = 3


class FleetMember(msgspec.Struct, kw_only=True):
    """One daemon as ``health`` and ``stats`` report it."""

    daemon_id: str
    host: str
    pid: int
    version: str
    started_at: str
    heartbeat_at: str
    #: Seconds since its last heartbeat.
    silent_s: float
    #: It beat within the last few intervals; a daemon killed without a clean stop is
    #: listed, not alive, until the fleet forgets it.
    alive: bool
    paused: bool
    in_flight: int
    #: The daemon that answered this request.
    this: bool = False


def members(
    rows: list[DaemonRow], *, now_ms: int, beat_ms: int, me: str | None
) -> list[FleetMember]:
    out = []
    for r in rows:
        silent = max(0, now_ms - r.heartbeat_at)
        out.append(
            FleetMember(
                daemon_id=r.daemon_id,
                host=r.host,
                pid=r.pid,
                version=r.version,
                started_at=iso(r.started_at) or "",
                heartbeat_at=iso(r.heartbeat_at) or "",
                silent_s=round(silent / 1000, 3),
                alive=silent <= SILENT_BEATS * beat_ms,
                paused=r.paused,
                in_flight=r.in_flight,
                this=r.daemon_id == me,
            )
        )
    return out
