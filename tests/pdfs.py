"""PDFs made on the spot with reportlab, each with the text it holds, for tests and bench/pdf.py.

Every document's words are known (``Made.words``, in reading order), so an
extractor's output can be scored: how many of the words it recovered, and in
what order.
"""

from __future__ import annotations

import io
import zlib
from typing import Final

import msgspec
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.pdfgen import canvas
from reportlab.platypus import (
    BaseDocTemplate,
    Flowable,
    Frame,
    PageTemplate,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
)

WORDS: Final = [
    "harbour",
    "lantern",
    "orchard",
    "meadow",
    "granite",
    "willow",
    "copper",
    "saddle",
    "thimble",
    "falcon",
    "quarry",
    "ribbon",
    "marble",
    "juniper",
    "pepper",
    "velvet",
    "hollow",
    "cinder",
    "maple",
    "tundra",
    "walnut",
    "sparrow",
    "beacon",
    "canyon",
    "ember",
    "glacier",
    "harvest",
    "island",
    "jasmine",
    "kettle",
]


class Made(msgspec.Struct, frozen=True):
    data: bytes
    #: The words of the text, in reading order.
    words: list[str]
    pages: int


def sentence(i: int, n: int = 12) -> str:
    words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)]
    return " ".join(words).capitalize() + "."


def paragraph(i: int, sentences: int = 4) -> str:
    return " ".join(sentence(i * 5 + s) for s in range(sentences))


def _words(texts: list[str]) -> list[str]:
    return [w.strip(".,").lower() for t in texts for w in t.split()]


def headings(*, sections: int = 4, title: str = "Field notes", author: str = "Ada Writer") -> Made:
    """Headings, each followed by paragraphs; title and author in the metadata."""
    buf = io.BytesIO()
    styles = getSampleStyleSheet()
    doc = SimpleDocTemplate(buf, pagesize=A4, title=title, author=author)
    story: list[Flowable] = []
    texts: list[str] = []
    for s in range(sections):
        head = f"Section {s + 1} {WORDS[s % len(WORDS)]}"
        story.append(Paragraph(head, styles["Heading1"]))
        texts.append(head)
        for p in range(3):
            body = paragraph(s * 3 + p)
            story.append(Paragraph(body, styles["BodyText"]))
            story.append(Spacer(1, 0.3 * cm))
            texts.append(body)
    doc.build(story)
    return Made(data=buf.getvalue(), words=_words(texts), pages=doc.page)


def two_columns(*, paragraphs: int = 12) -> Made:
    """Text set in two columns: the left column is read before the right one."""
    buf = io.BytesIO()
    styles = getSampleStyleSheet()
    width, height = A4
    margin = 2 * cm
    gap = 1 * cm
    col = (width - 2 * margin - gap) / 2
    frames = [
        Frame(margin, margin, col, height - 2 * margin, id="left"),
        Frame(margin + col + gap, margin, col, height - 2 * margin, id="right"),
    ]
    doc = BaseDocTemplate(buf, pagesize=A4, title="Two columns", author="Col Umnist")
    doc.addPageTemplates([PageTemplate(id="cols", frames=frames)])
    texts = [paragraph(100 + p) for p in range(paragraphs)]
    story: list[Flowable] = []
    for t in texts:
        story.append(Paragraph(t, styles["BodyText"]))
        story.append(Spacer(1, 0.3 * cm))
    doc.build(story)
    return Made(data=buf.getvalue(), words=_words(texts), pages=doc.page)


def table(*, rows: int = 12) -> Made:
    """A heading, a sentence, and a table read row by row."""
    buf = io.BytesIO()
    styles = getSampleStyleSheet()
    doc = SimpleDocTemplate(buf, pagesize=A4, title="Stock table", author="Tab Ular")
    header = ["Item", "Place", "Count"]
    cells = [header] + [
        [WORDS[r % len(WORDS)], WORDS[(r * 5 + 2) % len(WORDS)], str(r * 7)] for r in range(rows)
    ]
    intro = sentence(900)
    story: list[Flowable] = [
        Paragraph("Inventory", styles["Heading1"]),
        Paragraph(intro, styles["BodyText"]),
        Table(cells),
    ]
    doc.build(story)
    texts = ["Inventory", intro] + [" ".join(row) for row in cells]
    return Made(data=buf.getvalue(), words=_words(texts), pages=doc.page)


def long_document(*, pages: int = 40) -> Made:
    """Many pages of headings and paragraphs: for speed."""
    buf = io.BytesIO()
    styles = getSampleStyleSheet()
    doc = SimpleDocTemplate(buf, pagesize=A4, title="Long", author="Prolix")
    story: list[Flowable] = []
    texts: list[str] = []
    i = 0
    while True:
        head = f"Chapter {i + 1}"
        story.append(Paragraph(head, styles["Heading2"]))
        texts.append(head)
        for p in range(4):
            body = paragraph(i * 4 + p, sentences=5)
            story.append(Paragraph(body, styles["BodyText"]))
            texts.append(body)
        i += 1
        if i >= pages * 2:
            break
    doc.build(story)
    return Made(data=buf.getvalue(), words=_words(texts), pages=doc.page)


def scanned(*, title: str = "A scan") -> Made:
    """Pages with drawings and no text layer, as a scanner without OCR makes them."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setTitle(title)
    for page in range(2):
        for k in range(40):
            c.rect(
                2 * cm + (k % 8) * 2 * cm, 3 * cm + (k // 8) * 4 * cm, 1.5 * cm, 0.4 * cm, fill=1
            )
        c.showPage()
        del page
    c.save()
    return Made(data=buf.getvalue(), words=[], pages=2)


def shared_stream(*, pages: int = 50, stream_bytes: int = 700_000) -> bytes:
    """Hostile: ``pages`` pages that all draw one compressed content stream of ``stream_bytes``.

    The file is a few kilobytes; its text is about ``pages * stream_bytes * 0.6``
    characters, since every page repeats the whole stream.
    """
    line = b"BT /F1 9 Tf 72 700 Td (harbour lantern orchard meadow granite willow copper) Tj ET\n"
    content = zlib.compress(line * (stream_bytes // len(line)), 9)
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + n) for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content)
        + content
        + b"\nendstream",
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    ] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def few_words(text: str, *, title: str | None = None, author: str | None = None) -> bytes:
    """One page holding ``text`` in body type, with the metadata given."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    if title is not None:
        c.setTitle(title)
    if author is not None:
        c.setAuthor(author)
    c.setFont("Helvetica", 11)
    c.drawString(72, 720, text)
    c.save()
    return buf.getvalue()


def wrapped_title(lines: list[str], body: str, *, title: str | None = None) -> bytes:
    """A paper's first page: its title set large on ``lines``, then paragraphs of ``body``."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    if title is not None:
        c.setTitle(title)
    y = 760.0
    c.setFont("Helvetica-Bold", 20)
    for line in lines:
        c.drawString(72, y, line)
        y -= 26
    c.setFont("Helvetica", 10)
    words = body.split()
    for start in range(0, len(words), 12):
        y -= 14
        c.drawString(72, y, " ".join(words[start : start + 12]))
    c.save()
    return buf.getvalue()
