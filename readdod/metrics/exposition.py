"""One daemon's metrics as OpenMetrics text, through prometheus_client.

Each daemon has its own :class:`~prometheus_client.registry.CollectorRegistry`
(never the process-global one, so two daemons in one process, as in tests,
stay apart) holding one custom collector. The collector reads the daemon's
own counters (:class:`~readdod.metrics.meter.Meter`, the engine's model usage,
the supervisor's state) as they are and the store's gauges from a sample
taken just before: the store is read asynchronously, a collector is not.

Every sample carries a ``daemon`` label (the daemon's worker id), so one
Prometheus sees a fleet of daemons apart. The item gauges describe the shared
store as this daemon sees it: aggregate them across daemons with ``max``,
not ``sum``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, Literal, NamedTuple, Protocol

from prometheus_client import exposition as text_format
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.registry import Collector, CollectorRegistry

from readdod import __version__
from readdod.engines.base import ModelUsage
from readdod.items.states import Status
from readdod.metrics.meter import Meter
from readdod.steps import wire_step

Format = Literal["openmetrics", "prometheus"]
#: The circuit states an engine reports (``Engine.circuit_state``).
CIRCUIT_STATES: Final = ("closed", "open", "half_open")


class QueueSample(NamedTuple):
    """The store's side of the metrics, read on one snapshot."""

    by_status: dict[str, int]
    oldest_queued_s: float | None


class WorkerState(Protocol):
    """What the supervisor tells of itself."""

    owner: str
    paused: bool

    @property
    def in_flight(self) -> int: ...


class EngineState(Protocol):
    def circuit_state(self) -> str: ...

    def model_usage(self) -> ModelUsage: ...


class NoticeCounts(Protocol):
    """The fleet's relay (only on a store several daemons share)."""

    sent: int
    heard: int
    dropped: int


class DaemonCollector(Collector):
    """The metric families of one daemon, built anew at every scrape."""

    def __init__(self, meter: Meter, workers: WorkerState, engine: EngineState) -> None:
        self.meter = meter
        self.workers = workers
        self.engine = engine
        self.host = socket.gethostname()
        self.pid = os.getpid()
        #: The store's gauges, set by :meth:`Metrics.render` right before collecting.
        self.sample = QueueSample({}, None)
        #: Set by the daemon when it shares its store with others.
        self.relay: NoticeCounts | None = None

    def collect(self) -> Iterable[Metric]:
        d = self.workers.owner
        meter = self.meter
        info = InfoMetricFamily("readdod_daemon", "This daemon: where it runs, which version.")
        info.add_metric(
            [], {"daemon": d, "host": self.host, "pid": str(self.pid), "version": __version__}
        )
        yield info

        items = GaugeMetricFamily(
            "readdod_items", "Items in the store by status.", labels=["daemon", "status"]
        )
        for status in Status:
            items.add_metric([d, status.value], self.sample.by_status.get(status.value, 0))
        yield items
        yield _gauge(
            "readdod_oldest_queued_age_seconds",
            "How long the oldest QUEUED item has waited; 0 when none waits.",
            d,
            self.sample.oldest_queued_s or 0.0,
        )
        yield _gauge(
            "readdod_in_flight", "Items this daemon is processing now.", d, self.workers.in_flight
        )
        yield _gauge(
            "readdod_paused",
            "1 while this daemon claims nothing (paused).",
            d,
            int(self.workers.paused),
        )

        yield _counter("readdod_claims", "Items this daemon leased to itself.", d, meter.claims)
        yield _counter(
            "readdod_lease_renewals",
            "Leases this daemon's heartbeats renewed.",
            d,
            meter.lease_renewals,
        )
        yield _counter(
            "readdod_lease_losses",
            "Leases a heartbeat found gone (expired and claimed again); their actors stop.",
            d,
            meter.lease_losses,
        )
        yield _counter(
            "readdod_fenced_writes_refused",
            "Writes refused because their lease was no longer held (fencing).",
            d,
            meter.fenced_writes,
        )

        steps = HistogramMetricFamily(
            "readdod_step_duration_seconds",
            "Time a finished step took, by step.",
            labels=["daemon", "step"],
        )
        for step, hist in sorted(meter.steps.items()):
            buckets = [(_bound(b), float(n)) for b, n in hist.cumulative()]
            steps.add_metric([d, _step_name(step)], buckets, sum_value=hist.total)
        yield steps

        usage = self.engine.model_usage()
        yield _counter(
            "readdod_model_requests", "Requests sent to the model server.", d, usage.requests
        )
        tokens = CounterMetricFamily(
            "readdod_model_tokens", "Tokens the model server counted.", labels=["daemon", "kind"]
        )
        tokens.add_metric([d, "prompt"], usage.prompt_tokens)
        tokens.add_metric([d, "completion"], usage.completion_tokens)
        yield tokens
        errors = CounterMetricFamily(
            "readdod_model_errors",
            "Model requests that failed, by error code.",
            labels=["daemon", "error_code"],
        )
        for code, n in sorted(usage.errors.items()):
            errors.add_metric([d, code], n)
        yield errors

        circuit = GaugeMetricFamily(
            "readdod_circuit_state",
            "The model server's circuit: 1 for the state it is in.",
            labels=["daemon", "state"],
        )
        now = self.engine.circuit_state()
        for state in CIRCUIT_STATES:
            circuit.add_metric([d, state], int(state == now))
        yield circuit

        if self.relay is not None:
            notices = CounterMetricFamily(
                "readdod_fleet_notices",
                "Notices to and from the other daemons of the fleet; dropped: commits whose"
                " notes were never sent (the outbox was full).",
                labels=["daemon", "direction"],
            )
            for direction in ("sent", "heard", "dropped"):
                notices.add_metric([d, direction], getattr(self.relay, direction))
            yield notices


def _gauge(name: str, doc: str, daemon: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=["daemon"])
    family.add_metric([daemon], value)
    return family


def _counter(name: str, doc: str, daemon: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=["daemon"])
    family.add_metric([daemon], value)
    return family


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def _step_name(step: str) -> str:
    try:
        return wire_step(step)
    except KeyError:
        return step


class Metrics:
    """One daemon's registry and how to render it."""

    def __init__(
        self,
        collector: DaemonCollector,
        sample: Callable[[], Awaitable[tuple[dict[str, int], float | None]]],
    ) -> None:
        self.collector = collector
        self._sample = sample
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)

    async def render(self, fmt: Format = "openmetrics") -> tuple[str, bytes]:
        """(content type, exposition text) with the store's gauges read now."""
        # No await between the sample and the collection: no other scrape can interleave.
        self.collector.sample = QueueSample(*await self._sample())
        if fmt == "openmetrics":
            text = openmetrics.generate_latest(self.registry)  # type: ignore[no-untyped-call]  # untyped in the library
            return openmetrics.CONTENT_TYPE_LATEST, text
        return text_format.CONTENT_TYPE_LATEST, text_format.generate_latest(self.registry)

    async def negotiate(self, accept: str) -> tuple[str, bytes]:
        """What an HTTP scraper asked for (its Accept header): OpenMetrics or the text format."""
        wants: Format = "openmetrics" if "application/openmetrics-text" in accept else "prometheus"
        return await self.render(wants)
