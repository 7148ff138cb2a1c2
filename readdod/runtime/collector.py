"""The daemon's garbage-collector settings.

Items in flight keep their actors' coroutines, futures and step results
alive for as long as a step waits (a model call: seconds). With CPython's
default thresholds (700, 10, 10) those objects live through two young
collections, land in the oldest generation, and make a full collection
due every few seconds; each one walks every live object. With 10,000 items
in flight that was a quarter of the daemon's time (38 full collections of
260 ms each in a 50 s ``bench.concurrency`` run).

Larger thresholds let a step's objects die young, freed by reference
counting before any collection sees them; a collection of the oldest
generation stays possible, just rare (at most one per 100 of the middle
one, and only once a quarter of it is new). ``gc.freeze()`` moves what the
daemon made before it started serving (modules, classes, configuration)
out of every later collection. Cycles are still found: young ones at the
next young collection, older ones at the next full one.
"""

from __future__ import annotations

import gc
from typing import Final

import msgspec

#: Allocations between young collections, young collections per middle one,
#: middle collections per full one (CPython's defaults: 700, 10, 10).
THRESHOLDS: Final = (50_000, 50, 100)


class Collector(msgspec.Struct, kw_only=True):
    """What ``stats`` shows of the collector: its settings and the work it did."""

    thresholds: list[int]
    #: Collections so far of each generation, youngest first.
    collections: list[int]
    #: Objects left out of every collection (frozen at start).
    frozen: int


def tune() -> None:
    """Set the daemon's thresholds; call once, when the process is set up (modules
    imported, configuration read) and before the daemon starts."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


def counters() -> Collector:
    return Collector(
        thresholds=list(gc.get_threshold()),
        collections=[gen["collections"] for gen in gc.get_stats()],
        frozen=gc.get_freeze_count(),
    )
