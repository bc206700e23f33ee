"""The `topics` stage: which content words keep company, as low-rank vectors (lm/topic_vectors.py).

The word trigram sees two words back and the character n-gram eight characters; neither knows
that a text about ships wants 航海, not 公開. This stage counts how often two content words
(surfaces with a kanji or katakana, in the bundled word n-gram's vocabulary) appear within
`window` content words of each other over the same training text the n-grams read
(training/lm_text.py, tokenised as the `wordlm` stage does), turns the counts into positive
PMI with smoothed marginals (both sides raised to 0.75, so the matrix stays symmetric), keeps
the `rank` eigenpairs of largest magnitude and writes each word's vector (8-bit) with the
eigenvalues' signs: vector(a) · signs · vector(b) is then about PMI(a, b).
"""

from __future__ import annotations

import hashlib
import resource
import time
from pathlib import Path

import numpy as np

from karukan_engine.lm.topic_vectors import BUNDLED, TopicVectors, is_content
from karukan_engine.lm.word_ngram import BUNDLED as WORD_LM
from karukan_engine.lm.word_ngram import EOS, UNK, WordNgram
from karukan_engine.training.paths import PACKAGE_MODEL_DIR, kept_output, stage_dir

WINDOW = 16
RANK = 32
MIN_PAIR = 2      # pairs seen fewer times carry no PMI (noise)
# the most frequent words (事, 方, 無い, 良い, ...) go with every topic: they take no part
GENERIC = 300
# words seen fewer times get no vector: theirs are mostly noise, and the file stays small
MIN_WORD = 20
SMOOTHING = 0.75


def content_stream(corpus_dir: Path, words: WordNgram, processes: int, generic: int = GENERIC) -> tuple[np.ndarray, np.ndarray]:
    """Every training sentence's content words (but the `generic` most frequent words) as word
    n-gram ids, in corpus order, and where each source begins in that stream (pairs never
    cross sources). Cached in the work directory: the tokenising is most of the build."""
    cache = stage_dir("topics") / f"content-{_corpus_key(corpus_dir, words, generic)}.npz"
    if cache.exists():
        with np.load(cache) as data:
            return data["stream"], data["starts"]
    from karukan_engine.training.wordlm import source_words

    ids = words.ids_by_key()
    content = np.array([is_content(w.split("\t", 1)[0]) for w in words.words], dtype=bool)
    content[:EOS + 1 + generic] = False
    parts, starts, total = [], [], 0
    for _, batches in source_words(corpus_dir, processes):
        starts.append(total)
        for batch in batches:
            for sentence in batch:
                row = np.array([ids.get(w, UNK) for w in sentence if w is not None], dtype=np.int32)
                row = row[content[row]]
                parts.append(row)
                total += row.size
    stream = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    partial = cache.with_name(cache.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez(handle, stream=stream, starts=np.array(starts, dtype=np.int64))
    partial.replace(cache)
    return stream, np.array(starts, dtype=np.int64)


def _corpus_key(corpus_dir: Path, words: WordNgram, generic: int) -> str:
    """What the cached stream depends on: the vocabulary, the generic cut and the corpus files."""
    files = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in Path(corpus_dir).iterdir() if p.is_file())
    text = repr((str(Path(corpus_dir).resolve()), files, words.vocabulary_digest, generic))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cooccurrence(stream: np.ndarray, starts: np.ndarray, size: int, window: int):
    """Symmetric counts of word pairs at most `window` apart (same source), as a scipy CSR."""
    from scipy import sparse

    source = np.zeros(stream.size, dtype=np.int64)
    source[starts[1:][starts[1:] < stream.size]] = 1
    source = np.cumsum(source)
    counts = sparse.csr_matrix((size, size), dtype=np.float64)
    for distance in range(1, window + 1):
        a, b = stream[:-distance], stream[distance:]
        same = (source[:-distance] == source[distance:]) & (a != b)
        a, b = a[same], b[same]
        pairs = sparse.coo_matrix((np.ones(a.size), (a, b)), shape=(size, size)).tocsr()
        counts = counts + pairs + pairs.T
    return counts


def positive_pmi(counts, min_pair: int = MIN_PAIR, smoothing: float = SMOOTHING):
    """PPMI of a symmetric count matrix (pairs seen `min_pair` times or more), marginals raised
    to `smoothing` on both sides, and each word's marginal count."""
    from scipy import sparse

    counts = counts.tocoo()
    keep = counts.data >= min_pair
    rows, cols, values = counts.row[keep], counts.col[keep], counts.data[keep]
    marginal = np.bincount(rows, weights=values, minlength=counts.shape[0])
    smoothed = marginal ** smoothing
    # log P(a, b) - log P_s(a) - log P_s(b), P_s(a) = m(a)^s / sum m^s
    pmi = (np.log(values) - np.log(values.sum()) + 2 * np.log(smoothed.sum())
           - np.log(smoothed[rows]) - np.log(smoothed[cols]))
    positive = pmi > 0
    return (sparse.csr_matrix((pmi[positive], (rows[positive], cols[positive])), shape=counts.shape),
            marginal)


def build_topics(corpus_dir: Path | None, model_dir: Path = PACKAGE_MODEL_DIR, word_lm: Path = WORD_LM,
                 processes: int = 2, window: int = WINDOW, rank: int = RANK, generic: int = GENERIC,
                 min_word: int = MIN_WORD, force: bool = False) -> Path:
    out = Path(model_dir) / BUNDLED.name
    if kept_output(corpus_dir, out, force):
        return out
    from scipy.sparse.linalg import eigsh

    started = time.perf_counter()
    words = WordNgram.load(word_lm)
    stream, starts = content_stream(corpus_dir, words, processes, generic)
    tokenised = time.perf_counter() - started
    size = len(words.words)
    pmi, marginal = positive_pmi(cooccurrence(stream, starts, size, window))
    rank = min(rank, size - 2)   # ARPACK finds fewer pairs than the matrix has rows
    # a fixed start vector and sign: the same corpus gives the same file
    start = np.random.default_rng(0).uniform(-1.0, 1.0, size)
    values, vectors = eigsh(pmi, k=rank, which="LM", v0=start)
    order = np.argsort(-np.abs(values))
    values, vectors = values[order], vectors[:, order]
    vectors *= np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(rank)])
    embedding = vectors * np.sqrt(np.abs(values))
    # the corpus's own mix of contexts: what a word's association is measured against
    weights = marginal / max(marginal.sum(), 1.0)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = (marginal > 0) & (np.bincount(stream, minlength=size) >= min_word)
    TopicVectors.save(out, embedding, np.sign(values), weights @ embedding, kept, words.vocabulary_digest)
    print(f"topic vectors: {stream.size:,} content words, window {window}, {pmi.nnz:,} positive pairs, "
          f"rank {rank}, {int(kept.sum()):,} words kept; {out.stat().st_size / 1e6:.2f} MB; "
          f"tokenising {tokenised:.0f} s, total {time.perf_counter() - started:.0f} s; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return out
