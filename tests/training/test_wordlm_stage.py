"""The `wordlm` stage over a tiny corpus written by the test: (surface, reading) words from
fugashi and the annotated corpus's gold morphemes, held-out documents never counted."""

from __future__ import annotations

import json

from karukan_engine.lm.word_ngram import UNK, WordNgram
from karukan_engine.training.wordlm import build_wordlm, word_of

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
