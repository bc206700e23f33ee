"""The n-gram's kana continuations (karukan_engine/lm/continuation.py), which predictions offer:
checked against the n-gram's own scores on a tiny corpus, and as a property over texts."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.lm.char_ngram import CharNgram
from karukan_engine.lm.continuation import ENDS, KANA, MAX_CHARS, MIN_CHARS, Continuer

CORPUS = ["ありがとうございます", "ありがとうございます。", "ありがとうございました", "よろしくお願いします",
          "よろしくお願いします！", "今日はいい天気ですね", "明日は雨ですね", "そうですね", "そうなんです",
          "お疲れ様です", "お世話になっております", "お世話になっております。"] * 3


def continuer() -> Continuer:
    return Continuer(CharNgram.count(CORPUS))


def reference_log_p(ngram: CharNgram, before: str, continuation: str) -> float:
    """log P(continuation, then a sentence end or one of ENDS | before), from the n-gram's own
    scoring (a newline is its sentence end)."""
    after = before + continuation
    ends: dict[int, str] = {}   # one character per id: NFKC folds ！ into !
    for e in ["\n", *ENDS]:
        ends.setdefault(int(ngram.ids_of(e)[0]), e)
    ends.pop(0, None)           # characters the n-gram never saw
    end = np.logaddexp.reduce([ngram.score(e, after) for e in ends.values()])
    return ngram.score(continuation, before) + float(end)


def test_a_phrase_the_corpus_always_finishes_is_continued():
    best = continuer().continuations("ありがとう")[0]
    assert best.text.startswith("ございま") and best.probability > 0.05
    assert continuer().continuations("よろしくお願い")[0].text == "します"


def test_the_score_is_the_ngrams_own():
    c = continuer()
    for text in ("ありがとう", "そう", "お世話になって"):
        for found in c.continuations(text, limit=3):
            assert math.isclose(found.log_p, reference_log_p(c.ngram, text, found.text), abs_tol=1e-9)


def test_nothing_to_continue_gives_nothing():
    assert continuer().continuations("") == []


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from("ありがとうよろしくお願いそう今日天気です世話になって明日雨"), min_size=1, max_size=8),
       context=st.sampled_from(["", "はい、", "昨日は"]),
       limit=st.integers(1, 4), max_chars=st.integers(MIN_CHARS, MAX_CHARS))
def test_continuations_are_kana_best_first_and_scored_as_the_ngram_scores_them(text, context, limit, max_chars):
    c = continuer()
    found = c.continuations(text, context, max_chars=max_chars, limit=limit)
    assert len(found) <= limit
    assert [f.log_p for f in found] == sorted((f.log_p for f in found), reverse=True)
    assert len({f.text for f in found}) == len(found)
    for f in found:
        assert MIN_CHARS <= len(f.text) <= max_chars and set(f.text) <= set(KANA)
        assert f.log_p <= 1e-9 and math.isclose(f.log_p, reference_log_p(c.ngram, context + text, f.text),
                                                abs_tol=1e-9)
