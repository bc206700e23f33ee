"""The `wordlm` stage: the word trigram over the corpus's training text, pruned and quantised.

Text: the same training parts the character n-gram reads (training/lm_text.py: no held-out
document, no annotated dev or test sentence). Words are (surface, hiragana reading) pairs: the
annotated Wikipedia gives its gold morphemes; every other sentence is cut by fugashi with
UniDic (unidic-lite), its reading cleaned as the reading pipeline cleans it (readings.py; a
word it cannot read is UNK) and, for a few everyday words, the one people type (typed_reading).
SudachiPy's cross-check is left out here: it would multiply the build time by several for a
model whose rare words are pruned anyway (docs/training.md).
The vocabulary keeps the `vocabulary` most frequent words; n-grams seen fewer than
`min_counts` times are dropped.
"""

from __future__ import annotations

import resource
import time
import zlib
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from karukan_engine.kana import to_hiragana
from karukan_engine.lm.kneser_ney import EOS, estimate
from karukan_engine.lm.word_ngram import BUNDLED, WordNgram
from karukan_engine.training.readings import _clean_reading, annotated_sentences, gold_chunks
from karukan_engine.training.lm_text import lm_sources
from karukan_engine.training.paths import PACKAGE_MODEL_DIR, kept_output

VOCABULARY = 60000
MIN_COUNTS = (3, 6)
BATCH = 2000
_tagger = None


def word_of(surface: str, reading: str | None) -> str | None:
    """The vocabulary's key of a word, None when it has no reading."""
    return None if reading is None or not surface.strip() else f"{surface}\t{to_hiragana(reading)}"


def fugashi_tagger():
    """This process's fugashi tagger over UniDic (unidic-lite), made on first use."""
    global _tagger
    if _tagger is None:
        import fugashi
        import unidic_lite

        _tagger = fugashi.Tagger("-d " + unidic_lite.DICDIR)
    return _tagger


# UniDic reads a few everyday words as formal speech, by their lemma or as pronounced, where what
# people type differs, so the model would know 私 only as わたくし, 日本 only as にっぽん and 何を
# only as なんを. The corpus's own hiragana says how these are typed: its typed dialogue (chat,
# asdc, mpchat) and tatoeba spell out わたし 2,728 times and わたくし 9, にほん 13 and にっぽん
# never, という and っていう 11,576 times and とゆう, ってゆう 21; なにを, なにが, なにも are typed
# so, and 何か both なにか and なんか; あした outnumbers あす about two to one (tatoeba 23 / 14,
# aozora 885 / 306). UniDic's reading keeps a share, so a typist who says わたくし or あす still
# finds the kanji.
# surface: (UniDic's reading, the typed one, one occurrence in how many keeps UniDic's; 0: none)
TYPED_READINGS = {"私": ("わたくし", "わたし", 16), "明日": ("あす", "あした", 3), "日本": ("にっぽん", "にほん", 16),
                  "言う": ("ゆう", "いう", 0)}
# 何 (UniDic: なん) before these particles, as the entry above
NANI_BEFORE = {particle: ("なん", "なに", 0) for particle in ("を", "が", "も", "に", "へ", "より", "から", "まで")}
NANI_BEFORE["か"] = ("なん", "なに", 2)


def typed_reading(surface: str, reading: str | None, following: str, salt: int) -> str | None:
    """The reading a typist gives this word where UniDic's convention differs (above), in
    hiragana. `following` is the next word's surface; `salt` picks which occurrences keep
    UniDic's reading (the same text keeps the same ones)."""
    if reading is None:
        return None
    reading = to_hiragana(reading)
    rule = NANI_BEFORE.get(following) if surface == "何" else TYPED_READINGS.get(surface)
    if rule is None or reading != rule[0]:
        return reading
    unidic, typed, keep_one_in = rule
    return unidic if keep_one_in and salt % keep_one_in == 0 else typed


def _tag_batch(sentences: list[str]) -> list[list[str | None]]:
    tagger = fugashi_tagger()
    out = []
    for sentence in sentences:
        tokens = list(tagger(sentence))
        salt = zlib.crc32(sentence.encode("utf-8"))
        words = []
        for i, token in enumerate(tokens):
            reading = _clean_reading(token.surface, getattr(token.feature, "kana", None))
            following = tokens[i + 1].surface if i + 1 < len(tokens) else ""
            words.append(word_of(token.surface, typed_reading(token.surface, reading, following, salt + i)))
        out.append(words)
    return out


def source_words(corpus_dir: Path, processes: int, tag=_tag_batch, skip: tuple[str, ...] = (),
                 annotated: bool = True):
    """(source name, `tag` of each batch of its sentences, in a pool of processes) for every
    training source but those named in `skip`; the annotated ones give their gold morphemes as
    word keys instead (none with annotated=False)."""
    for source in lm_sources():
        if source.name in skip or (source.kind == "annotated" and not annotated):
            continue
        if not (corpus_dir / source.file).is_file():
            print(f"note: {source.file} not in the corpus directory; {source.name} skipped")
            continue
        if source.kind == "annotated":
            sentences = [[word_of(s, r) for s, r in gold_chunks(words)]
                         for words in annotated_sentences(corpus_dir / source.file)]
            yield source.name, [sentences]
            continue
        from karukan_engine.training.corpus import corpus_sentences

        lines = corpus_sentences(source, corpus_dir, every=source.lm_every)[source.name]
        batches = [lines[i:i + BATCH] for i in range(0, len(lines), BATCH)]
        with Pool(processes) as pool:
            yield source.name, pool.imap(tag, batches)


def count_words(corpus_dir: Path, processes: int = 2) -> tuple[np.ndarray, np.ndarray, list[str], dict]:
    """Sentences as provisional ids (flat, lengths), the provisional vocabulary, words per source."""
    ids: dict[str | None, int] = {None: 0}
    names: list[str] = [""]
    flats, lengths, per_source = [], [], {}
    for name, batches in source_words(corpus_dir, processes):
        words = 0
        for batch in batches:
            for sentence in batch:
                row = []
                for word in sentence:
                    i = ids.get(word)
                    if i is None:
                        i = ids[word] = len(names)
                        names.append(word)
                    row.append(i)
                flats.append(np.array(row, dtype=np.int32))
                lengths.append(len(row))
                words += len(row)
        per_source[name] = words
    return np.concatenate(flats), np.array(lengths, dtype=np.int64), names, per_source


def build_wordlm(corpus_dir: Path | None, model_dir: Path = PACKAGE_MODEL_DIR, processes: int = 2,
                 vocabulary: int = VOCABULARY, min_counts: tuple[int, ...] = MIN_COUNTS,
                 force: bool = False) -> Path:
    out = Path(model_dir) / BUNDLED.name
    if kept_output(corpus_dir, out, force):
        return out
    started = time.perf_counter()
    flat, lengths, names, per_source = count_words(corpus_dir, processes)
    counted = time.perf_counter() - started
    frequency = np.bincount(flat, minlength=len(names))
    frequency[0] = 0
    kept = np.argsort(-frequency, kind="stable")[:vocabulary]
    kept = kept[frequency[kept] > 0]
    remap = np.zeros(len(names), dtype=np.int64)    # provisional id -> final id (UNK = 0)
    remap[kept] = np.arange(kept.size) + EOS + 1
    final = remap[flat]
    model = estimate(final, lengths, kept.size + EOS + 1, order=3, min_counts=min_counts)
    out.parent.mkdir(parents=True, exist_ok=True)
    WordNgram.save(out, model, [names[i] for i in kept])
    tokens = int(lengths.sum())
    print(f"word 3-gram over {tokens:,} words ({', '.join(f'{k} {v:,}' for k, v in per_source.items())}); "
          f"{len(names) - 1:,} distinct words, {kept.size:,} kept ({100 * float(np.mean(final > 0)):.1f} % of "
          f"words); bigrams {model.keys[0].size:,}, trigrams {model.keys[1].size:,} (counts >= {min_counts}); "
          f"{out.stat().st_size / 1e6:.1f} MB; tokenising {counted:.0f} s, total {time.perf_counter() - started:.0f} s; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return out
