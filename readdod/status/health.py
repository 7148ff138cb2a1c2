"""Health (Cecelia §7): a few metrics, each judged against two limits.

:func:`evaluate` is pure: the core's read model gathers the metrics on one
snapshot and this module says ``ok``, ``degraded`` or ``unhealthy``, with a
reason a person can act on for every check that is not ok.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from readdod.items.models import Feed
from readdod.runtime.collector import Collector
from readdod.settings.config import DaemonConfig
from readdod.status.roster import FleetMember
from readdod.store.rows import StoreCounters

Level = Literal["ok", "degraded", "unhealthy"]
_RANK: Final[dict[str, int]] = {"ok": 0, "degraded": 1, "unhealthy": 2}
WINDOW_MS: Final = 24 * 3600 * 1000


class Thresholds(msgspec.Struct, frozen=True, kw_only=True):
    success_rate_degraded: float = 0.95
    success_rate_unhealthy: float = 0.80
    min_runs: int = 5
    avg_run_s_degraded: float = 300.0
    avg_run_s_unhealthy: float = 900.0
    backlog_degraded: int = 10
    backlog_unhealthy: int = 50
    oldest_queued_s_degraded: float = 3600.0
    oldest_queued_s_unhealthy: float = 21600.0
    failed_items_degraded: int = 3
    failed_items_unhealthy: int = 10
    failures_24h_degraded: int = 5
    failures_24h_unhealthy: int = 20


def thresholds_from(daemon: DaemonConfig) -> Thresholds:
    """The ``daemon.health_*`` keys as :class:`Thresholds`."""
    return Thresholds(
        **{
            name: getattr(daemon, f"health_{name}")
            for name in Thresholds.__struct_fields__
            if hasattr(daemon, f"health_{name}")
        }
    )


class Metrics(msgspec.Struct, kw_only=True):
    runs_finished_24h: int
    runs_succeeded_24h: int
    success_rate_24h: float | None
    avg_run_s_24h: float | None
    backlog: int
    oldest_queued_s: float | None
    failed_items: int
    failures_24h: int
    circuit: str
    paused: bool


class Check(msgspec.Struct, kw_only=True, omit_defaults=True):
    status: Level
    value: float | int | str | bool | None
    reason: str | None = None


class Report(msgspec.Struct, kw_only=True):
    status: Level
    reasons: list[str]
    checks: dict[str, Check]
    metrics: Metrics
    #: The daemon that answered, and every daemon that shares its store.
    daemon: str | None = None
    fleet: list[FleetMember] = []


def _upward(
    value: float, degraded: float, unhealthy: float, what: str, unit: str = ""
) -> tuple[Level, str | None]:
    """Worse as it grows: degraded from ``degraded``, unhealthy past ``unhealthy``."""
    shown = f"{value:g}{unit}"
    if value > unhealthy:
        return "unhealthy", f"{what} is {shown}, above the unhealthy limit {unhealthy:g}{unit}"
    if value >= degraded:
        return "degraded", f"{what} is {shown}, at or above {degraded:g}{unit}"
    return "ok", None


def _few_runs(finished: int, succeeded: int, t: Thresholds) -> tuple[Level, str | None]:
    """The success rate of fewer than ``t.min_runs`` runs, as a quiet daemon has them.

    Too few to judge a percentage by (one failure of two is 50 %), yet not
    nothing: every one of them failing is unhealthy whatever their number,
    some failing is degraded, and the reason names the counts.
    """
    failed = finished - succeeded
    few = f"fewer than {t.min_runs}, too few to judge the rate by"
    if succeeded == 0:
        return (
            "unhealthy",
            f"all {finished} runs in 24 h failed (0 of {finished} succeeded; {few}, but none"
            " succeeded); `readdod ls --status FAILED_AI` shows why",
        )
    if failed > 0:
        return (
            "degraded",
            f"{failed} of {finished} runs in 24 h failed ({succeeded} of {finished} succeeded;"
            f" {few})",
        )
    return "ok", None


def evaluate(m: Metrics, t: Thresholds) -> Report:
    checks: dict[str, Check] = {}

    def put(
        name: str, value: float | int | str | bool | None, verdict: tuple[Level, str | None]
    ) -> None:
        checks[name] = Check(status=verdict[0], value=value, reason=verdict[1])

    rate = m.success_rate_24h
    if rate is None:
        put("success_rate_24h", rate, ("ok", None))
    elif m.runs_finished_24h < t.min_runs:
        put("success_rate_24h", rate, _few_runs(m.runs_finished_24h, m.runs_succeeded_24h, t))
    else:
        pct = f"{m.runs_succeeded_24h} of {m.runs_finished_24h} runs in 24 h succeeded ({rate:.0%}"
        if rate < t.success_rate_unhealthy:
            put(
                "success_rate_24h",
                rate,
                (
                    "unhealthy",
                    f"{pct}, below {t.success_rate_unhealthy:.0%});"
                    " `readdod ls --status FAILED_AI` shows why",
                ),
            )
        elif rate <= t.success_rate_degraded:
            put(
                "success_rate_24h",
                rate,
                ("degraded", f"{pct}, at most {t.success_rate_degraded:.0%})"),
            )
        else:
            put("success_rate_24h", rate, ("ok", None))
    avg = m.avg_run_s_24h
    put(
        "avg_run_s_24h",
        avg,
        _upward(avg, t.avg_run_s_degraded, t.avg_run_s_unhealthy, "the average run", " s")
        if avg is not None
        else ("ok", None),
    )
    put(
        "backlog",
        m.backlog,
        _upward(m.backlog, t.backlog_degraded, t.backlog_unhealthy, "the queue (QUEUED items)"),
    )
    oldest = m.oldest_queued_s
    put(
        "oldest_queued_s",
        oldest,
        _upward(
            oldest,
            t.oldest_queued_s_degraded,
            t.oldest_queued_s_unhealthy,
            "the oldest queued item's wait",
            " s",
        )
        if oldest is not None
        else ("ok", None),
    )
    put(
        "failed_items",
        m.failed_items,
        _upward(
            m.failed_items,
            t.failed_items_degraded,
            t.failed_items_unhealthy,
            "the number of failed items",
        ),
    )
    put(
        "failures_24h",
        m.failures_24h,
        _upward(
            m.failures_24h,
            t.failures_24h_degraded,
            t.failures_24h_unhealthy,
            "failures in the last 24 h",
        ),
    )
    if m.circuit == "open":
        circuit: tuple[Level, str | None] = (
            "unhealthy",
            "the AI provider's circuit is open: it keeps failing, so AI steps wait",
        )
    elif m.circuit == "half_open":
        circuit = ("degraded", "the AI provider's circuit is half open: probing whether it is back")
    else:
        circuit = ("ok", None)
    put("ai_circuit", m.circuit, circuit)
    put(
        "paused",
        m.paused,
        ("degraded", "the daemon is paused: nothing is processed until `readdod resume`")
        if m.paused
        else ("ok", None),
    )
    worst: Level = "ok"
    for check in checks.values():
        if _RANK[check.status] > _RANK[worst]:
            worst = check.status
    reasons = [c.reason for c in checks.values() if c.reason is not None]
    return Report(status=worst, reasons=reasons, checks=checks, metrics=m)


class StepTimes(msgspec.Struct, kw_only=True):
    count: int
    p50_ms: float
    p95_ms: float


class Tokens(msgspec.Struct, kw_only=True):
    prompt: int
    completion: int
    total: int


class TodoCounts(msgspec.Struct, kw_only=True):
    """Todos a person ticked done that an item still shows, and on how many items."""

    done: int = 0
    items: int = 0


class Stats(msgspec.Struct, kw_only=True):
    items_by_status: dict[str, int]
    items_total: int
    runs_by_outcome: dict[str, int]
    step_durations_ms: dict[str, StepTimes]
    #: Every execution of a run, by how it ended (or queued/running).
    attempts_by_outcome: dict[str, int] = {}
    tokens: Tokens
    #: The store's work since the daemon started; None outside a daemon.
    store: StoreCounters | None = None
    #: The garbage collector's settings and collections so far.
    collector: Collector | None = None
    todos: TodoCounts = msgspec.field(default_factory=TodoCounts)
    #: The daemon that answered, and every daemon that shares its store.
    daemon: str | None = None
    fleet: list[FleetMember] = []


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``, which must not be empty."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1]


def step_times(samples: list[tuple[str, float]]) -> dict[str, StepTimes]:
    by_step: dict[str, list[float]] = {}
    for step, ms in samples:
        by_step.setdefault(step, []).append(ms)
    return {
        step: StepTimes(
            count=len(v), p50_ms=round(percentile(v, 0.5), 2), p95_ms=round(percentile(v, 0.95), 2)
        )
        for step, v in sorted(by_step.items())
    }


def fleet_check(report: Report, fleet: Sequence[FleetMember]) -> Report:
    """``report`` with the fleet listed and a ``fleet`` check: degraded while a daemon
    that shares the store has gone silent without a clean stop (killed, frozen, cut off
    from the database), naming each; its leases run out and the others take its items.
    It clears when that daemon starts again or the others forget it."""
    silent = [m for m in fleet if not m.alive]
    reasons = [
        f"daemon {m.daemon_id} ({m.host}, pid {m.pid}) has been silent for {m.silent_s:g} s"
        f" with {m.in_flight} items in flight: it stopped without a clean stop or lost the"
        " database; the other daemons take its items as their leases run out"
        for m in silent
    ]
    return msgspec.structs.replace(
        _with_degraded(report, "silent_daemons", reasons), fleet=list(fleet)
    )


def feeds_check(report: Report, failing: Sequence[Feed], threshold: int) -> Report:
    """``report`` with a ``feeds`` check: degraded while a feed has failed ``threshold``
    polls in a row or more, naming each and why."""
    reasons = [
        f"the feed {f.url} failed its last {f.failures} polls ({f.last_error_code}:"
        f" {f.last_error}); it is polled again at {f.next_poll_at} (`readdod feed ls`)"
        for f in failing
    ]
    return _with_degraded(report, "failing_feeds", reasons)


def _with_degraded(report: Report, name: str, reasons: list[str]) -> Report:
    """``report`` with one more check, degraded by each of ``reasons`` (ok without any)."""
    check = Check(
        status="degraded" if reasons else "ok",
        value=len(reasons),
        reason="; ".join(reasons) if reasons else None,
    )
    status = report.status if _RANK[report.status] >= _RANK[check.status] else check.status
    return msgspec.structs.replace(
        report,
        status=status,
        reasons=[*report.reasons, *reasons],
        checks={**report.checks, name: check},
    )
