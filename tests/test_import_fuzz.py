"""Property-based fuzzing of every import reader and the plan (Hypothesis): whatever the
bytes, a reader yields entries, problems and skips only (never an exception), every entry
read is accounted for, and the plan keeps every capture within the daemon's bounds."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readdod.capture.formats import READERS, Entry, Problem, Skipped, jsonscan
from readdod.capture.plan import Options, Planned, census, plan
from readdod.items.models import CaptureRequest

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4)
    ),
    max_leaves=20,
)
#: Field names the readers look at, so generated objects reach their branches.
FIELDS = [
    "url",
    "href",
    "uri",
    "title",
    "name",
    "tags",
    "labels",
    "note",
    "description",
    "extended",
    "content",
    "created_at",
    "createdAt",
    "savedAt",
    "time",
    "created",
    "date_added",
    "state",
    "is_archived",
    "is_starred",
    "is_read",
    "is_fav",
    "archived",
    "favourited",
    "archive",
    "favorite",
    "article__url",
    "article__title",
    "slug",
    "type",
    "children",
    "annotations",
    "roots",
    "collections",
    "links",
    "bookmarks",
    "dateAdded",
    "pinnedBy",
    "toread",
]
entry_objects = st.dictionaries(
    st.sampled_from(FIELDS),
    json_values | st.just("https://example.org/x") | st.just("Archived"),
    max_size=8,
)


def _check(fmt: str, src: str) -> None:
    got = list(READERS[fmt](src))
    assert all(isinstance(g, Entry | Problem | Skipped) for g in got)
    opts = Options(fmt=fmt, intent="fuzz")
    counted = census(iter(got), opts)
    assert counted.entries == len(got)
    for p in plan(iter(got), opts, counted):
        if isinstance(p, Planned):
            # Every planned capture is one the daemon's request type accepts as is.
            import msgspec

            msgspec.convert(p.params, CaptureRequest)


@FUZZ
@given(st.text(max_size=400), st.sampled_from(sorted(READERS)))
def test_any_text_in_any_format(text: str, fmt: str) -> None:
    _check(fmt, text)


@FUZZ
@given(st.lists(entry_objects, max_size=6), st.sampled_from(sorted(READERS)))
def test_json_shaped_like_the_exports(objs: list[dict[str, Any]], fmt: str) -> None:
    _check(fmt, json.dumps(objs))
    _check(fmt, json.dumps({"bookmarks": objs, "collections": [{"name": "c", "links": objs}]}))
    _check(fmt, json.dumps({"roots": {"bookmark_bar": {"children": objs}}}))
    # A file cut anywhere still reads.
    whole = json.dumps(objs)
    _check(fmt, whole[: len(whole) // 2])


@FUZZ
@given(
    st.lists(st.lists(st.text(max_size=20), min_size=1, max_size=8), max_size=8),
    st.sampled_from(["pocket", "instapaper", "readwise"]),
    st.booleans(),
)
def test_csv_rows(rows: list[list[str]], fmt: str, break_a_quote: bool) -> None:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["title", "url", "time_added", "tags", "status", "folder", "location"])
    w.writerows(rows)
    text = out.getvalue()
    if break_a_quote:
        text = text.replace(",", ',"', 1)
    _check(fmt, text)


@FUZZ
@given(st.lists(json_values, max_size=10), st.integers(min_value=1, max_value=64))
def test_jsonscan_reads_every_entry_of_a_list_whatever_the_chunk(
    values: list[Any], chunk: int
) -> None:
    text = json.dumps(values, indent=1)
    got = list(jsonscan.entries(io.StringIO(text), chunk=chunk))
    assert [g[1] for g in got if isinstance(g, tuple)] == values
    assert not [g for g in got if isinstance(g, Problem)]


@pytest.mark.parametrize("values", [[1e16], [0.0], [-0.5, 1.5e-7], [12345678901234567890, 7]])
@pytest.mark.parametrize("chunk", [1, 2, 3, 5])
def test_jsonscan_reads_a_number_the_window_cut_in_its_fraction_or_exponent(
    values: list[Any], chunk: int
) -> None:
    """A window ending in '1e' or '0.' holds a number's beginning, not a number and junk."""
    got = list(jsonscan.entries(io.StringIO(json.dumps(values, indent=1)), chunk=chunk))
    assert got == [(2 + i, v) for i, v in enumerate(values)]


@FUZZ
@given(st.text(alphabet="<>/=\"' adhlptrfHREF3DLAT", max_size=300))
def test_bookmark_html_of_tag_soup(text: str) -> None:
    _check("netscape", "<!DOCTYPE NETSCAPE-Bookmark-file-1>" + text)
