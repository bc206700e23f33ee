"""Topic vectors (lm/topic_vectors.py): the file round trip, its binding to one word n-gram
vocabulary, damaged files, and the association against its definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.lm.topic_vectors import NO_ROW, TopicVectors, TopicVectorsError, is_content


def saved(tmp_path, embedding, signs, kept=None, digest="abc123"):
    embedding = np.asarray(embedding, dtype=np.float64)
    kept = np.ones(embedding.shape[0], dtype=bool) if kept is None else np.asarray(kept)
    mean = embedding[kept].mean(axis=0)
    path = tmp_path / "topics.npz"
    TopicVectors.save(path, embedding, np.asarray(signs, dtype=np.float64), mean, kept, digest)
    return path, mean


def test_the_file_keeps_the_vectors_within_a_quantisation_step_and_only_kept_words(tmp_path):
    rng = np.random.default_rng(1)
    embedding = rng.normal(size=(12, 4))
    kept = np.arange(12) % 3 != 0
    path, mean = saved(tmp_path, embedding, [1, -1, 1, -1], kept)
    vectors = TopicVectors.load(path, digest="abc123")
    rows = vectors.rows_of(np.arange(12))
    assert rows.size == kept.sum()
    assert np.all(vectors.rows[~kept] == NO_ROW)
    step = np.abs(embedding[kept]).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(vectors.vectors[rows] - embedding[kept]) <= step / 2 + 1e-6)
    assert vectors.signs.tolist() == [1, -1, 1, -1]
    assert np.allclose(vectors.mean, mean, atol=1e-6)
    assert vectors.rows_of([-1, 99, 0]).size == 0   # out of range and unkept ids are dropped


def test_another_vocabulary_or_a_damaged_file_is_a_clear_error(tmp_path):
    path, _ = saved(tmp_path, np.eye(3), [1, 1, 1])
    with pytest.raises(TopicVectorsError, match="another word n-gram vocabulary"):
        TopicVectors.load(path, digest="ffff")
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"not a zip", data.replace(b"format", b"formax")):
        path.write_bytes(damaged)
        with pytest.raises(TopicVectorsError):
            TopicVectors.load(path)
    with pytest.raises(TopicVectorsError):
        TopicVectors.load(tmp_path / "missing.npz")
    nan = tmp_path / "nan.npz"
    TopicVectors.save(nan, np.eye(3), np.ones(3), np.full(3, np.nan), np.ones(3, bool), "abc123")
    with pytest.raises(TopicVectorsError):
        TopicVectors.load(nan)


def reference(vectors: TopicVectors, rows: list[int], context: list[int]) -> float:
    """Each word's mean PMI (e_a . D . e_b) with every other word of the text and the context,
    less its PMI with the average context, times the square root of the company's size, summed."""
    total = 0.0
    for i, row in enumerate(rows):
        company = context + rows[:i] + rows[i + 1:]
        if not company:
            continue
        own = vectors.vectors[row] * vectors.signs
        mean = np.mean([own @ vectors.vectors[c] for c in company]) - own @ vectors.mean
        total += float(mean) * len(company) ** 0.5
    return total


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), text=st.lists(st.integers(0, 7), max_size=5),
       context=st.lists(st.integers(0, 7), max_size=6))
def test_association_is_each_words_pmi_with_its_company_less_the_average(tmp_path_factory, seed, text, context):
    rng = np.random.default_rng(seed)
    path, _ = saved(tmp_path_factory.mktemp("t"), rng.normal(size=(8, 3)), rng.choice([-1.0, 1.0], size=3))
    vectors = TopicVectors.load(path)
    others = [list(reversed(text)), [], text[:1]]
    got = vectors.associations([text, *others], np.array(context, dtype=np.int64))
    # each text on its own, whatever it is batched with
    for words, value in zip([text, *others], got):
        assert value == pytest.approx(reference(vectors, words, context), rel=1e-5, abs=1e-5)


def test_content_words_have_a_kanji_or_katakana():
    assert is_content("航海") and is_content("テレビ") and is_content("見る") and is_content("々")
    assert not is_content("これ") and not is_content("ー") and not is_content("123") and not is_content("")


def test_doctor_says_whether_the_word_model_and_its_topic_vectors_load(tmp_path):
    from ime_frontend.doctor import word_model_check
    from karukan_engine.lm.kneser_ney import estimate, flatten
    from karukan_engine.lm.word_ngram import WordNgram

    words = tmp_path / "words.npz"
    WordNgram.save(words, estimate(*flatten([[3, 4], [4, 3]]), 5, order=3), ["船\tふね", "航海\tこうかい"])
    digest = WordNgram.load(words).vocabulary_digest
    good = tmp_path / "topics.npz"
    TopicVectors.save(good, np.eye(5, 2), np.ones(2), np.zeros(2), np.arange(5) >= 3, digest)
    check = word_model_check(words, good)
    assert check.ok and "topic vectors for 2 of them" in check.detail
    foreign = tmp_path / "foreign.npz"
    TopicVectors.save(foreign, np.eye(5, 2), np.ones(2), np.zeros(2), np.arange(5) >= 3, "0" * 16)
    check = word_model_check(words, foreign)
    assert not check.ok and "another word n-gram vocabulary" in check.detail
    words.write_bytes(words.read_bytes()[:50])
    check = word_model_check(words, good)
    assert not check.ok and "without it" in check.detail
