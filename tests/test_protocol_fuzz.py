"""Protocol abuse against the real daemon: whatever a client writes on the socket,
the daemon stays up, answers what can be answered with a proper JSON-RPC error,
keeps serving other clients, and keeps its memory bounded.

Each case opens its own connection, writes, closes its writing side and reads
every line until the daemon closes; then a ping on a fresh connection must
work and the daemon's VmRSS must stay within :data:`RSS_SLACK_KB` of where it
started. ``READDOD_FUZZ_EXAMPLES`` sets the examples per hypothesis test (a
longer run: ``python -m bench.load --fuzz N``); the counts are printed at the
end of the module (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readdod.control import protocol as p
from readdod.items.models import CaptureRequest
from tests.daemon_proc import DaemonProc

EXAMPLES = int(os.environ.get("READDOD_FUZZ_EXAMPLES", "60"))
#: How much the daemon's resident memory may grow over the whole module.
RSS_SLACK_KB = 160 * 1024
MAX_CONNECTIONS = 64
IDLE_TIMEOUT_S = 2.0

#: Every method's params, as the daemon declares them.
PARAMS: dict[str, type[msgspec.Struct]] = {
    "capture": CaptureRequest,
    "process": p.ProcessParams,
    "get": p.GetParams,
    "list": p.ListParams,
    "artifact": p.ArtifactParams,
    "archive": p.ArchiveParams,
    "unarchive": p.UnarchiveParams,
    "ship": p.ItemRef,
    "export": p.ExportParams,
    "edit": p.EditParams,
    "retry_failed": p.RetryFailedParams,
    "pause": p.Empty,
    "resume": p.Empty,
    "ping": p.Empty,
    "backup": p.BackupParams,
    "watch": p.WatchParams,
    "health": p.Empty,
    "stats": p.Empty,
    "prune": p.PruneParams,
    "metrics": p.MetricsParams,
}
#: Fields that name a place on disk to write to: never fuzzed with a string.
DISK_PATHS = {("backup", "path"), ("export", "out_dir")}
#: Stands for the id of a real item; replaced before sending.
ITEM = "@item"
PROTOCOL_CODES = {p.PARSE_ERROR, p.INVALID_REQUEST, p.METHOD_NOT_FOUND, p.INVALID_PARAMS}

CASES: Counter[str] = Counter()
#: What the answers were: "result" or the error code.
OUTCOMES: Counter[str] = Counter()


class Fuzzed(msgspec.Struct):
    daemon: DaemonProc
    item_id: str
    baseline_kb: int


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


class PeakRss:
    """The highest VmRSS of a process while the block runs, sampled every few ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.kb = rss_kb(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.kb = max(self.kb, rss_kb(self.pid))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.kb = max(self.kb, rss_kb(self.pid))


@pytest.fixture(scope="module")
def fz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    d = DaemonProc(
        tmp_path_factory.mktemp("fuzz"),
        ai={"engine": "fixed"},
        control={
            "max_connections": MAX_CONNECTIONS,
            "send_timeout_s": 2.0,
            "idle_timeout_s": IDLE_TIMEOUT_S,
        },
    )
    try:
        d.start()
        item = d.call("capture", {"text": "Plain words about sockets. " * 40, "intent": "learn"})
        item_id = item["item"]["id"]
        d.wait_log(lambda e: e["event"] == "item.transition" and e.get("to") == "READY")
        assert d.proc is not None
        yield Fuzzed(daemon=d, item_id=item_id, baseline_kb=rss_kb(d.proc.pid))
        assert d.proc.poll() is None, d.stderr[-2000:]
        for event in ("control.internal_error", "control.connection_failed"):
            assert not [e for e in d.logs if e["event"] == event], event
        peak = rss_kb(d.proc.pid)
        assert d.stop() == 0
        total = sum(CASES.values())
        print(f"\nprotocol fuzz: {total} cases {dict(sorted(CASES.items()))}")
        print(f"answers: {dict(OUTCOMES.most_common())}; daemon rss_kb {peak}")
    finally:
        d.close()


# --- talking to the daemon ---------------------------------------------------


def exchange(
    d: DaemonProc, data: bytes, *, close_write: bool = True, timeout: float = 30
) -> list[Any]:
    """Write ``data`` (from a thread), then read every line until the daemon closes."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(d.sock))

    def write() -> None:
        try:
            s.sendall(data)
            if close_write:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the daemon may hang up on abuse; what it said is checked below

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    chunks = []
    try:
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    finally:
        writer.join(timeout)
        s.close()
    raw = b"".join(chunks)
    assert raw == b"" or raw.endswith(b"\n"), raw[-200:]
    return [json.loads(line) for line in raw.split(b"\n") if line]


def check_envelope(msg: Any) -> None:
    """One JSON-RPC 2.0 answer (or a batch of them); never an internal error."""
    if isinstance(msg, list):
        assert msg, "an empty batch answer"
        for one in msg:
            check_envelope(one)
        return
    assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", msg
    if "method" in msg:  # a watch notification
        assert msg["method"] == "event"
        return
    assert ("result" in msg) != ("error" in msg), msg
    assert "id" in msg
    OUTCOMES["result" if "result" in msg else str(msg["error"]["code"])] += 1
    if "error" in msg:
        err = msg["error"]
        assert isinstance(err["code"], int) and isinstance(err["message"], str), err
        assert err["message"]
        assert err["code"] != p.INTERNAL_ERROR, err
        if err["code"] not in PROTOCOL_CODES:
            assert 400 <= err["code"] < 600, err
            assert err["data"]["error_code"] and err["data"]["status"] == err["code"], err


def answers(msgs: list[Any]) -> list[Any]:
    """The answers among what the daemon sent (watch notifications dropped)."""
    return [m for m in msgs if not (isinstance(m, dict) and "method" in m)]


def one_answer_each(fz: Fuzzed, lines: list[str]) -> list[Any]:
    """Send each line alone; each must get exactly one well-formed answer."""
    got = []
    for text in lines:
        msgs = answers(exchange(fz.daemon, text.encode() + b"\n"))
        assert len(msgs) == 1, text[:80]
        check_envelope(msgs[0])
        got.append(msgs[0])
    return got


def assert_serving(fz: Fuzzed) -> None:
    d = fz.daemon
    assert d.proc is not None and d.proc.poll() is None, d.stderr[-2000:]
    assert d.call("ping")["pid"] == d.proc.pid
    grown = rss_kb(d.proc.pid) - fz.baseline_kb
    assert grown < RSS_SLACK_KB, f"the daemon grew by {grown} KiB"


def error_of(msg: Any) -> tuple[int, str | None]:
    err = msg["error"]
    return err["code"], (err.get("data") or {}).get("error_code")


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


# --- strategies ----------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 2, max_value=2**200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=16,
)
#: Values of the right shape for some field, so the fuzz also gets past validation.
plausible = st.sampled_from(
    [ITEM, "card", "summary", "score", "todos", "extraction", "markdown", "json", "P1",
     ["READY"], ["NOPE"], 1, 0, -1, 1000, 1001, True, "", "x" * 300]
)  # fmt: skip


def well_typed(t: mi.Type) -> st.SearchStrategy[Any]:
    """Values of the declared type (bounds ignored), so requests get past validation."""
    if isinstance(t, mi.StrType):
        return st.text(max_size=60) | plausible.filter(lambda v: isinstance(v, str))
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.IntType):
        return st.integers(min_value=-5, max_value=2000) | st.integers()
    if isinstance(t, mi.ListType):
        return st.lists(well_typed(t.item_type), max_size=4)
    if isinstance(t, mi.UnionType):
        return st.one_of([well_typed(u) for u in t.types])
    if isinstance(t, mi.NoneType):
        return st.none()
    return json_values | plausible


def field_values(method: str, field: mi.Field, typed: bool) -> st.SearchStrategy[Any]:
    values = well_typed(field.type) if typed else json_values | plausible
    if field.name == "id" and typed:
        values = st.just(ITEM) | values
    if (method, field.name) in DISK_PATHS:
        return values.filter(lambda v: not isinstance(v, str))
    return values


@st.composite
def params_for(draw: st.DrawFn, method: str) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(json_values)  # not even an object
    out: dict[str, Any] = {}
    info = mi.type_info(PARAMS[method])
    assert isinstance(info, mi.StructType)
    for f in info.fields:
        if f.required or draw(st.booleans()):
            out[f.name] = draw(field_values(method, f, typed=draw(st.integers(0, 4)) > 0))
    if draw(st.integers(0, 9)) == 0:
        out[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    return out


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    def rarely() -> bool:
        return draw(st.integers(0, 9)) == 0

    method = draw(st.text(max_size=12)) if rarely() else draw(st.sampled_from(sorted(PARAMS)))
    doc: dict[str, Any] = {
        "jsonrpc": draw(json_values) if rarely() else "2.0",
        "id": draw(json_values) if rarely() else draw(st.integers() | st.text(max_size=10)),
        "method": draw(json_values) if rarely() else method,
        "params": draw(params_for(method)) if method in PARAMS else draw(json_values),
    }
    for key in list(doc):
        if draw(st.integers(0, 11)) == 0:
            del doc[key]
    return doc


def substitute(value: Any, item_id: str) -> Any:
    if value == ITEM:
        return item_id
    if isinstance(value, dict):
        return {k: substitute(v, item_id) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, item_id) for v in value]
    return value


def expected_id(doc: Any) -> Any:
    raw = doc.get("id") if isinstance(doc, dict) else None
    return raw if isinstance(raw, int | str) and not isinstance(raw, bool) else None


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- fuzz ----------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=4096))
def test_random_bytes(fz: Fuzzed, data: bytes) -> None:
    CASES["random_bytes"] += 1
    msgs = exchange(fz.daemon, data)
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    assert len(answers(msgs)) <= len(lines)
    for msg in msgs:
        check_envelope(msg)
    assert_serving(fz)


@FUZZ
@given(doc=json_values)
def test_any_json_value(fz: Fuzzed, doc: Any) -> None:
    CASES["json_values"] += 1
    msgs = answers(exchange(fz.daemon, line(doc)))
    assert len(msgs) == answered(doc), msgs
    for msg in msgs:
        check_envelope(msg)
    assert_serving(fz)


@FUZZ
@given(docs=st.lists(envelopes(), min_size=1, max_size=4), batch=st.booleans())
def test_requests_with_wrong_types_everywhere(
    fz: Fuzzed, docs: list[dict[str, Any]], batch: bool
) -> None:
    CASES["envelopes"] += len(docs)
    docs = [substitute(doc, fz.item_id) for doc in docs]
    payload = line(docs) if batch else b"".join(line(doc) for doc in docs)
    msgs = answers(exchange(fz.daemon, payload))
    for msg in msgs:
        check_envelope(msg)
    assert len(msgs) == (answered(docs) if batch else sum(map(answered, docs)))
    replies = msgs[0] if batch and msgs else msgs
    wanted = [doc for doc in docs if not is_notification(doc)]
    # Each request is answered, in order, under its own id.
    assert [r["id"] for r in replies] == [expected_id(doc) for doc in wanted], (docs, replies)
    assert_serving(fz)


def is_notification(doc: Any) -> bool:
    """A well-formed request without an id: JSON-RPC 2.0 never answers it."""
    if not isinstance(doc, dict) or "id" in doc:
        return False
    try:
        return msgspec.convert(doc, p.Request).jsonrpc == "2.0"
    except msgspec.ValidationError:
        return False


def answered(doc: Any) -> bool:
    """Whether a line holding ``doc`` gets an answer line."""
    if isinstance(doc, list) and 0 < len(doc) <= p.MAX_BATCH:
        return not all(is_notification(d) for d in doc)
    return not is_notification(doc)


def test_notifications_get_no_answer_even_when_they_fail(fz: Fuzzed) -> None:
    """An error with a null id among pipelined answers could not be matched to anything."""
    docs = [
        {"jsonrpc": "2.0", "method": "capture", "params": {"text": "t", "intent": " "}},
        {"jsonrpc": "2.0", "method": "no_such_method"},
        {"jsonrpc": "2.0", "method": "get", "params": {"id": 5}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    CASES["notifications"] += len(docs) + 1
    (msg,) = exchange(fz.daemon, b"".join(line(doc) for doc in docs))
    assert msg["id"] == 3 and "result" in msg
    (batch,) = exchange(fz.daemon, line(docs))
    assert [m["id"] for m in batch] == [3]
    assert exchange(fz.daemon, line(docs[:3])) == []
    assert_serving(fz)


WRONG: list[Any] = [None, True, -1, 2**70, 1.5, "x", [], {}, [[[]]], {"a": {"b": None}}]


def test_every_field_of_every_method_with_every_wrong_type(fz: Fuzzed) -> None:
    known = error_of(
        answers(exchange(fz.daemon, line({"jsonrpc": "2.0", "id": 1, "method": "?"})))[0]
    )
    assert known[0] == p.METHOD_NOT_FOUND
    docs: list[dict[str, Any]] = []
    for method, params in PARAMS.items():
        docs.append({"jsonrpc": "2.0", "id": len(docs), "method": method, "params": [1]})
        docs.append({"jsonrpc": "2.0", "id": len(docs), "method": method, "params": "x"})
        for f in msgspec.structs.fields(params):
            for wrong in WRONG:
                if (method, f.name) in DISK_PATHS and isinstance(wrong, str):
                    continue
                base = (
                    {"id": fz.item_id}
                    if f.name != "id" and "id" in params.__struct_fields__
                    else {}
                )
                docs.append(
                    {"jsonrpc": "2.0", "id": len(docs), "method": method,
                     "params": {**base, f.name: wrong}}
                )  # fmt: skip
    CASES["wrong_types"] += len(docs)
    msgs = answers(exchange(fz.daemon, b"".join(line(doc) for doc in docs)))
    assert [m["id"] for m in msgs] == list(range(len(docs)))
    for msg in msgs:
        check_envelope(msg)
    # Non-objects as params are refused as invalid params for every method.
    by_id = {m["id"]: m for m in msgs}
    for doc in docs:
        if not isinstance(doc["params"], dict):
            assert error_of(by_id[doc["id"]])[0] == p.INVALID_PARAMS
    assert_serving(fz)


# --- nesting, numbers, line limit --------------------------------------------------


@pytest.mark.parametrize("depth", [10, 500, 900, 990, 1000, 5000, 200_000])
def test_deep_nesting(fz: Fuzzed, depth: int) -> None:
    deep_list = "[" * depth + "]" * depth
    deep_obj = '{"a":' * depth + "1" + "}" * depth
    lines = [
        deep_list,
        deep_obj,
        f'{{"jsonrpc":"2.0","id":{deep_list},"method":"ping"}}',
        f'{{"jsonrpc":"2.0","id":1,"method":"ping","params":{deep_obj}}}',
        f'{{"jsonrpc":"2.0","id":2,"method":"edit","params":'
        f'{{"id":"{fz.item_id}","type":"card","payload":{deep_obj}}}}}',
        f'{{"jsonrpc":"2.0","id":3,"method":"capture","params":'
        f'{{"text":"t","intent":"i","tags":{deep_list}}}}}',
    ]
    CASES["deep_nesting"] += len(lines)
    for msg in one_answer_each(fz, lines):
        assert "error" in msg or isinstance(msg, list)
    assert_serving(fz)


HUGE = ["1" + "0" * 400, "-" + "9" * 5000, "1e400", "-1e400", "1e-400", "1.7976931348623157e308"]


@pytest.mark.parametrize("number", HUGE)
def test_huge_numbers(fz: Fuzzed, number: str) -> None:
    item = fz.item_id
    lines = [
        number,
        f'{{"jsonrpc":"2.0","id":{number},"method":"ping"}}',
        f'{{"jsonrpc":"2.0","id":1,"method":"list","params":{{"limit":{number}}}}}',
        f'{{"jsonrpc":"2.0","id":2,"method":"artifact","params":'
        f'{{"id":"{item}","type":"card","version":{number}}}}}',
        f'{{"jsonrpc":"2.0","id":3,"method":"edit","params":'
        f'{{"id":"{item}","type":"score","payload":{{"match_score":{number}}}}}}}',
    ]
    CASES["huge_numbers"] += len(lines)
    one_answer_each(fz, lines)
    assert_serving(fz)


def test_the_line_limit(fz: Fuzzed) -> None:
    ping = b'{"jsonrpc":"2.0","id":7,"method":"ping"'
    exact = ping + b" " * (p.MAX_LINE - len(ping) - 1) + b"}"
    assert len(exact) == p.MAX_LINE
    over = exact + b" "
    ones = b"[" + b"1," * (p.MAX_LINE // 2 - 2) + b"1]"
    cases: dict[str, tuple[bytes, list[Any]]] = {
        "exactly the limit": (exact + b"\n", ["result"]),
        "one byte over": (over + b"\n" + ping + b"}\n", [413, "result"]),
        "over, then the client stops writing": (over, [413]),
        "3 MiB without a newline, then a ping": (b"[" * (3 << 20) + b"\n" + ping + b"}\n",
                                                 [413, "result"]),
        "a batch of 1 MiB of ones": (ones + b"\n", [p.INVALID_REQUEST]),
    }  # fmt: skip
    for name, (data, expected) in cases.items():
        CASES["line_limit"] += 1
        msgs = answers(exchange(fz.daemon, data))
        got = ["result" if "result" in m else m["error"]["code"] for m in msgs]
        assert got == expected, name
        for msg in msgs:
            check_envelope(msg)
            if "error" in msg and msg["error"]["code"] == 413:
                assert error_of(msg) == (413, "PAYLOAD_TOO_LARGE")
    assert_serving(fz)


def test_a_batch_longer_than_max_batch_is_refused_whole(fz: Fuzzed) -> None:
    ping = {"jsonrpc": "2.0", "method": "ping"}
    msgs = answers(exchange(fz.daemon, line([ping] * (p.MAX_BATCH + 1))))
    assert (
        error_of(msgs[0])[0] == p.INVALID_REQUEST
        and str(p.MAX_BATCH) in msgs[0]["error"]["message"]
    )
    pings = [{**ping, "id": i} for i in range(p.MAX_BATCH)]
    (batch,) = answers(exchange(fz.daemon, line(pings)))
    assert [a["id"] for a in batch] == list(range(p.MAX_BATCH))
    CASES["batches"] += 2
    assert_serving(fz)


# --- connections -----------------------------------------------------------------


@FUZZ
@given(cut=st.integers(min_value=1, max_value=200), how=st.sampled_from(["close", "reset"]))
def test_half_lines_then_disconnect(fz: Fuzzed, cut: int, how: str) -> None:
    CASES["half_lines"] += 1
    request = line({"jsonrpc": "2.0", "id": 1, "method": "capture",
                    "params": {"text": "half " * 40, "intent": "never finished"}})  # fmt: skip
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(fz.daemon.sock))
    s.sendall(request[: min(cut, len(request) - 2)])
    if how == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()
    assert_serving(fz)


def test_a_last_line_without_newline_is_answered(fz: Fuzzed) -> None:
    ping = b'{"jsonrpc":"2.0","id":5,"method":"ping"}'
    (msg,) = exchange(fz.daemon, ping)
    assert msg["id"] == 5 and msg["result"]["version"]
    (msg,) = exchange(fz.daemon, ping[:-3])
    assert error_of(msg)[0] == p.PARSE_ERROR
    CASES["half_lines"] += 2
    assert_serving(fz)


def test_clients_that_leave_with_answers_pending_do_not_stop_the_daemon(fz: Fuzzed) -> None:
    flood = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 2000
    for _ in range(20):
        CASES["leave_with_answers_pending"] += 1
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(fz.daemon.sock))
        s.sendall(flood)
        s.close()
    assert_serving(fz)
    assert fz.daemon.call("ping")


def test_thousands_of_connections_respect_the_cap(fz: Fuzzed) -> None:
    d = fz.daemon
    socks = []
    try:
        for _ in range(2000):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(str(d.sock))
            socks.append(s)
        for s in socks:
            try:
                s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            except OSError:
                pass  # refused and already closed
        outcome: Counter[str] = Counter()
        for s in socks:
            raw = s.makefile("rb").readline()
            msg = json.loads(raw)
            check_envelope(msg)
            outcome["served" if "result" in msg else error_of(msg)[1] or "?"] += 1
    finally:
        for s in socks:
            s.close()
    CASES["connections"] += len(socks)
    # Refused at once, or served and later closed as the idlest for a newer one: each
    # first line is an answer or TOO_MANY_CONNECTIONS, never a silent close.
    assert outcome["served"] + outcome["TOO_MANY_CONNECTIONS"] == len(socks), outcome
    assert outcome["served"] >= 1, outcome
    assert_serving(fz)


def test_a_client_that_never_reads_big_answers_is_dropped_not_buffered(fz: Fuzzed) -> None:
    """A batch of the biggest answers there are, never read: the daemon writes it
    out piece by piece, gives up on the client after send_timeout_s, and keeps
    neither the answer nor the client."""
    d = fz.daemon
    for first in range(0, 400, 100):
        batch = [
            {"jsonrpc": "2.0", "id": i, "method": "capture",
             "params": {"text": f"filler {i} " * 30, "intent": "fill the list", "title": "t" * 400}}
            for i in range(first, first + 100)
        ]  # fmt: skip
        assert all("result" in a for a in answers(exchange(d, line(batch)))[0])
    before = len([e for e in d.logs if e["event"] == "control.client_too_slow"])
    lists = [
        {"jsonrpc": "2.0", "id": i, "method": "list", "params": {"limit": 1000}}
        for i in range(2000)
    ]
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.connect(str(d.sock))
    assert d.proc is not None
    peak = PeakRss(d.proc.pid)
    try:
        with peak:
            stuck.sendall(line(lists))
            d.wait_log(
                lambda e: e["event"] == "control.client_too_slow", count=before + 1, timeout=60
            )
    finally:
        stuck.close()
    CASES["never_reads"] += 1
    grown = peak.kb - fz.baseline_kb
    assert grown < RSS_SLACK_KB, f"the daemon grew by {grown} KiB while the client did not read"
    assert_serving(fz)


def test_slow_writers(fz: Fuzzed) -> None:
    """A request that trickles in byte by byte is answered; one that takes longer
    than idle_timeout_s to finish its line is cut off; neither holds up others."""
    d = fz.daemon
    ping = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'
    with d.client() as slow:
        for byte in ping:
            slow.send_raw(bytes([byte]))
            assert d.call("ping")  # the others are served meanwhile
        assert json.loads(slow.read_raw())["id"] == 9
    closed_before = len([e for e in d.logs if e["event"] == "control.idle_closed"])
    with d.client() as loris:
        started = time.monotonic()
        try:
            for byte in ping[:-1]:
                loris.send_raw(bytes([byte]))
                time.sleep(IDLE_TIMEOUT_S / 8)  # pacing the writer is the case under test
        except OSError:
            pass  # cut off mid-line, as intended
        d.wait_log(lambda e: e["event"] == "control.idle_closed", count=closed_before + 1)
        assert time.monotonic() - started >= IDLE_TIMEOUT_S * 0.9
    CASES["slow_writers"] += 2
    assert_serving(fz)
