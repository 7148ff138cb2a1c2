"""PDFs: extracted with their metadata, refused clearly when there is nothing to read,
fetched by URL (whatever the server calls them) and captured from a file."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfgen import canvas

from readdod.control.client import RpcError
from readdod.core.intake import document_of
from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.fetch import extract_url, make_client
from readdod.extraction.pdf import MAX_PAGES, extract_pdf
from readdod.settings.config import FetchConfig
from tests import pdfs
from tests.daemon_proc import DaemonProc, run_cli
from tests.pageserver import fast_fetch, serve


def _words(text: str) -> list[str]:
    return [w.strip(".,").lower() for w in text.split() if w.strip(".,")]


def test_text_metadata_and_page_count() -> None:
    made = pdfs.headings(title="Field notes", author="Ada Writer")
    got = extract_pdf(made.data, "https://example.org/notes.pdf")
    assert got.title == "Field notes"
    assert got.byline == "Ada Writer"
    assert got.page_count == made.pages == 2
    assert got.content_type == "application/pdf"
    assert got.published_at is not None and got.published_at.endswith("Z")
    assert got.extractor.startswith("pypdf/")
    assert _words(got.text) == made.words
    assert got.word_count == len(made.words)


@pytest.mark.parametrize("make", [pdfs.two_columns, pdfs.table])
def test_columns_and_tables_keep_every_word_in_reading_order(make: object) -> None:
    assert callable(make)
    made = make()
    assert isinstance(made, pdfs.Made)
    assert _words(extract_pdf(made.data).text) == made.words


def test_a_scan_without_text_layer_says_it_needs_ocr() -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(pdfs.scanned().data, "https://example.org/scan.pdf")
    assert info.value.code is ErrorCode.UNSUPPORTED_CONTENT and not info.value.retryable
    assert "no text layer" in info.value.message and "OCR" in info.value.message
    assert "https://example.org/scan.pdf" in info.value.message


def _encrypted(user_password: str) -> bytes:
    buf = io.BytesIO()
    enc = StandardEncryption(user_password, ownerPassword="owner", strength=128)
    c = canvas.Canvas(buf, pagesize=A4, encrypt=enc)
    c.drawString(72, 720, "A locked page with a few words of text on it.")
    c.save()
    return buf.getvalue()


def test_a_password_protected_pdf_is_refused_and_an_owner_locked_one_read() -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(_encrypted("secret"))
    assert info.value.code is ErrorCode.UNSUPPORTED_CONTENT
    assert "password" in info.value.message
    # Only an owner password (printing, copying rights): anyone may read it.
    assert "locked page" in extract_pdf(_encrypted("")).text


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.7\n", b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n%%EOF", pdfs.headings().data[:900]],
)
def test_a_damaged_pdf_is_a_parse_failure(data: bytes) -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(data)
    assert info.value.code is ErrorCode.EXTRACTION_PARSE_FAILED and not info.value.retryable


@pytest.mark.anyio
async def test_fetched_by_url_whatever_the_server_calls_it() -> None:
    made = pdfs.headings()
    with serve() as srv:
        srv.page("/paper.pdf", made.data, content_type="application/pdf")
        srv.page("/download", made.data, content_type="application/octet-stream")
        srv.redirect("/latest", "/paper.pdf")
        srv.page("/scan.pdf", pdfs.scanned().data, content_type="application/pdf")
        srv.page("/big.pdf", pdfs.long_document(pages=40).data, content_type="application/pdf")
        cfg = FetchConfig(allow_private=True, max_bytes=20_000)
        async with make_client(cfg) as client:
            for path in ("/paper.pdf", "/download", "/latest"):
                got = await extract_url(srv.url(path), client=client)
                assert (got.title, got.page_count, got.source) == ("Field notes", 2, "fetched")
                assert got.http_status == 200 and got.content_type == "application/pdf"
            assert got.final_url == srv.url("/paper.pdf")
            with pytest.raises(ExtractionError) as scan:
                await extract_url(srv.url("/scan.pdf"), client=client)
            assert scan.value.code is ErrorCode.UNSUPPORTED_CONTENT
            with pytest.raises(ExtractionError) as big:
                await extract_url(srv.url("/big.pdf"), client=client)
            assert big.value.code is ErrorCode.EXTRACTION_TOO_LARGE


def test_the_daemon_reads_a_pdf_link_and_a_pdf_file(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    made = pdfs.two_columns()
    with serve() as srv:
        url = srv.page("/cols.pdf", made.data, content_type="application/pdf")
        d = DaemonProc(tmp_path, ai={"engine": "fixed"}, fetch=fast_fetch())
        daemons.append(d)
        d.start()
        scan = srv.page("/scan.pdf", pdfs.scanned().data, content_type="application/pdf")
        item = d.call("capture", {"url": url, "intent": "compare the layouts"})["item"]
        d.wait_status("READY", 1)
        failed = d.call("capture", {"url": scan, "intent": "read the scan"})["item"]
        d.wait_status("FAILED_EXTRACTION", 1)
        failure = d.call("get", {"id": failed["id"]})["item"]["failure"]
        assert (failure["error_code"], failure["retryable"]) == ("UNSUPPORTED_CONTENT", False)
        assert "OCR" in failure["message"] and failure["failed_step"] == "extract"
        got = d.call("get", {"id": item["id"]})
        extraction = got["artifacts"]["extraction"]["payload"]
        assert got["item"]["title"] == "Two columns"
        assert (extraction["byline"], extraction["page_count"]) == ("Col Umnist", 1)
        assert _words(extraction["text"]) == made.words

        paper = tmp_path / "paper.pdf"
        paper.write_bytes(pdfs.headings(title="Local paper").data)
        out = run_cli(d, "capture", "--pdf", str(paper), "-i", "read it", "--json")
        assert out.returncode == 0, out.stderr
        captured = d.call("get", {"id": json.loads(out.stdout)["item"]["id"]})
        assert captured["item"]["title"] == "Local paper"
        assert captured["item"]["source_type"] == "text"


def test_capture_pdf_refuses_a_scan_or_a_non_pdf_before_sending(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"auto_process": False})
    daemons.append(d)
    d.start()
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(pdfs.scanned().data)
    out = run_cli(d, "capture", "--pdf", str(scan), "-i", "x")
    assert out.returncode == 1
    assert "UNSUPPORTED_CONTENT" in out.stderr and "OCR" in out.stderr and "scan.pdf" in out.stderr
    page = tmp_path / "page.html"
    page.write_text("<p>hello</p>")
    out = run_cli(d, "capture", "--pdf", str(page), "-i", "x")
    assert out.returncode == 1 and "is not a PDF" in out.stderr
    assert d.call("list", {})["items"] == []


#: What the same PDF's extraction says wherever it came from (not how it was fetched).
_DOCUMENT_FIELDS = (
    "title",
    "byline",
    "published_at",
    "page_count",
    "content_type",
    "extractor",
    "text",
    "markdown",
    "word_count",
    "excerpt",
)


def test_a_pdf_file_and_the_same_pdf_by_url_give_the_same_extraction(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    made = pdfs.headings(sections=6, title="Tide tables", author="Mara Quill")
    assert made.pages >= 2
    paper = tmp_path / "tides.pdf"
    paper.write_bytes(made.data)
    with serve() as srv:
        url = srv.page("/tides.pdf", made.data, content_type="application/pdf")
        d = DaemonProc(tmp_path, ai={"engine": "fixed"}, fetch=fast_fetch())
        daemons.append(d)
        d.start()
        by_url = d.call("capture", {"url": url, "intent": "plan the crossing"})["item"]["id"]
        out = run_cli(d, "capture", "--pdf", str(paper), "-i", "plan the crossing", "--json")
        assert out.returncode == 0, out.stderr
        by_file = json.loads(out.stdout)["item"]["id"]
        d.wait_status("READY", 2)
        got = {}
        for name, item_id in (("url", by_url), ("file", by_file)):
            # `show --json` prints the socket's `get` answer as it came.
            answer = run_cli(d, "show", item_id, "--json")
            assert answer.returncode == 0, answer.stderr
            got[name] = json.loads(answer.stdout)
            text = run_cli(d, "show", item_id)
            assert text.returncode == 0, text.stderr
            assert text.stdout.startswith("Tide tables\n"), text.stdout
            assert f"  by Mara Quill · PDF, {made.pages} pages\n" in text.stdout
    url_ext = got["url"]["artifacts"]["extraction"]["payload"]
    file_ext = got["file"]["artifacts"]["extraction"]["payload"]
    assert (file_ext["byline"], file_ext["page_count"]) == ("Mara Quill", made.pages)
    assert file_ext["content_type"] == "application/pdf"
    assert file_ext["extractor"].startswith("pypdf/")
    assert file_ext["published_at"] is not None and file_ext["published_at"].endswith("Z")
    assert {k: file_ext.get(k) for k in _DOCUMENT_FIELDS} == {
        k: url_ext.get(k) for k in _DOCUMENT_FIELDS
    }
    assert (url_ext["source"], file_ext["source"]) == ("fetched", "provided_text")
    assert got["url"]["item"]["title"] == got["file"]["item"]["title"] == "Tide tables"
    assert _words(file_ext["text"]) == made.words


def test_a_document_goes_with_text_only_and_is_kept_through_a_refetch(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, ai={"engine": "fixed"})
    daemons.append(d)
    d.start()
    text = "\n\n".join(pdfs.paragraph(n) for n in range(4))
    document = {
        "content_type": "application/pdf",
        "extractor": "pypdf/test",
        "byline": "Noor Hale",
        "published_at": "2024-05-01T09:30:00Z",
        "page_count": 3,
    }
    refusals = [
        ({"url": "https://example.org/a.pdf", "document": document}, "give that text with it"),
        ({"html": "<p>hello there</p>", "document": document}, "give that text with it"),
        (
            {"text": text, "document": document | {"published_at": "May 2024"}},
            "document.published_at must be an ISO 8601 time",
        ),
        (
            {"text": text, "document": document | {"published_at": "2024-05-01T09:30:00"}},
            "has no UTC offset",
        ),
    ]
    for params, said in refusals:
        with pytest.raises(RpcError) as info:
            d.call("capture", {"intent": "read it"} | params)
        assert info.value.error_code == "VALIDATION_ERROR", params
        assert said in info.value.message
    for bad in ({"page_count": 0}, {"content_type": "text/html"}, {"pages": 3}):
        with pytest.raises(RpcError) as info:
            d.call("capture", {"intent": "read it", "text": text, "document": document | bad})
        # Not the shape of a document at all: the protocol's invalid params, naming the field.
        assert info.value.rpc_code == -32602, bad
        assert "document" in info.value.message
    assert d.call("list", {})["items"] == []

    first = {"intent": "read it", "title": "Hale notes", "text": text, "document": document}
    first["capture_id"] = "hale-notes"
    captured = d.call("capture", first)
    item = captured["item"]
    assert captured["created"]
    # The document is part of what was handed in: a repeat is the same capture, another
    # document under the same capture_id is not.
    assert not d.call("capture", first)["created"]
    changed = first | {"document": document | {"byline": "Someone Else"}}
    with pytest.raises(RpcError) as conflict:
        d.call("capture", changed)
    assert conflict.value.error_code == "IDEMPOTENCY_CONFLICT"
    plain = d.call("capture", {"intent": "read it", "text": text})["item"]
    d.wait_status("READY", 2)
    d.call("process", {"id": item["id"], "regenerate": True, "refetch": True})
    d.wait_status("READY", 3)
    got = d.call("get", {"id": item["id"], "versions": True})
    versions = [v for v in got["versions"] if v["artifact_type"] == "extraction"]
    assert len(versions) == 2
    extraction = got["artifacts"]["extraction"]["payload"]
    expected = {k: document[k] for k in ("byline", "published_at", "page_count", "extractor")}
    assert {k: extraction[k] for k in expected} == expected
    assert extraction["content_type"] == "application/pdf"
    assert extraction["title"] == "Hale notes" and extraction["source"] == "provided_text"
    # Text without a document is text, as before.
    other = d.call("get", {"id": plain["id"]})["artifacts"]["extraction"]["payload"]
    assert (other["byline"], other["page_count"], other["content_type"]) == (None, None, None)
    assert other["text"] == extraction["text"]


def test_capture_pdf_keeps_the_size_limit_and_names_the_file(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"auto_process": False}, fetch={"max_bytes": 20_000})
    daemons.append(d)
    d.start()
    big = tmp_path / "long.pdf"
    big.write_bytes(pdfs.long_document(pages=40).data)
    assert big.stat().st_size > 20_000
    out = run_cli(d, "capture", "--config", str(d.config), "--pdf", str(big), "-i", "x")
    assert out.returncode == 1
    assert "PAYLOAD_TOO_LARGE" in out.stderr and str(big) in out.stderr
    assert "fetch.max_bytes" in out.stderr
    many = tmp_path / "many.pdf"
    many.write_bytes(_pages(MAX_PAGES + 1))
    assert many.stat().st_size < 20_000 * 100
    out = run_cli(d, "capture", "--pdf", str(many), "-i", "x")
    assert out.returncode == 1
    assert "PAYLOAD_TOO_LARGE" in out.stderr and str(many) in out.stderr
    assert f"{MAX_PAGES + 1} pages" in out.stderr
    assert d.call("list", {})["items"] == []


def _pages(count: int) -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    for n in range(count):
        c.drawString(72, 720, f"Page {n + 1} of a long ledger, with a few words on it.")
        c.showPage()
    c.save()
    return buf.getvalue()


def test_a_kept_document_is_read_back_and_one_this_version_cannot_read_is_left_out() -> None:
    kept = {"content_type": "application/pdf", "extractor": "pypdf/1", "page_count": 4}
    found = document_of(json.dumps(kept))
    assert found is not None and (found.page_count, found.extractor) == (4, "pypdf/1")
    assert document_of(None) is None
    # Kept by another version and unreadable now: the text is read without it.
    assert document_of('{"pages": 4}') is None
    assert document_of("not json") is None


# --- bounded: text, CPU time, memory, the daemon's loop (issue: hostile PDFs) ---------

_CORPUS = Path(__file__).parent / "pdf_corpus"


def test_text_stops_at_the_limit_whatever_the_file_size() -> None:
    hostile = pdfs.shared_stream(pages=50, stream_bytes=100_000)
    assert len(hostile) < 10_000  # about 3 MB of text in under 10 KB
    with pytest.raises(ExtractionError) as info:
        extract_pdf(hostile, "https://example.org/h.pdf", max_chars=300_000)
    assert info.value.code is ErrorCode.EXTRACTION_TOO_LARGE and not info.value.retryable
    assert "300,000 characters" in info.value.message and "fetch.max_bytes" in info.value.message


def test_the_daemon_refuses_a_pdf_whose_text_passes_max_bytes(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    hostile = pdfs.shared_stream(pages=50, stream_bytes=100_000)
    with serve() as srv:
        url = srv.page("/h.pdf", hostile, content_type="application/pdf")
        d = DaemonProc(
            tmp_path, ai={"engine": "fixed"}, fetch={**fast_fetch(), "max_bytes": 300_000}
        )
        daemons.append(d)
        d.start()
        item = d.call("capture", {"url": url, "intent": "read it"})["item"]
        d.wait_status("FAILED_EXTRACTION", 1)
        failure = d.call("get", {"id": item["id"]})["item"]["failure"]
    assert failure["error_code"] == "EXTRACTION_TOO_LARGE", failure
    assert "characters" in failure["message"] and "fetch.max_bytes" in failure["message"]


def test_the_daemon_stops_a_pdf_over_its_cpu_budget(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    # The 10 KB file of the report: 50 pages sharing a 700 KB stream, minutes of CPU.
    hostile = pdfs.shared_stream()
    with serve() as srv:
        url = srv.page("/h.pdf", hostile, content_type="application/pdf")
        d = DaemonProc(
            tmp_path, ai={"engine": "fixed"}, fetch=fast_fetch(pdf_cpu_s=1, max_bytes=10_000_000)
        )
        daemons.append(d)
        d.start()
        item = d.call("capture", {"url": url, "intent": "read it"})["item"]
        d.wait_status("FAILED_EXTRACTION", 1)
        failure = d.call("get", {"id": item["id"]})["item"]["failure"]
    assert failure["error_code"] == "EXTRACTION_TOO_LARGE", failure
    assert "1 s of CPU" in failure["message"] and "fetch.pdf_cpu_s" in failure["message"]


def _readers_of(pid: int) -> list[int]:
    """The daemon's children reading a PDF, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"readdod.extraction.pdf_process" in cmdline:
            found.append(int(entry.name))
    return found


def _until(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


def test_a_pdf_is_read_in_a_child_process_that_cancelling_kills(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    hostile = pdfs.shared_stream()
    with serve() as srv:
        url = srv.page("/h.pdf", hostile, content_type="application/pdf")
        d = DaemonProc(
            tmp_path, ai={"engine": "fixed"}, fetch=fast_fetch(pdf_cpu_s=600, max_bytes=10_000_000)
        )
        daemons.append(d)
        d.start()
        assert d.proc is not None
        pid = d.proc.pid
        item = d.call("capture", {"url": url, "intent": "read it"})["item"]
        readers: list[int] = []

        def reading() -> bool:
            readers[:] = _readers_of(pid)
            return bool(readers)

        _until(reading, "process reading the PDF")
        # The daemon answers while the child reads (it holds no lock of the daemon's).
        assert d.call("get", {"id": item["id"]})["item"]["status"] == "PROCESSING"
        d.call("archive", {"id": item["id"], "cancel": True})
        _until(lambda: not Path(f"/proc/{readers[0]}").exists() or _zombie(readers[0]), "kill")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_pdf_over_its_memory_is_refused_not_a_crash() -> None:
    from readdod.extraction.pdf_process import PdfLimits, extract_pdf_bounded

    # One page drawing a 60 MB stream (200 KB compressed), read within 128 MiB.
    bomb = pdfs.shared_stream(pages=1, stream_bytes=60_000_000)
    limits = PdfLimits(max_chars=100_000_000, memory_mb=128)
    with pytest.raises(ExtractionError) as info:
        extract_pdf_bounded(bomb, limits=limits)
    assert info.value.code is ErrorCode.EXTRACTION_TOO_LARGE
    assert "memory" in info.value.message and "fetch.pdf_memory_mb" in info.value.message


# --- encrypted and odd files: never an internal error ---------------------------------


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        ("r5-owner-password.pdf", None, "pdf encryption test"),
        ("r6-owner-password.pdf", None, "pdf encryption test"),
        ("r4-aes-user-password.pdf", "UNSUPPORTED_CONTENT", "needs a password"),
        ("poppler-395-0-fuzzed.pdf", "EXTRACTION_PARSE_FAILED", "/A85"),
        ("bomb_giant.pdf", "UNSUPPORTED_CONTENT", "cannot read"),
        ("bug1606566.pdf", "EXTRACTION_EMPTY", "too little text to read: 2 words"),
    ],
)
def test_real_encrypted_and_odd_pdfs_are_read_or_refused_clearly(
    name: str, code: str | None, says: str
) -> None:
    data = (_CORPUS / name).read_bytes()
    if code is None:
        got = extract_pdf(data)
        assert got.title == says and got.byline == "cheng"
        return
    with pytest.raises(ExtractionError) as info:
        extract_pdf(data)
    assert info.value.code.value == code
    assert says in info.value.message


def test_capture_pdf_reads_an_aes_owner_locked_file_and_refuses_a_user_locked_one(
    tmp_path: Path, daemons: list[DaemonProc]
) -> None:
    d = DaemonProc(tmp_path, daemon={"auto_process": False})
    daemons.append(d)
    d.start()
    out = run_cli(d, "capture", "--pdf", str(_CORPUS / "r6-owner-password.pdf"), "-i", "x")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    locked = _CORPUS / "r4-aes-user-password.pdf"
    out = run_cli(d, "capture", "--pdf", str(locked), "-i", "x")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "UNSUPPORTED_CONTENT" in out.stderr and "needs a password" in out.stderr
    odd = tmp_path / "jbig2.pdf"
    odd.write_bytes((_CORPUS / "bomb_giant.pdf").read_bytes())
    out = run_cli(d, "capture", "--pdf", str(odd), "-i", "x")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "INTERNAL_ERROR" not in out.stderr and "jbig2.pdf" in out.stderr
    assert len(d.call("list", {})["items"]) == 1


# --- what a PDF's words and metadata say ----------------------------------------------


def test_a_few_words_are_called_too_little_text_not_a_scan() -> None:
    with pytest.raises(ExtractionError) as info:
        extract_pdf(pdfs.few_words("Hello there world"))
    assert info.value.code is ErrorCode.EXTRACTION_EMPTY
    assert "too little text to read: 3 words on 1 page" in info.value.message
    assert "as a scanner makes them" not in info.value.message


_SENTENCE = "A harbour lantern lit the orchard path while the granite willow bent low. "


@pytest.mark.parametrize(
    "placeholder",
    ["Microsoft Word - field notes.docx", "untitled", "Untitled-3", "report_final.pdf"],
)
def test_a_tool_placeholder_title_is_not_the_title(placeholder: str) -> None:
    got = extract_pdf(pdfs.few_words(_SENTENCE, title=placeholder))
    assert got.title != placeholder
    assert got.title is not None and got.title.startswith("A harbour lantern")


def test_a_real_microsoft_word_title_is_dropped() -> None:
    got = extract_pdf((_CORPUS / "rotation.pdf").read_bytes())
    assert got.title is not None and not got.title.startswith("Microsoft Word")
    assert got.byline == "brianc"


def test_a_leaked_perl_value_is_no_byline() -> None:
    got = extract_pdf(pdfs.few_words(_SENTENCE, title="Notes", author="ARRAY(0x2c7cf020)"))
    assert (got.title, got.byline) == ("Notes", None)


def test_a_title_set_on_two_lines_is_kept_whole() -> None:
    lines = ["Trace-based Just-in-Time Type Specialization for Dynamic", "Languages"]
    got = extract_pdf(pdfs.wrapped_title(lines, _SENTENCE * 30))
    assert got.title == " ".join(lines)
    # A title from the metadata still wins.
    got = extract_pdf(pdfs.wrapped_title(lines, _SENTENCE * 30, title="TraceMonkey"))
    assert got.title == "TraceMonkey"
