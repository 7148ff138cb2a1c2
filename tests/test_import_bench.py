"""The small mode of ``python -m bench.import`` (which imports 100,000 entries): every entry
captured, a second run adds nothing, and the import client stays under 200 MiB."""

from __future__ import annotations

import importlib
from collections.abc import Callable

#: ``import`` is a keyword: the bench module is reached by name.
bench_import = importlib.import_module("bench.import")


def test_the_import_bench_in_small(record_property: Callable[[str, object], None]) -> None:
    figures = bench_import.run(2_000, baseline=False)
    for key, value in figures.items():
        record_property(key, value)
    assert figures["entries"] == 2_000
    assert figures["peak_rss_mib"] < 200
