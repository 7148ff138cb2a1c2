"""PDFs made on the spot with reportlab, each with the text it holds, for tests and bench/pdf.py.

Every document's words are known (``Made.words``, in reading order), so an
extractor's output can be scored: how many of the words it recovered, and in
what order.
"""

from __future__ import annotations

import io
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
