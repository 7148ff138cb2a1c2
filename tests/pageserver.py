"""A real HTTP server on 127.0.0.1 whose every path is a small script.

Fetch tests need servers that misbehave on purpose: answer late, drip a body,
never stop, reset the connection, redirect in circles, lie about the content
type. Each path gets a function that writes the answer by hand, in its own
thread; the server counts hits per path so tests can prove that a blocked
request never arrived or that a retried one arrived again.
"""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import struct
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HTML = "text/html; charset=utf-8"


class Exchange:
    """One request, and the means to answer it well or badly."""

    def __init__(self, handler: _Handler, path: str) -> None:
        self._handler = handler
        self._counted_path: str | None = path
        self.path = handler.path
        self.headers = handler.headers
        self.stopping = handler.server.stopping

    def answered(self) -> None:
        """Stop counting this request as being answered (once; the handler's end calls it too).

        :meth:`send` calls it before writing an answer with a length: the client
        holds that answer complete the moment its last byte is written, so
        counting the request until the script returns would overlap with the
        client's next request.
        """
        path, self._counted_path = self._counted_path, None
        if path is None:
            return
        srv = self._handler.server
        with srv.cond:
            srv.active[path] -= 1
            srv.cond.notify_all()

    def head(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """The status line and headers; the body (if any) follows with :meth:`write`."""
        self._handler.send_response(status)
        for name, value in (headers or {}).items():
            self._handler.send_header(name, value)
        self._handler.end_headers()
        self._handler.wfile.flush()

    def write(self, data: bytes) -> bool:
        """Send body bytes; False once the client has gone away."""
        try:
            self._handler.wfile.write(data)
            self._handler.wfile.flush()
        except OSError:
            return False
        return True

    def send(
        self,
        body: bytes | str = b"",
        *,
        status: int = 200,
        content_type: str | None = HTML,
        headers: dict[str, str] | None = None,
        length: bool = True,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        all_headers = {"Content-Type": content_type} if content_type else {}
        all_headers.update(headers or {})
        if length:
            all_headers["Content-Length"] = str(len(data))
            # The answer is complete at the client once its last byte is written.
            self.answered()
        self.head(status, all_headers)
        self.write(data)

    def wait(self, seconds: float) -> bool:
        """Pause this answer; True if the server is shutting down meanwhile."""
        return self.stopping.wait(seconds)

    def reset(self) -> None:
        """Drop the connection with a TCP RST instead of an answer."""
        sock = self._handler.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._handler.close_connection = True
        sock.close()


Script = Callable[[Exchange], None]


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    scripts: dict[str, Script]
    hits: Counter[str]
    stopping: threading.Event
    cond: threading.Condition
    active: Counter[str]
    peak: Counter[str]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up early (size limit, timeout) is the point of many scripts."""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        srv = self.server
        with srv.cond:
            srv.hits[path] += 1
            srv.active[path] += 1
            srv.peak[path] = max(srv.peak[path], srv.active[path])
            srv.cond.notify_all()
        exchange = Exchange(self, path)
        try:
            script = srv.scripts.get(path)
            if script is None:
                exchange.send("<p>no such page</p>", status=404)
            else:
                script(exchange)
        finally:
            exchange.answered()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@dataclass
class PageServer:
    """Routes are added at any time with :meth:`route` and the helpers below."""

    _httpd: _Server
    base: str
    host: str
    port: int
    _thread: threading.Thread = field(repr=False)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def route(self, path: str, script: Script) -> str:
        self._httpd.scripts[path] = script
        return self.url(path)

    def page(
        self,
        path: str,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str | None = HTML,
        headers: dict[str, str] | None = None,
    ) -> str:
        return self.route(
            path,
            lambda ex: ex.send(body, status=status, content_type=content_type, headers=headers),
        )

    def redirect(self, path: str, to: str, status: int = 302) -> str:
        return self.route(path, lambda ex: ex.send(b"", status=status, headers={"Location": to}))

    def hits(self, path: str) -> int:
        with self._httpd.cond:
            return self._httpd.hits[path]

    def peak(self, path: str) -> int:
        """The most requests for ``path`` that were being answered at once."""
        with self._httpd.cond:
            return self._httpd.peak[path]

    def wait_active(self, path: str, count: int, timeout: float = 10) -> None:
        """Block until ``count`` requests for ``path`` are being answered at once."""
        with self._httpd.cond:
            if not self._httpd.cond.wait_for(
                lambda: self._httpd.active[path] >= count, timeout=timeout
            ):
                raise AssertionError(f"{path}: never {count} requests in flight")


@contextmanager
def serve(tls: ssl.SSLContext | None = None) -> Iterator[PageServer]:
    """Serve on 127.0.0.1 (over TLS with ``tls``, a server-side context)."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    httpd.scripts = {}
    httpd.hits = Counter()
    httpd.active = Counter()
    httpd.peak = Counter()
    httpd.stopping = threading.Event()
    httpd.cond = threading.Condition()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    host, port = str(httpd.server_address[0]), int(httpd.server_address[1])
    try:
        scheme = "https" if tls is not None else "http"
        yield PageServer(httpd, f"{scheme}://{host}:{port}", host, port, thread)
    finally:
        httpd.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --- content for fetch tests ------------------------------------------------------

ARTICLE_TEXT = (
    "Write-ahead logging keeps readers and writers out of each other's way, which matters"
    " once a second thread appears, and it usually makes commits faster too.",
    "A checkpoint copies pages from the log back into the database file; until it runs,"
    " readers look in the log first, so a long-running reader can hold the log open.",
    "Group commit batches many small transactions into one fsync, which is how a daemon"
    " can acknowledge hundreds of captures per second without losing any of them.",
)


def add_hostile_pages(srv: PageServer) -> None:
    """Pages that fight the fetcher: a reset, a head or body that never comes, an
    endless body, a 16 MiB gzip bomb, a redirect loop."""
    srv.route("/reset", lambda ex: ex.reset())
    srv.route("/slow-head", lambda ex: None if ex.wait(5) else ex.send(ARTICLE))
    srv.route("/slow-body", drip_body)
    srv.route("/endless", endless_body)
    srv.page("/bomb", gzip_bomb(16 << 20), headers={"Content-Encoding": "gzip"})
    srv.redirect("/loop-a", "/loop-b")
    srv.redirect("/loop-b", "/loop-a")


def fast_fetch(**overrides: Any) -> dict[str, Any]:
    """A daemon's ``[fetch]`` section for these servers: loopback allowed, short timeouts
    and retries, small limits that the size and redirect cases can reach."""
    cfg: dict[str, Any] = {
        "allow_private": True,
        "attempts": 3,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.05,
        "connect_timeout_s": 1.0,
        "read_timeout_s": 0.3,
        "timeout_s": 1.0,
        "max_bytes": 262144,
        "max_redirects": 3,
    }
    cfg.update(overrides)
    return cfg


def html_page(paragraphs: tuple[str, ...] | list[str], *, title: str, head: str = "") -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body>"
        f"<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<article><h1>{title}</h1>{body}</article><footer>Footer text</footer></body></html>"
    )


ARTICLE = html_page(ARTICLE_TEXT, title="WAL notes")

#: (charset label, a paragraph that must survive the trip) per encoding the fetcher must read.
ENCODED: dict[str, tuple[str, str]] = {
    "shift_jis": (
        "Shift_JIS",
        "東京の朝は早い。駅のホームには通勤客が列を作り、電車は数分おきに到着する。"
        "小さな喫茶店では店主が豆を挽き、常連客が新聞を読みながらコーヒーを待っている。"
        "この町の暮らしは、静かな習慣の積み重ねでできている。",
    ),
    "gbk": (
        "GBK",
        "北京的秋天天高云淡，公园里的银杏叶慢慢变成金黄色。老人们在湖边下棋，"
        "孩子们在草地上放风筝。这座城市的生活节奏虽然很快，但人们总能找到片刻的安静。",
    ),
    "windows-1251": (
        "windows-1251",
        "Осенью в Москве рано темнеет, и город зажигает огни уже к пяти часам вечера. "
        "В маленьких кафе на бульварах пахнет корицей и свежим хлебом, а прохожие спешат "
        "домой, поднимая воротники пальто.",
    ),
    "latin-1": (
        "ISO-8859-1",
        "À Lyon, la fête des Lumières attire chaque année des millions de visiteurs. "
        "Les façades s'illuminent, les bouchons servent des quenelles et du gâteau "
        "aux pralines, et l'on flâne jusqu'à minuit près de la Saône.",
    ),
}


def encoded_page(key: str, *, declare: str) -> tuple[bytes, str]:
    """The page in its encoding, and the Content-Type to send.

    ``declare``: ``"header"`` (charset in Content-Type), ``"meta"`` (``<meta charset>``)
    or ``"none"`` (nothing: the fetcher must detect it).
    """
    label, text = ENCODED[key]
    head = f"<meta charset='{label}'>" if declare == "meta" else ""
    html = html_page([text, text[: len(text) // 2]], title=text[:12], head=head)
    content_type = f"text/html; charset={label}" if declare == "header" else "text/html"
    return html.encode(label), content_type


def self_signed(directory: Path, hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext] | None:
    """(server context, client context trusting it) for ``hostname``; None without openssl."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={hostname}"),
            *("-addext", f"subjectAltName=DNS:{hostname}"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


def gzip_bomb(size: int) -> bytes:
    """A gzip body of ``size`` bytes of one letter: about a thousandth of that on the wire."""
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    chunk = b"a" * (1 << 20)
    out = [comp.compress(b"<p>")]
    for _ in range(size >> 20):
        out.append(comp.compress(chunk))
    out.append(comp.flush())
    return b"".join(out)


def brotli_bomb(size: int) -> bytes:
    import brotli

    comp = brotli.Compressor(quality=5)
    chunk = b"a" * (1 << 20)
    out = [comp.process(b"<p>")]
    for _ in range(size >> 20):
        out.append(comp.process(chunk))
    out.append(comp.finish())
    return b"".join(out)


def endless_body(ex: Exchange) -> None:
    """A page whose body never ends (until the server stops or the client leaves)."""
    ex.head(200, {"Content-Type": "text/html"})
    while not ex.stopping.is_set() and ex.write(b"<p>" + b"z" * 65_536 + b"</p>"):
        pass


def drip_body(ex: Exchange) -> None:
    """A slowloris body: a few bytes every 50 ms, for ever."""
    ex.head(200, {"Content-Type": "text/html"})
    while not ex.wait(0.05) and ex.write(b"<p>drip</p>"):
        pass
