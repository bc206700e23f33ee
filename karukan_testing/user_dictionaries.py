"""Generated user dictionaries of any size, as a user importing a whole word list would have.

Readings are random hiragana (2 to 9 characters), words random kanji, in Mozc's TSV with a mix
of user POS names (most nouns, some verbs and adjectives in dictionary form, so conjugated forms
are expanded too) and a few comments. The same seed gives the same file. Tests and benchmarks
only.
"""

from __future__ import annotations

import random
from pathlib import Path

HIRAGANA = [chr(c) for c in range(ord("ぁ"), ord("ゖ") + 1)]
KANJI = [chr(c) for c in range(0x4E00, 0x4E00 + 2000)]
# (POS, reading ending, word ending, weight): a verb or adjective is written in dictionary form
POS_MIX = [("名詞", "", "", 70), ("人名", "", "", 8), ("地名", "", "", 6), ("固有名詞", "", "", 6),
           ("動詞一段", "る", "る", 4), ("動詞ワ行五段", "う", "う", 3), ("形容詞", "い", "い", 3)]


def user_dictionary_lines(count: int, seed: int = 0) -> list[str]:
    """`count` TSV lines: reading, word, POS, comment."""
    rng = random.Random(seed)
    kinds = rng.choices(POS_MIX, weights=[w for *_, w in POS_MIX], k=count)
    lines = []
    for n, (pos, reading_end, word_end, _w) in enumerate(kinds):
        reading = "".join(rng.choices(HIRAGANA, k=rng.randint(2, 9))) + reading_end
        word = "".join(rng.choices(KANJI, k=rng.randint(1, 4))) + word_end
        comment = f"import {n}" if n % 50 == 0 else ""
        lines.append(f"{reading}\t{word}\t{pos}\t{comment}")
    return lines


def write_user_dictionary(path: Path, count: int, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in user_dictionary_lines(count, seed)), encoding="utf-8")
    return path
