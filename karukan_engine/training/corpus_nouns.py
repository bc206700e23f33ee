"""The `nouns` stage: common nouns of the corpus that Mozc's open-source dictionary lacks.

Mozc's OSS dictionary misses everyday words (勇気 and 有機 for ゆうき, 晩御飯, 昼ご飯): the lattice
cannot write them however well the language models know them. This stage reads the language
models' training text (training/lm_text.py) but the older literature and the laws (their
spellings are not a typist's), cuts it with fugashi + UniDic (unidic-lite), and keeps the
nouns (common and proper, with a kanji) seen at least `min_count` times as a word of their own
(not the head of a compound: 水族 of 水族館; a single kanji ten times as often), whose (reading,
surface) the system dictionary does not have and SudachiPy reads as one noun the same way (no
compound's fragment, no odd reading). Each gets the Mozc user POS its UniDic POS maps to and a
word cost from its frequency: the costs of the nouns both have, fitted as a line in log count,
give it the cost a Mozc noun as frequent would have.

Output: `karukan_engine/data/dictionary/corpus_nouns.tsv.gz` (reading, surface, POS, cost), which
lattice/corpus_words.py adds to every lattice.
"""

from __future__ import annotations

import gzip
import time
from collections import Counter
from pathlib import Path

import numpy as np

from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import has_kanji, to_hiragana
from karukan_engine.lattice.corpus_words import BUNDLED
from karukan_engine.training.paths import kept_output
from karukan_engine.training.readings import _clean_reading
from karukan_engine.training.wordlm import fugashi_tagger, source_words

MIN_COUNT = 5
# the share of a noun's occurrences that must stand alone (有機 of 有機物 often does not; 水族 of
# 水族館 and 扇風 of 扇風機 almost never)
MIN_ALONE = 0.25
# a single kanji must stand alone this many times more often: UniDic reads one kanji many ways
# (都 as ト in 東京都), while the few that chat writes as words of their own (笑, 泣) are common
SINGLE_KANJI_FACTOR = 10
# older literature (電燈, 恰好) and legal drafting (次条, 各号) write nouns a typist does not want
SKIPPED_SOURCES = ("aozora", "laws")
# UniDic (pos2, pos3, pos4) -> Mozc user POS; the first matching prefix wins
POS_MAP = (
    (("固有名詞", "人名", "姓"), "姓"),
    (("固有名詞", "人名", "名"), "名"),
    (("固有名詞", "人名"), "人名"),
    (("固有名詞", "地名"), "地名"),
    (("固有名詞", "組織名"), "組織"),
    (("固有名詞",), "固有名詞"),
    (("普通名詞", "サ変可能"), "名詞サ変"),
    (("普通名詞", "サ変形状詞可能"), "名詞サ変"),
    (("普通名詞", "形状詞可能"), "名詞形動"),
    (("普通名詞",), "名詞"),
)
def mozc_pos(pos2: str, pos3: str, pos4: str) -> str | None:
    fields = (pos2, pos3, pos4)
    for prefix, name in POS_MAP:
        if fields[:len(prefix)] == prefix:
            return name
    return None


# what may follow a noun that stands as a word of its own (not the head of a compound: 水族 館)
_AFTER_A_WORD = {"助詞", "助動詞", "補助記号", "記号", "空白"}


def _noun_batch(sentences: list[str]) -> Counter:
    """Counts of (reading, surface, POS, stands alone) of the nouns in the sentences. A noun
    stands alone where a particle, an auxiliary, a symbol or the sentence's end follows it and
    no numeral comes before it (3 日間)."""
    tagger = fugashi_tagger()
    found: Counter = Counter()
    for sentence in sentences:
        tokens = list(tagger(sentence))
        for i, token in enumerate(tokens):
            feature = token.feature
            if feature.pos1 != "名詞" or not has_kanji(token.surface):
                continue
            pos = mozc_pos(feature.pos2, feature.pos3, feature.pos4)
            reading = _clean_reading(token.surface, getattr(feature, "kana", None))
            if pos is None or reading is None:
                continue
            alone = ((i + 1 == len(tokens) or tokens[i + 1].feature.pos1 in _AFTER_A_WORD)
                     and (i == 0 or tokens[i - 1].feature.pos2 != "数詞"))
            found[(to_hiragana(reading), token.surface, pos, alone)] += 1
    return found


def count_nouns(corpus_dir: Path, processes: int) -> Counter:
    counts: Counter = Counter()
    for _, batches in source_words(corpus_dir, processes, tag=_noun_batch, skip=SKIPPED_SOURCES, annotated=False):
        for found in batches:
            counts.update(found)
    return counts


def word_counts(counts: Counter) -> tuple[Counter, Counter]:
    """(reading, surface, POS) -> occurrences, and -> occurrences standing alone."""
    total, alone = Counter(), Counter()
    for (reading, surface, pos, stands), count in counts.items():
        total[(reading, surface, pos)] += count
        if stands:
            alone[(reading, surface, pos)] += count
    return total, alone


def dictionary_costs(counts: Counter, dictionary: SystemDictionary, min_count: int) -> dict[tuple[str, str], int | None]:
    """The dictionary's cheapest entry of each (reading, surface) counted `min_count` times or
    more (counts: (reading, surface, POS) -> occurrences), None where it has none."""
    out: dict[tuple[str, str], int | None] = {}
    for (reading, surface, _), count in counts.items():
        if count >= min_count and (reading, surface) not in out:
            out[(reading, surface)] = min((e.cost for e in dictionary.lookup(reading) if e.surface == surface),
                                          default=None)
    return out


def cost_line(counts: Counter, costs: dict[tuple[str, str], int | None], min_count: int) -> tuple[float, float]:
    """(a, b) of cost = a + b log(count), fitted on the nouns (reading, surface, POS) -> count
    the dictionary has (costs: dictionary_costs's)."""
    xs, ys = [], []
    for (reading, surface, _), count in counts.items():
        cost = costs.get((reading, surface)) if count >= min_count else None
        if cost is not None:
            xs.append(np.log(count))
            ys.append(cost)
    if len(xs) < 2:
        return 5000.0, 0.0
    b, a = np.polyfit(np.array(xs), np.array(ys, dtype=np.float64), 1)
    return float(a), float(b)


def sudachi_agrees(candidates: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (reading, surface) pairs SudachiPy (core dictionary, longest units) also reads as one
    noun with that reading: UniDic's short units cut compounds into pieces no one types alone
    (水族 of 水族館), and its readings of a few spellings are not the common ones (時々 as じじ)."""
    from sudachipy import dictionary, tokenizer

    sudachi = dictionary.Dictionary(dict="core").tokenizer()
    mode = tokenizer.Tokenizer.SplitMode.C
    agreed = set()
    for reading, surface in candidates:
        morphemes = sudachi.tokenize(surface, mode)
        if (len(morphemes) == 1 and morphemes[0].part_of_speech()[0] == "名詞"
                and to_hiragana(morphemes[0].reading_form()) == reading):
            agreed.add((reading, surface))
    return agreed


def missing_nouns(counts: Counter, dictionary: SystemDictionary, min_count: int = MIN_COUNT,
                  check=sudachi_agrees) -> tuple[list[tuple[str, str, str, int]], tuple[float, float]]:
    """(reading, surface, POS, cost) of the nouns the dictionary lacks that stand alone at least
    `min_count` times and in at least MIN_ALONE of their occurrences, and `check` accepts, sorted;
    one POS a word (its most frequent); and the cost line (a, b) they were costed by.
    counts: as _noun_batch's."""
    total, alone = word_counts(counts)
    costs = dictionary_costs(total, dictionary, min_count)
    a, b = cost_line(total, costs, min_count)
    best: dict[tuple[str, str], tuple[int, str]] = {}
    for (reading, surface, pos), count in total.items():
        standing = alone[(reading, surface, pos)]
        least = min_count * (SINGLE_KANJI_FACTOR if len(surface) == 1 else 1)
        if standing >= least and standing >= MIN_ALONE * count and count > best.get((reading, surface), (0, ""))[0]:
            best[(reading, surface)] = (count, pos)
    lacking = [key for key in best if costs[key] is None]
    accepted = check(lacking)
    out = []
    for reading, surface in lacking:
        if (reading, surface) in accepted:
            count, pos = best[(reading, surface)]
            out.append((reading, surface, pos, int(round(min(max(a + b * np.log(count), 0.0), 32000.0)))))
    return sorted(out), (a, b)


def build_nouns(corpus_dir: Path | None, out: Path = BUNDLED, processes: int = 2, min_count: int = MIN_COUNT,
                force: bool = False) -> Path:
    out = Path(out)
    if kept_output(corpus_dir, out, force):
        return out
    started = time.perf_counter()
    counts = count_nouns(corpus_dir, processes)
    rows, (a, b) = missing_nouns(counts, SystemDictionary(), min_count)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    # mtime 0: the same nouns give the same bytes
    with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write("".join(f"{r}\t{s}\t{p}\t{c}\n" for r, s, p, c in rows).encode("utf-8"))
    partial.replace(out)
    distinct = len({key[:3] for key in counts})
    print(f"corpus nouns: {distinct:,} distinct nouns counted, {len(rows):,} seen >= {min_count} times and "
          f"missing from the dictionary; cost = {a:.0f} {b:+.0f} ln(count); {out.stat().st_size / 1e3:.0f} kB; "
          f"{time.perf_counter() - started:.0f} s")
    return out
