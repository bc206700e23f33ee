"""Character n-gram counting and stupid-backoff scores, the baseline's smoothing
(karukan_engine/lm/char_ngram.py), on tiny made-up text, checked by hand and against a
plain-Python reference; benchmarks/ngram_baseline.py's rerank and lambda fit. Kneser-Ney, which
ships, is checked in tests/lm/test_char_ngram.py."""

import importlib.util
import json
import math
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.evaluation.metrics import EvalItem
from karukan_engine.lm.char_ngram import STUPID, CharNgram
from karukan_engine.training import ngram as ngram_stage

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "ngram_baseline.py"


def load_script():
    spec = importlib.util.spec_from_file_location("ngram_baseline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


nb = load_script()
ALPHA = 0.4


def reference_score(sentences, text, context="", order=5, alpha=ALPHA):
    """Stupid backoff the slow, obvious way: every sentence is B s B, n-grams within it."""
    sentences = [unicodedata.normalize("NFKC", s) for s in sentences]
    vocabulary = {ch for s in sentences for ch in s}

    def symbols(s):
        return ["B" if ch == "\n" else ch if ch in vocabulary else "UNK" for ch in s]

    grams = Counter()
    for s in sentences:
        if not s:
            continue
        seq = ["B"] + symbols(s) + ["B"]
        for k in range(1, order + 1):
            for i in range(1 if k == 1 else 0, len(seq) - k + 1):
                grams[tuple(seq[i:i + k])] += 1
    history_count = Counter()
    for gram, c in grams.items():
        if len(gram) > 1:
            history_count[gram[:-1]] += c
    total = sum(c for g, c in grams.items() if len(g) == 1)
    size = len(vocabulary) + 2
    seq = ["B"] + symbols(context)
    start = max(i for i, symbol in enumerate(seq) if symbol == "B")   # the last sentence start
    seq = seq[max(start, len(seq) - (order - 1)):]
    log_s = 0.0
    for ch in symbols(text):
        seq.append(ch)
        window = seq[-order:]
        m = len(window)
        for k in range(m, 1, -1):
            gram = tuple(window[-k:])
            if grams[gram]:
                log_s += math.log(alpha ** (m - k) * grams[gram] / history_count[gram[:-1]])
                break
        else:
            log_s += math.log(alpha ** (m - 1) * (grams[(ch,)] + 1) / (total + size))
    return log_s


def test_scores_by_hand():
    model = CharNgram.count(["今日は晴れ", "今日は雨", "明日は晴れ"], smoothing=STUPID)
    # S(今 | B) = 2/3, then 日 and は always follow: log 2/3.
    assert model.score("今日は") == pytest.approx(math.log(2 / 3))
    # After B今日は: 晴 once and 雨 once.
    assert model.score("晴れ", "今日は") == pytest.approx(math.log(1 / 2))
    assert model.score("晴れ", "明日は") == pytest.approx(0.0)
    # An unseen character: alpha per dropped history symbol (here the boundary), then the
    # add-one unigram over 17 predicted symbols and 9 ids (7 characters, UNK, boundary).
    assert model.score("猫") == pytest.approx(math.log(ALPHA * 1 / (17 + 9)))
    assert model.score("") == 0.0
    assert model.distinct()[1] == 8   # 7 characters and the sentence end


def test_seen_continuation_beats_unseen_one():
    model = CharNgram.count(["機会があれば行きます", "機械を直します", "機会を待つ"], smoothing=STUPID)
    assert model.score("機会", "また") > model.score("機械", "また")
    assert model.score("機械を直", "") > model.score("機会を直", "")
    # Context matters: が follows 機会, never 機械.
    assert model.score("があれば", "機会") > model.score("があれば", "機械")


def test_start_of_text_is_a_context_of_its_own():
    model = CharNgram.count(["あい", "うあ", "うあ", "うあ"], smoothing=STUPID)
    # あ mostly follows う inside a sentence, but a text starting with あ starts like あい.
    assert model.score("い", "あ") == pytest.approx(0.0)        # B あ → い
    assert model.score("あ") == pytest.approx(math.log(1 / 4))  # S(あ | B) = 1/4
    assert model.score("あ", "う") == pytest.approx(0.0)        # B う → あ


def test_nfkc_and_newlines():
    model = CharNgram.count(["ＡＢＣ", "abc"], smoothing=STUPID)
    assert model.score("ABC") == model.score("ＡＢＣ")
    # A newline in the context is a sentence start.
    assert model.score("A", "xyz\n") == pytest.approx(model.score("A"))


def test_vocabulary_cap_maps_rare_characters_to_unk():
    model = CharNgram.count(["ああああい", "あう"], max_vocabulary=1, smoothing=STUPID)
    assert len(model.chars) == 1
    assert model.score("あい") == model.score("あう")   # い and う are both UNK
    assert np.isfinite(model.score("猫"))


alphabet = st.sampled_from("ab日本\u3000")
sentence = st.text(alphabet, min_size=0, max_size=8)


@settings(max_examples=150, deadline=None)
@given(st.lists(sentence, min_size=1, max_size=6), st.text(st.sampled_from("ab日z"), max_size=6),
       st.text(st.sampled_from("ab本z\n"), max_size=6), st.integers(1, 5))
def test_matches_the_plain_python_reference(sentences, text, context, order):
    model = CharNgram.count(sentences, order=order, smoothing=STUPID)
    assert model.score(text, context) == pytest.approx(
        reference_score(sentences, text, context, order=order), rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(sentence, min_size=1, max_size=6), st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6)),
                                                             max_size=5))
def test_scores_are_sane(sentences, pairs):
    model = CharNgram.count(sentences, smoothing=STUPID)
    scores = model.score_many(pairs)
    assert np.all(np.isfinite(scores)) and np.all(scores <= 1e-12)   # every S is in (0, 1]
    assert list(scores) == pytest.approx([model.score(t, c) for t, c in pairs])
    # The unigram level is a distribution over every id, and a seen history's counted
    # continuations make up all of its mass before any backoff.
    everything = np.arange(model.base)[:, None]
    unigram = np.exp(model.window_scores(everything, np.ones(model.base, dtype=np.int64)))
    assert unigram.sum() == pytest.approx(1.0)
    for k in range(2, model.order + 1):
        assert model.history_counts[k - 1].sum() == model.counts[k - 1].sum()


@settings(max_examples=100, deadline=None)
@given(st.lists(sentence, max_size=5), st.text(st.sampled_from("ab日本"), min_size=1, max_size=8))
def test_adding_a_sentence_with_new_histories_never_lowers_its_score(sentences, extra):
    """Adding a sentence raises (never lowers) its own score when, but for the sentence start,
    its histories were never seen: each then continues only as in the sentence (S = 1). With
    seen histories stupid backoff may lower it (next test), so that is all we claim."""
    fresh = "猫犬鳥" + extra   # 猫犬鳥 never occurs in `sentences`
    before = CharNgram.count(sentences + ["x"], smoothing=STUPID)
    after = CharNgram.count(sentences + ["x", fresh], smoothing=STUPID)
    assert after.score(fresh) >= before.score(fresh)
    if len(set(fresh)) == len(fresh):   # no repeated character: no history inside it repeats
        assert after.score(fresh[1:], fresh[0]) == pytest.approx(0.0)


def test_adding_a_sentence_can_lower_its_own_score_under_stupid_backoff():
    """Why "more text never lowers a sentence's score" is not a property of this model: for b
    after a, the backed-off α²·S(b) (about 0.032) exceeds the first count, 1 / 101."""
    sentences = ["ac"] * 100 + ["b"] * 100
    before = CharNgram.count(sentences, smoothing=STUPID).score("ab")
    after = CharNgram.count(sentences + ["ab"], smoothing=STUPID).score("ab")
    assert after < before


def test_rerank_and_fit():
    candidates = ["機会", "機械", "きかい"]
    assert nb.rerank(candidates, [-9.0, -1.0, -1.0], 0.0) == candidates
    assert nb.rerank(candidates, [-9.0, -1.0, -1.0], 1.0) == ["機械", "きかい", "機会"]
    # A tie in score keeps the dictionary's order.
    assert nb.rerank(candidates, [-2.0, -1.0, 0.0], 1.0) == candidates
    items = [EvalItem("きかい", ("機械",)), EvalItem("きかい", ("機会",))]
    lists = [candidates, candidates]
    scores = [[-9.0, -1.0, -1.0], [-1.0, -1.0, -5.0]]
    lam, by_lambda = nb.fit_lambda(items, lists, scores, grid=(0.0, 0.05, 1.0, 2.0))
    assert by_lambda[0.0] == 0.5 and by_lambda[1.0] == 1.0 and by_lambda[2.0] == 1.0
    assert lam == 1.0   # the smallest of the best


def test_a_cap_keeps_every_parts_leading_lines_in_the_same_share():
    sentences, used = ngram_stage.capped({"a": ["ab", "cd", "ef"], "b": ["gh", "ij", "kl"]}, max_chars=8)
    assert sentences == ["ab", "cd", "gh", "ij"] and used == {"a": 4, "b": 4}
