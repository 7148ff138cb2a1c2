"""What the control socket may cost the daemon, measured on the real daemon's RSS.

A line is judged by its first bytes while it is read: only a capture that names
its method first may grow past MAX_LINE (1 MiB), and at most BIG_LINES of those
are buffered at once across every connection. So N connections hold at most
N x (MAX_LINE + one read) of other lines, plus BIG_LINES captures.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from readdod.control import protocol as p
from readdod.control.server import BIG_LINES
from tests.daemon_proc import DaemonProc

MIB = 1 << 20


def _peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc")


def test_long_lines_on_many_connections_cost_a_bounded_amount(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    max_bytes = 2 * MIB
    big = p.capture_line_limit(max_bytes)  # 13 MiB: what a capture's line may take
    d = DaemonProc(tmp_path, fetch={"max_bytes": max_bytes}, control={"read_timeout_s": 600.0})
    daemons.append(d)
    d.start()
    assert d.proc is not None
    assert d.call("ping")["version"]
    before = _peak_rss(d.proc.pid)

    # 8 connections each begin a ping of 12 MiB, 8 more a capture of 12 MiB; none ends it.
    body = b" " * (12 * MIB)
    openings = [b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'] * 8 + [
        b'{"jsonrpc":"2.0","id":1,"method":"capture","params":{"text":"'
    ] * 8
    conns = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in openings]
    done = [threading.Event() for _ in openings]
    captures_taken = threading.Semaphore(0)

    def send(i: int) -> None:
        try:
            conns[i].sendall(openings[i] + body)
        except OSError:
            pass
        done[i].set()
        if i >= 8:
            captures_taken.release()

    try:
        for c in conns:
            c.connect(str(d.sock))
        threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(16)]
        for t in threads:
            t.start()
        # Every ping's bytes were taken (read and dropped), and BIG_LINES captures' too;
        # the other captures wait, unread, for room.
        for ev in done[:8]:
            assert ev.wait(300)
        for _ in range(BIG_LINES):
            assert captures_taken.acquire(timeout=300)
        grown = _peak_rss(d.proc.pid) - before
        bound = 16 * (p.MAX_LINE + 64 * 1024) * 2 + BIG_LINES * 2 * big + 32 * MIB
        print(
            f"\n16 connections, 8 x 12 MiB pings + 8 x 12 MiB captures begun: peak RSS grew"
            f" {grown / MIB:.1f} MiB (bound {bound / MIB:.0f} MiB)"
        )
        assert grown < bound, grown / MIB
        assert grown < 16 * 12 * MIB
    finally:
        for c in conns:
            c.close()
    assert d.call("ping")["version"]  # and it serves on
    assert d.stop() == 0


def test_a_long_line_that_is_no_capture_is_refused_after_one_mib(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    """Read and dropped as it comes: the answer says 1 MiB, the limit that applied."""
    d = DaemonProc(tmp_path, fetch={"max_bytes": 2 * MIB})
    daemons.append(d)
    d.start()
    with d.client() as c:
        c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 3 * MIB)
        c.send_raw(b'"}}\n')
        err = c.read_raw()
        assert b"PAYLOAD_TOO_LARGE" in err and str(p.MAX_LINE).encode() in err
        assert c.call("ping")["version"]
    assert d.stop() == 0
