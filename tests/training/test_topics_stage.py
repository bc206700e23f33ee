"""The `topics` stage: co-occurrence counts within a window (never across sources), their
positive PMI, and the stage over a tiny corpus written by the test, whose vectors must tell
which homophone goes with which context word."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.lm.topic_vectors import TopicVectors
from karukan_engine.lm.word_ngram import WordNgram
from karukan_engine.training.topics import build_topics, cooccurrence, positive_pmi
from karukan_engine.training.wordlm import build_wordlm

from tests.training.test_lm_text import write_xz


@settings(max_examples=60, deadline=None)
@given(stream=st.lists(st.integers(0, 5), max_size=30), cut=st.integers(0, 30), window=st.integers(1, 4))
def test_counts_are_every_pair_of_different_words_within_the_window_of_one_source(stream, cut, window):
    cut = min(cut, len(stream))
    starts = np.array([0, cut], dtype=np.int64)
    counts = cooccurrence(np.array(stream, dtype=np.int32), starts, 6, window).toarray()
    expected = np.zeros((6, 6))
    for i, j in itertools.combinations(range(len(stream)), 2):
        same_source = (i < cut) == (j < cut)
        if j - i <= window and same_source and stream[i] != stream[j]:
            expected[stream[i], stream[j]] += 1
            expected[stream[j], stream[i]] += 1
    assert np.array_equal(counts, expected)


def test_positive_pmi_follows_its_formula_and_drops_rare_pairs():
    from scipy import sparse

    counts = np.array([[0, 4, 1], [4, 0, 2], [1, 2, 0]], dtype=float)
    pmi, marginal = positive_pmi(sparse.csr_matrix(counts), min_pair=2, smoothing=0.75)
    kept = np.where(counts >= 2, counts, 0)
    assert marginal.tolist() == kept.sum(axis=1).tolist()
    smoothed = marginal ** 0.75
    p = smoothed / smoothed.sum()
    expected = math.log(4 / kept.sum()) - math.log(p[0]) - math.log(p[1])
    dense = pmi.toarray()
    assert dense[0, 1] == pytest.approx(max(expected, 0.0))
    assert dense[0, 2] == 0.0      # seen once: no PMI
    assert np.allclose(dense, dense.T) and (dense >= 0).all()


def test_the_stage_learns_which_homophone_keeps_which_company(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path / "work"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sea = ["船で長い航海に出た", "船の航海は長い", "港から船が航海に出る", "海を船で航海する"]
    film = ["映画が公開された", "新しい映画の公開日", "映画館で公開される", "映画の公開を待つ"]
    filler = ["今日は天気がいい", "明日は雨が降る", "駅まで歩いて行く", "本を読んで寝る"]
    lines = [line for group in zip(sea, filler, film, filler) for line in group] * 3
    write_xz(corpus / "tatoeba.txt.xz", "\n".join(lines) + "\n")
    model_dir = tmp_path / "model"
    build_wordlm(corpus, model_dir, processes=1, min_counts=(1, 1))
    words = WordNgram.load(model_dir / "word-3gram.npz")
    out = build_topics(corpus, model_dir, word_lm=model_dir / "word-3gram.npz", processes=1, window=3, rank=6,
                       generic=0, min_word=1, force=True)
    again = build_topics(corpus, tmp_path / "again", word_lm=model_dir / "word-3gram.npz", processes=1, window=3,
                         rank=6, generic=0, min_word=1, force=True)
    assert out.read_bytes() == again.read_bytes()   # reproducible (and the cached stream is reused)
    vectors = TopicVectors.load(out, digest=words.vocabulary_digest)

    def nats(word: str, reading: str, context: str) -> float:
        ctx = vectors.rows_of([words.surface_id(context)])
        return float(vectors.associations([[words.word_id(word, reading)]], ctx)[0])

    assert nats("航海", "こうかい", "船") > nats("公開", "こうかい", "船")
    assert nats("公開", "こうかい", "映画") > nats("航海", "こうかい", "映画")
    assert vectors.rows_of([words.word_id("は", "は")]).size == 0   # not a content word
    # words seen fewer than min_word times get no vector
    rare = build_topics(corpus, tmp_path / "rare", word_lm=model_dir / "word-3gram.npz", processes=1, window=3,
                        rank=6, generic=0, min_word=10, force=True)
    counts = TopicVectors.load(rare).rows_of(np.arange(len(words.words)))
    assert 0 < counts.size < vectors.rows_of(np.arange(len(words.words))).size


def test_no_corpus_is_a_clear_error_and_a_built_file_is_kept_without_force(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="--corpus"):
        build_topics(None, tmp_path)
    built = tmp_path / "topic-vectors.npz"
    built.write_bytes(b"kept")
    assert build_topics(tmp_path, tmp_path) == built and built.read_bytes() == b"kept"
    assert "--force rebuilds it" in capsys.readouterr().out
