"""Short notes through the offline engine, measured the way a reader would judge them.

``python -m tests.short_notes`` prints the figures on the held-out set
(``tests/data/short_notes_heldout.json``); ``tests/test_local_short_notes.py``
holds them to a floor. A note "yields a todo from its own instructions" when one
of its todos is, word for word, a stretch of the note (a step it gives), not a
todo the engine words itself.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from readdod.engines.base import EngineInput
from readdod.engines.local import build_card, plan_todos, score_text, summarize_text
from readdod.engines.local.phrases import PHRASES
from readdod.extraction import extract_text
from readdod.items.models import Card
from readdod.steps import rubric

HELDOUT: Final = Path(__file__).parent / "data" / "short_notes_heldout.json"
_ENDS: Final = ".。!！ "


@dataclass(frozen=True, slots=True)
class Note:
    lang: str
    intent: str
    text: str


def load(kind: str, path: Path = HELDOUT) -> list[Note]:
    raw = json.loads(path.read_text("utf-8"))
    return [Note(**n) for n in raw[kind]]


def run(note: Note) -> Card:
    """The card the offline engine makes of a note captured as text."""
    ext = extract_text(note.text)
    inp = EngineInput(text=ext.text, intent=note.intent, title=ext.title)
    summary = summarize_text(inp)
    score = score_text(inp, summary)
    todos = plan_todos(inp, summary, score)
    return build_card(inp, summary, score, todos)


def own_steps(note: Note, card: Card) -> list[str]:
    """The todos that are stretches of the note itself."""
    text = note.text.casefold()
    return [
        t.title
        for t in card.todos
        if t.kind == "action"
        and len(t.title.rstrip(_ENDS)) >= 4
        and t.title.rstrip(_ENDS).casefold() in text
    ]


def _genre_titles() -> set[str]:
    out: set[str] = set()
    for ph in PHRASES.values():
        out |= {ph.check_study, ph.decide_agree}
        out |= {ph.try_case.split("{")[0]} if ph.try_case.split("{")[0] else set()
        out |= {ph.bookmark.split("{")[0]} if ph.bookmark.split("{")[0] else set()
    return {t for t in out if t}


def genre_todos(card: Card) -> list[str]:
    """Todos shaped by a genre (study, argument, tutorial, reference)."""
    marks = _genre_titles()
    return [t.title for t in card.todos if any(t.title.startswith(m) for m in marks)]


def quotes_whole_text(note: Note, card: Card) -> bool:
    """A todo or the card's title repeats more than the note's first sentence."""
    flat = " ".join(note.text.split())
    shown = [card.title, *(t.title for t in card.todos)]
    return any(flat in s or flat.rstrip(_ENDS) in s for s in shown)


@dataclass(frozen=True, slots=True)
class Figures:
    howto: int
    with_own_steps: int
    plain: int
    plain_with_genre_todo: int
    plain_with_steps: int
    """Notes that give no instructions, given one of their sentences as a step."""
    whole_text_quoted: int
    rubric_failures: int


def measure(path: Path = HELDOUT) -> Figures:
    howto, plain = load("howto", path), load("plain", path)
    own = genre = false_steps = whole = bad = 0
    for note in howto + plain:
        card = run(note)
        bad += bool(rubric.check(card)) or not 3 <= len(card.todos) <= 7
        whole += quotes_whole_text(note, card)
        if note in howto:
            own += bool(own_steps(note, card))
        else:
            genre += bool(genre_todos(card))
            false_steps += bool(own_steps(note, card))
    return Figures(len(howto), own, len(plain), genre, false_steps, whole, bad)


if __name__ == "__main__":
    f = measure()
    print(f"how-to notes with a todo from their own instructions: {f.with_own_steps}/{f.howto}")
    print(f"plain notes given a genre todo without evidence: {f.plain_with_genre_todo}/{f.plain}")
    print(f"plain notes given one of their sentences as a step: {f.plain_with_steps}/{f.plain}")
    print(f"cards quoting a whole note as a title: {f.whole_text_quoted}/{f.howto + f.plain}")
    print(f"cards failing the READY rubric: {f.rubric_failures}/{f.howto + f.plain}")
    if "-v" not in sys.argv:
        raise SystemExit(0)
    for note in load("howto") + load("plain"):
        card = run(note)
        print(f"\n[{note.lang}] {note.text}\n  title: {card.title}")
        for t in card.todos:
            print(f"  - ({t.kind}) {t.title}")
