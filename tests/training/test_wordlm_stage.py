"""The `wordlm` stage over a tiny corpus written by the test: (surface, reading) words from
fugashi and the annotated corpus's gold morphemes, held-out documents never counted."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.lm.word_ngram import UNK, WordNgram
from karukan_engine.training.wordlm import NANI_BEFORE, TYPED_READINGS, _tag_batch, build_wordlm, typed_reading, word_of

from tests.training.test_lm_text import chat_corpus, write_xz


def test_the_stage_counts_training_words_only(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    kept, secret = chat_corpus(corpus)
    write_xz(corpus / "wac_train.jsonl.xz", json.dumps({"words": [["日本", "にほん", "名詞"], ["語", "ご", "名詞"]]},
                                                       ensure_ascii=False) + "\n")
    out = build_wordlm(corpus, tmp_path / "model", processes=1, min_counts=(1, 1))
    model = WordNgram.load(out)
    words = set(model.words)
    assert "日本\tにほん" in words and "語\tご" in words            # gold morphemes
    assert "元気\tげんき" in words                                   # fugashi's words of chat
    assert not any(w.startswith(("禁", "秘密")) for w in words)      # the held-out dialogue
    assert model.word_id("日本", "にほん") != UNK
    assert model.sentence_logp([model.word_id("日本", "にほん"), model.word_id("語", "ご")]) > \
        model.sentence_logp([model.word_id("語", "ご"), model.word_id("日本", "にほん")])
    assert word_of("12", None) is None and word_of("会議", "カイギ") == "会議\tかいぎ"


def test_unidics_formal_readings_become_the_typed_ones():
    # UniDic reads 私 わたくし, 何を なんを, 明日 あす (fugashi, as the stage runs it)
    [words] = _tag_batch(["私は何を食べるの"])
    assert words[:3] == ["私\tわたし", "は\tは", "何\tなに"]
    [words] = _tag_batch(["日本語でそう言う"])
    assert words[0] == "日本\tにほん" and words[-1] == "言う\tいう"
    assert typed_reading("何", "ナン", "の", 1) == "なん"          # なんの stays
    assert typed_reading("会議", "カイギ", "を", 0) == "かいぎ"
    assert typed_reading("私", None, "", 0) is None


@given(st.sampled_from(sorted(TYPED_READINGS)), st.lists(st.integers(0, 2**32), min_size=200, max_size=200, unique=True))
def test_a_share_of_occurrences_keeps_unidics_reading(surface, salts):
    unidic, typed, keep_one_in = TYPED_READINGS[surface]
    readings = [typed_reading(surface, unidic, "", salt) for salt in salts]
    assert set(readings) <= {unidic, typed}
    assert readings.count(unidic) == (sum(salt % keep_one_in == 0 for salt in salts) if keep_one_in else 0)
    assert all(typed_reading(surface, typed, "", salt) == typed for salt in salts)   # the typed one stays


@given(st.sampled_from(sorted(NANI_BEFORE)), st.integers(0, 2**32))
def test_nani_before_particles(particle, salt):
    _, typed, keep_one_in = NANI_BEFORE[particle]
    expected = "なん" if keep_one_in and salt % keep_one_in == 0 else typed
    assert typed_reading("何", "ナン", particle, salt) == expected
