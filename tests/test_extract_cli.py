"""`readdod extract`: one page to stdout, no daemon, from a file, stdin or a URL."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from readdod import cli

BODY = (
    "The harbour authority approved the new ferry schedule on Tuesday, after months of "
    "complaints from commuters who waited, sometimes for an hour, in the rain."
)
PAGE = (
    "<!DOCTYPE html><html lang='en'><head><title>Ferry plan | The Daily Tide</title>"
    "<meta property='og:site_name' content='The Daily Tide'></head><body>"
    "<nav><a href='/'>Home</a><a href='/news'>News</a></nav>"
    f"<article><h1>Ferry plan</h1><p>{BODY}</p>"
    "<h2>Changes</h2><ul><li>every <a href='/t'>twenty minutes</a></li><li>later boats</li></ul>"
    "</article><footer>© The Daily Tide</footer></body></html>"
)


@pytest.fixture
def page_file(tmp_path: Path) -> Path:
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    return path


def test_extract_html_file_prints_title_then_text(
    page_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["extract", "--html", str(page_file)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out == f"Ferry plan\n\n{BODY}\n\nChanges\n\nevery twenty minutes\n\nlater boats\n"


def test_extract_markdown_resolves_links_against_the_given_url(
    page_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["extract", "https://tide.example/a/", "--html", str(page_file), "--markdown"])
    assert code == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("# Ferry plan\n\n")
    assert "## Changes\n\n- every [twenty minutes](https://tide.example/t)\n- later boats" in out
    assert "Home" not in out


def test_extract_json_is_the_extraction_artifact(
    page_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["extract", "--html", str(page_file), "--json"]) == cli.EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["title"] == "Ferry plan"
    assert data["site_name"] == "The Daily Tide"
    assert data["lang"] == "en"
    assert data["source"] == "provided_html"
    assert data["text"].startswith(BODY)
    assert data["word_count"] == len(data["text"].split())


def test_extract_reads_stdin_through_the_installed_entry_point() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    done = subprocess.run(
        [sys.executable, "-m", "readdod", "extract", "-"],
        input=PAGE,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Ferry plan\n\n{BODY}\n\n")


def test_extract_without_article_fails_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.html"
    path.write_text("<html><body><nav><a href='/'>Home</a></nav></body></html>")
    assert cli.main(["extract", "--html", str(path)]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "EXTRACTION_EMPTY" in err
    assert "no readable article text" in err
    assert cli.main(["extract", "--html", str(path), "--json"]) == cli.EXIT_ERROR
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["error_code"] == "EXTRACTION_EMPTY"
    assert error["retryable"] is False
    assert "no readable article text" in error["message"]


def test_extract_needs_a_source_and_one_output(
    page_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["extract"]) == cli.EXIT_USAGE
    assert "give a URL" in capsys.readouterr().err
    code = cli.main(["extract", "--html", str(page_file), "--json", "--markdown"])
    assert code == cli.EXIT_USAGE


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def page_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/story"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_extract_url_fetches_the_page(
    page_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "readdod.toml"
    conf.write_text("[fetch]\nallow_private = true\n")
    assert cli.main(["extract", page_server, "--config", str(conf), "--json"]) == cli.EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "fetched"
    assert data["url"] == page_server
    assert data["text"].startswith(BODY)


def test_extract_url_refuses_a_loopback_address_by_default(
    page_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "readdod.toml"
    conf.write_text("")
    assert cli.main(["extract", page_server, "--config", str(conf)]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "EXTRACTION_BLOCKED_ADDRESS" in err
    assert "127.0.0.1" in err
    assert "fetch.allow_private" in err


ACCENTED = (
    "Le café du théâtre ouvre à huit heures; les crêpes coûtent deux euros, "
    "et l'été on y sert des glaces « maison » jusqu'à minuit."
)


def _saved(head: str) -> str:
    return (
        f"<!DOCTYPE html><html lang='fr'><head>{head}<title>Café</title></head>"
        f"<body><article><h1>Café</h1><p>{ACCENTED}</p><p>{ACCENTED}</p></article></body></html>"
    )


@pytest.mark.parametrize(
    ("name", "data"),
    [
        # Unlabelled windows-1252: not valid UTF-8, so the fetcher's guess decides.
        ("unlabelled", _saved("").encode("cp1252")),
        ("meta charset", _saved("<meta charset='windows-1252'>").encode("cp1252")),
        (
            "http-equiv",
            _saved(
                "<meta http-equiv='Content-Type' content='text/html; charset=iso-8859-15'>"
            ).encode("iso-8859-15"),
        ),
        ("utf-16 bom", b"\xff\xfe" + _saved("").encode("utf-16-le")),
        ("utf-8 bom", b"\xef\xbb\xbf" + _saved("").encode("utf-8")),
    ],
)
def test_extract_html_decodes_a_saved_page_as_the_fetcher_decodes_its_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes
) -> None:
    from readdod.extraction.charsets import decode_body

    path = tmp_path / "saved.html"
    path.write_bytes(data)
    assert cli.main(["extract", "--html", str(path), "--json"]) == cli.EXIT_OK, name
    got = json.loads(capsys.readouterr().out)
    assert "\ufffd" not in got["text"]
    assert got["text"].startswith(ACCENTED)
    assert got["title"] == "Café"
    # The same bytes through the fetcher's decoding give the same page.
    from readdod.extraction.extract import extract

    assert extract(decode_body(data, None)).text == got["text"]


def test_extract_reads_non_utf8_stdin_as_bytes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    done = subprocess.run(
        [sys.executable, "-m", "readdod", "extract", "-"],
        input=_saved("<meta charset='windows-1252'>").encode("cp1252"),
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8").startswith(f"Café\n\n{ACCENTED}\n")


def test_extract_html_refuses_a_binary_or_oversized_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "shot.html"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    assert cli.main(["extract", "--html", str(png)]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith(f"readdod: UNSUPPORTED_CONTENT: {png} looks like"), err
    conf = tmp_path / "small.toml"
    conf.write_text("[fetch]\nmax_bytes = 1000\n")
    big = tmp_path / "big.html"
    big.write_text(_saved("") * 10)
    assert cli.main(["extract", "--config", str(conf), "--html", str(big)]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "PAYLOAD_TOO_LARGE" in err and "fetch.max_bytes" in err and str(big) in err
