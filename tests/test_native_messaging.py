"""The native-messaging framing and the host's answers, without a browser: frames in
memory, and the host against a socket nobody serves."""

from __future__ import annotations

import io
import struct
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readdod.capture import native_messaging as nm
from readdod.capture.browser_host import BrowserHost


class Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes per read, as a pipe may."""

    def __init__(self, data: bytes, step: int = 1) -> None:
        self._data = data
        self._pos = 0
        self._step = step

    def read(self, n: int = -1, /) -> bytes:
        n = self._step if n < 0 else min(n, self._step)
        out = self._data[self._pos : self._pos + n]
        self._pos += len(out)
        return out


def frame(body: bytes) -> bytes:
    return struct.pack("=I", len(body)) + body


def frames(data: bytes) -> list[Any]:
    """Every framed message in ``data`` (the whole of it must be frames)."""
    reader = nm.FrameReader(io.BytesIO(data), 1 << 30)
    out = []
    while (body := reader.next_frame()) is not None:
        out.append(msgspec.json.decode(body))
    return out


def test_the_length_is_32_bits_in_the_machines_byte_order() -> None:
    data = nm.encode({"a": 1})
    body = b'{"a":1}'
    assert data[4:] == body
    assert data[:4] == len(body).to_bytes(4, sys.byteorder)


@pytest.mark.parametrize("step", [1, 3, 4096])
def test_messages_are_read_whole_however_the_stream_splits_them(step: int) -> None:
    sent = [{"method": "list", "id": i, "params": {"query": "é" * i}} for i in range(5)]
    reader = nm.FrameReader(Trickle(b"".join(nm.encode(m) for m in sent), step), 10_000)
    got = []
    while (body := reader.next_frame()) is not None:
        got.append(msgspec.json.decode(body))
    assert got == sent


def test_an_oversized_message_is_skipped_and_the_next_one_is_read() -> None:
    big = frame(b'"' + b"x" * 200_000 + b'"')
    reader = nm.FrameReader(Trickle(big + frame(b"{}"), 10_000), 1000)
    with pytest.raises(nm.FrameTooLarge) as caught:
        reader.next_frame()
    assert (caught.value.length, caught.value.limit) == (200_002, 1000)
    assert reader.next_frame() == b"{}"
    assert reader.next_frame() is None


def test_a_message_at_the_limit_passes() -> None:
    body = b'"' + b"y" * 998 + b'"'
    assert nm.FrameReader(io.BytesIO(frame(body)), 1000).next_frame() == body


@pytest.mark.parametrize(
    ("data", "got", "wanted"),
    [
        (b"\x05\x00", 2, 4),  # half a header
        (frame(b'{"method": "list"}')[:-3], 15, 18),  # half a body
        (frame(b"x" * 5000)[:2000], 1996, 5000),  # half a body too big to read
    ],
)
def test_a_stream_cut_inside_a_message_is_truncated(data: bytes, got: int, wanted: int) -> None:
    limit = 100 if wanted == 5000 else 1000
    with pytest.raises(nm.FrameTruncated) as caught:
        nm.FrameReader(Trickle(data, 7), limit).next_frame()
    assert (caught.value.got, caught.value.wanted) == (got, wanted)


def test_a_request_is_method_params_and_id() -> None:
    req = nm.parse_request(b'{"method": "get", "params": {"id": "x"}, "id": "a1"}')
    assert req == nm.HostRequest(method="get", params={"id": "x"}, id="a1")
    assert nm.parse_request(b'{"method": "list"}') == nm.HostRequest("list", {}, None)


def test_a_lone_surrogate_from_a_broken_page_becomes_a_replacement_character() -> None:
    body = rb'{"method": "capture", "id": 1, "params": {"intent": "x\udc00", "html": "a\ud800b"}}'
    req = nm.parse_request(body)
    assert req.params == {"intent": "x\ufffd", "html": "a\ufffdb"}
    # A pair is one character, as msgspec reads it.
    assert nm.parse_request(rb'{"method": "list", "params": {"query": "\ud83c\udf0a"}}').params == {
        "query": "\U0001f30a"
    }


@pytest.mark.parametrize(
    ("body", "code", "req_id", "says"),
    [
        (b"{not json", nm.PARSE_ERROR, None, "not JSON"),
        (b"\xff\xfe", nm.PARSE_ERROR, None, "not JSON"),
        (b"[1, 2]", nm.INVALID_REQUEST, None, "must be a JSON object"),
        (b'"capture"', nm.INVALID_REQUEST, None, "must be a JSON object"),
        (b'{"method": "get", "id": true}', nm.INVALID_REQUEST, None, "id must be"),
        (b'{"method": "get", "id": {"a": 1}}', nm.INVALID_REQUEST, None, "id must be"),
        (b'{"id": 3}', nm.INVALID_REQUEST, 3, "method must be a string"),
        (b'{"method": "archive", "id": 4}', nm.METHOD_NOT_FOUND, 4, "capture, get, list"),
        (b'{"method": "get", "params": [1], "id": 5}', nm.INVALID_REQUEST, 5, "params must"),
        (b'{"method": "get", "jsonrpc": "2.0", "id": 6}', nm.INVALID_REQUEST, 6, "'jsonrpc'"),
        (b"[" * 100_000, nm.PARSE_ERROR, None, "not JSON"),
        (b'{"method": "list", "params": {"query": "\xff"}}', nm.PARSE_ERROR, None, "not JSON"),
    ],
)
def test_a_bad_message_gets_an_error_answer(body: bytes, code: int, req_id: Any, says: str) -> None:
    with pytest.raises(nm.BadRequest) as caught:
        nm.parse_request(body)
    answer = caught.value.answer
    assert answer["id"] == req_id
    assert answer["error"]["code"] == code
    assert says in answer["error"]["message"]
    assert answer["error"]["data"] == {"error_code": "VALIDATION_ERROR", "retryable": False}


def test_an_answer_too_big_for_a_browser_becomes_an_error_with_its_id() -> None:
    small = {"id": 7, "result": {"items": []}}
    assert frames(nm.bounded(small)) == [small]
    huge = {"id": 7, "result": {"text": "z" * nm.TO_BROWSER_MAX}}
    (answer,) = frames(nm.bounded(huge))
    assert answer["id"] == 7
    assert answer["error"]["data"]["error_code"] == "PAYLOAD_TOO_LARGE"
    assert str(nm.TO_BROWSER_MAX) in answer["error"]["message"]
    # Exactly at the limit is still sent.
    pad = nm.TO_BROWSER_MAX - len(msgspec.json.encode({"id": 7, "result": ""}))
    at_limit = {"id": 7, "result": "z" * pad}
    assert frames(nm.bounded(at_limit)) == [at_limit]


def test_the_host_answers_every_message_in_order_when_no_daemon_runs(tmp_path: Path) -> None:
    stream = b"".join(
        [
            frame(b'{"method": "list", "id": 1}'),
            frame(b"nope"),
            frame(b"x" * 5000),
            frame(b'{"method": "capture", "id": "c", "params": {"intent": "read"}}'),
        ]
    )
    out = io.BytesIO()
    host = BrowserHost(tmp_path / "absent.sock", max_message=1000)
    assert host.serve(io.BytesIO(stream), out) == 0
    answers = frames(out.getvalue())
    assert [a["id"] for a in answers] == [1, None, None, "c"]
    codes = [a["error"]["data"]["error_code"] for a in answers]
    unavailable = "DAEMON_UNAVAILABLE"
    assert codes == [unavailable, "VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", unavailable]
    assert answers[0]["error"]["data"]["retryable"] is True
    assert "readdod serve" in answers[0]["error"]["message"]


def test_the_host_stops_at_a_cut_stream_after_saying_why(tmp_path: Path) -> None:
    out = io.BytesIO()
    host = BrowserHost(tmp_path / "absent.sock", max_message=1000)
    assert host.serve(io.BytesIO(frame(b"{}")[:-1]), out) == 1
    (answer,) = frames(out.getvalue())
    assert answer["error"]["code"] == nm.PARSE_ERROR
    assert "ended inside a message (1 of 2 bytes)" in answer["error"]["message"]


def test_the_host_stops_quietly_when_the_browser_stops_reading(tmp_path: Path) -> None:
    class Gone(io.BytesIO):
        def write(self, data: Any, /) -> int:
            raise BrokenPipeError

    host = BrowserHost(tmp_path / "absent.sock", max_message=1000)
    two = frame(b'{"method": "list"}') * 2
    assert host.serve(io.BytesIO(two), Gone()) == 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        json_values.map(lambda v: msgspec.json.encode(v)),
        st.fixed_dictionaries(
            {"method": st.sampled_from(["capture", "get", "list", "x"]) | st.integers()},
            optional={"params": json_values, "id": json_values},
        ).map(lambda v: msgspec.json.encode(v)),
    )
)
def test_any_message_is_a_request_or_a_bad_request(body: bytes) -> None:
    try:
        req = nm.parse_request(body)
    except nm.BadRequest as exc:
        assert exc.answer["error"]["data"]["error_code"] == "VALIDATION_ERROR"
        return
    assert req.method in nm.METHODS and isinstance(req.params, dict)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_byte_stream_gets_only_frames_back(stream: bytes) -> None:
    out = io.BytesIO()
    host = BrowserHost(Path("/nonexistent/readdod.sock"), max_message=64)
    assert host.serve(io.BytesIO(stream), out) in (0, 1)
    reader = nm.FrameReader(io.BytesIO(out.getvalue()), nm.TO_BROWSER_MAX)
    while (body := reader.next_frame()) is not None:
        answer = msgspec.json.decode(body)
        assert set(answer) in ({"id", "error"}, {"id", "result"})
