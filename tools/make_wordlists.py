"""Regenerate readdod/text/wordlists/*.txt: per-language stem frequencies and common words.

Run by hand, never at run time (readdod reads only the files this writes):

    pip install wordfreq pystemmer
    python tools/make_wordlists.py

The figures come from wordfreq (https://github.com/rspeer/wordfreq), whose data is
licensed CC BY-SA 4.0; the files this writes are derived from it and carry the same
licence (see readdod/text/wordlists/NOTICE).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import Stemmer
import wordfreq

#: Languages with both a Snowball stemmer and a wordfreq list.
LANGUAGES = {
    "en": "english",
    "de": "german",
    "fr": "french",
    "es": "spanish",
    "ru": "russian",
    "pt": "portuguese",
    "it": "italian",
    "nl": "dutch",
    "sv": "swedish",
}
#: Stems rarer than this (Zipf scale) are all equally specific: not listed.
MIN_ZIPF = 4.0
#: Most frequent words kept verbatim, for telling languages apart.
COMMON_WORDS = 120
OUT = Path(__file__).resolve().parent.parent / "readdod" / "text" / "wordlists"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for lang, algorithm in LANGUAGES.items():
        stem = Stemmer.Stemmer(algorithm).stemWord
        words = wordfreq.top_n_list(lang, 30_000)
        mass: dict[str, float] = defaultdict(float)
        for w in words:
            if not any(c.isalpha() for c in w):
                continue
            mass[stem(w.casefold())] += wordfreq.word_frequency(w, lang)
        rows = sorted(
            ((s, math.log10(f) + 9) for s, f in mass.items() if math.log10(f) + 9 >= MIN_ZIPF),
            key=lambda r: (-r[1], r[0]),
        )
        common = [w for w in words if w.isalpha()][:COMMON_WORDS]
        lines = [
            f"# {lang}: Snowball stems ({algorithm}) with their Zipf frequency x10;",
            "# derived from wordfreq data (CC BY-SA 4.0) by tools/make_wordlists.py",
            "@common " + " ".join(common),
            *(f"{s} {round(z * 10)}" for s, z in rows),
        ]
        (OUT / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        sys.stdout.write(f"{lang}: {len(rows)} stems\n")


if __name__ == "__main__":
    main()
