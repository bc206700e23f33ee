"""karukan_engine/lm/char_ngram.py: Kneser-Ney scores against a plain-Python reference, pruning,
the compact file and its failures (the counting and stupid backoff's exact scores are checked in
tests/lm/test_ngram_baseline.py)."""

import math
import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.lm.char_ngram import BUNDLED, LOG_STEP, CharNgram, CharNgramError

TEXT = ["今日は晴れ", "今日は雨", "明日は晴れ", "今日は晴れです", "機会があれば", "機会を待つ", "機械を直す"]


@pytest.fixture(scope="module")
def counted():
    return CharNgram.count(TEXT)


def test_a_saved_model_scores_as_counted_within_the_quantisation(counted, tmp_path):
    path = tmp_path / "lm.npz"
    counted.pruned(1).save(path)
    loaded = CharNgram.load(path)
    for text, context in [("今日は", ""), ("晴れ", "今日は"), ("機会を", "。"), ("猫", ""), ("", "")]:
        exact = counted.score(text, context)
        assert abs(loaded.score(text, context) - exact) <= len(text) * LOG_STEP / 2 + 1e-6
    assert not path.with_name("lm.npz.partial").exists()


def test_pruned_ngrams_back_off_to_the_shorter_history(counted):
    pruned = counted.pruned(2)
    # 日は晴れ is counted twice, は晴れで once: with count >= 2, で after 今日は晴れ backs off.
    assert pruned.distinct()[5] < counted.distinct()[5]
    assert pruned.score("晴れ", "今日は") == pytest.approx(counted.score("晴れ", "今日は"))
    assert pruned.score("です", "今日は晴れ") < counted.score("です", "今日は晴れ")
    assert pruned.score("機会", "") > pruned.score("機械", "")   # seen twice against once


def test_only_a_counted_model_can_be_pruned(counted, tmp_path):
    counted.save(tmp_path / "lm.npz")
    with pytest.raises(ValueError):
        CharNgram.load(tmp_path / "lm.npz").pruned(2)


def test_a_damaged_missing_or_foreign_file_is_a_clear_error(counted, tmp_path):
    good = tmp_path / "lm.npz"
    counted.save(good)
    with pytest.raises(CharNgramError, match="not a readable"):
        CharNgram.load(tmp_path / "missing.npz")
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CharNgramError):
        CharNgram.load(cut)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x00" * 100)
    with pytest.raises(CharNgramError):
        CharNgram.load(junk)
    with np.load(good) as data:
        arrays = dict(data)
    for name, value in (("format", np.array(99)), ("unigram", arrays["unigram"][:3]),
                        ("delta3", -np.abs(arrays["delta3"]) - 1)):
        bad = tmp_path / f"bad-{name}.npz"
        np.savez_compressed(bad, **{**arrays, name: value})
        with pytest.raises(CharNgramError):
            CharNgram.load(bad)


@pytest.fixture(scope="module")
def stored(counted, tmp_path_factory):
    """The counted model after a trip through its file."""
    path = tmp_path_factory.mktemp("lm") / "lm.npz"
    counted.pruned(1).save(path)
    return CharNgram.load(path)


@settings(max_examples=60, deadline=None)
@given(st.text("今日は晴れ雨機会械を猫", max_size=8), st.text("今日は。", max_size=6))
def test_scores_are_finite_log_values_and_survive_the_file(counted, stored, text, context):
    exact, score = counted.score(text, context), stored.score(text, context)
    assert math.isfinite(score) and score <= 0.0
    # Each character's log P is stored to half a step, and so is each of the backoff weights of
    # orders 2..order-1 (order 1's stay float32) it may add: up to order - 1 roundings.
    assert abs(score - exact) <= len(text) * (stored.order - 1) * LOG_STEP / 2 + 1e-5
    # Longer text never scores higher: every character's log P is <= 0.
    assert stored.score(text + "晴", context) <= score + 1e-9


PACKAGE_DATA = BUNDLED.parents[1]   # karukan_engine/data
PACKAGE_BUDGET = 60 * 1000 * 1000   # design.md: dictionary, models, language model, tables


@pytest.mark.skipif(not BUNDLED.is_file(), reason="bundled n-gram not built")
def test_the_bundled_ngram_loads_and_prefers_common_text():
    model = CharNgram.load(BUNDLED)
    assert model.order == 5 and len(model.chars) > 3000
    assert model.score("会議の資料を送ります") > model.score("会義の資量を贈ります")
    assert model.score("機会", "また") > model.score("機械", "また")


def test_the_package_data_fits_its_budget():
    total = sum(p.stat().st_size for p in PACKAGE_DATA.rglob("*") if p.is_file())
    assert total <= PACKAGE_BUDGET, f"package data {total / 1e6:.1f} MB > 60 MB"


def test_doctor_says_whether_the_ngram_loads(counted, tmp_path):
    from ime_frontend.doctor import ngram_check

    good = tmp_path / "lm.npz"
    counted.pruned(1).save(good)
    check = ngram_check(good)
    assert check.ok and "order 5, kneser-ney" in check.detail
    broken = tmp_path / "broken.npz"
    broken.write_bytes(good.read_bytes()[:100])
    check = ngram_check(broken)
    assert not check.ok and "without it" in check.detail


# --- Kneser-Ney (what ships) ------------------------------------------------------------------

def reference_kneser_ney(sentences, text, context="", order=5, open_start=False):
    """Interpolated modified Kneser-Ney the slow, obvious way (Chen & Goodman 1998), over the
    same framing as the counting: every sentence is B s B, n-grams within it. open_start: no B
    before the context (the text before it is unknown)."""
    sentences = [s for s in (unicodedata.normalize("NFKC", s) for s in sentences) if s]
    vocabulary = {ch for s in sentences for ch in s}
    size = len(vocabulary) + 2                      # characters, UNK, the boundary

    def symbols(s):
        return ["B" if ch == "\n" else ch if ch in vocabulary else "UNK" for ch in s]

    raw = Counter()
    for s in sentences:
        seq = ["B"] + symbols(s) + ["B"]
        for k in range(1, order + 1):
            for i in range(1 if k == 1 else 0, len(seq) - k + 1):
                raw[tuple(seq[i:i + k])] += 1
    before = Counter(gram[1:] for gram in raw if len(gram) >= 2)   # distinct symbols preceding

    def adjusted(gram):
        if len(gram) == order or (len(gram) >= 2 and gram[0] == "B"):
            return raw[gram]
        return before[gram] or raw[gram]

    def discounts(k):
        values = [adjusted(g) for g in raw if len(g) == k]
        n1, n2, n3, n4 = (values.count(j) for j in (1, 2, 3, 4))
        y = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5
        ds = [1 - 2 * y * n2 / n1 if n1 else 0.5, 2 - 3 * y * n3 / n2 if n2 else 1.0,
              3 - 4 * y * n4 / n3 if n3 else 1.5]
        return [min(max(d, 0.1), j) for j, d in zip((1, 2, 3), ds)]

    D = {k: discounts(k) for k in range(1, order + 1)}

    def discount(k, a):
        return 0.0 if a == 0 else D[k][min(a, 3) - 1]

    def probability(history, w):
        k = len(history) + 1
        continuations = [g for g in raw if len(g) == k and g[:-1] == history]
        if k == 1:
            total = sum(adjusted(g) for g in continuations)
            kept = sum(discount(1, adjusted(g)) for g in continuations)
            return max(adjusted((w,)) - discount(1, adjusted((w,))), 0) / total + kept / total / size
        lower = probability(history[1:], w)
        total = sum(adjusted(g) for g in continuations)
        if not total:
            return lower
        kept = sum(discount(k, adjusted(g)) for g in continuations)
        a = adjusted(history + (w,))
        return (a - discount(k, a)) / total * (a > 0) + kept / total * lower

    seq = ([] if open_start else ["B"]) + symbols(context)
    start = max([i for i, symbol in enumerate(seq) if symbol == "B"], default=0)
    seq = seq[max(start, len(seq) - (order - 1)):]
    log_p = 0.0
    for ch in symbols(text):
        log_p += math.log(probability(tuple(seq[-(order - 1):]) if order > 1 else (), ch))
        seq.append(ch)
    return log_p


kn_sentence = st.text(st.sampled_from("ab日本\u3000"), min_size=0, max_size=8)


@settings(max_examples=120, deadline=None)
@given(st.lists(kn_sentence, min_size=1, max_size=6).filter(lambda ss: any(ss)),
       st.text(st.sampled_from("ab日z"), max_size=6), st.text(st.sampled_from("ab本z\n"), max_size=6),
       st.integers(1, 5))
def test_kneser_ney_matches_the_plain_python_reference(sentences, text, context, order):
    model = CharNgram.count(sentences, order=order)
    assert model.smoothing == "kneser-ney"
    assert model.score(text, context) == pytest.approx(
        reference_kneser_ney(sentences, text, context, order), rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.lists(kn_sentence, min_size=1, max_size=6).filter(lambda ss: any(ss)),
       st.lists(st.tuples(st.text(st.sampled_from("ab日z\n"), max_size=6),
                          st.sampled_from(["", "a", "日本", "ab\nb", "zz日"])), min_size=1, max_size=8),
       st.integers(1, 5), st.booleans())
def test_scoring_pairs_together_is_scoring_each_alone(sentences, pairs, order, open_start):
    """score_many builds every pair's windows in one pass (a context shared by several pairs is
    worked out once): each pair still gets the plain reference's log P, never its neighbour's;
    with open_start, a context's first character (or the text's, with none) starts no sentence."""
    model = CharNgram.count(sentences, order=order)
    together = model.score_many(pairs, open_start=open_start)
    for (text, context), value in zip(pairs, together):
        assert value == pytest.approx(reference_kneser_ney(sentences, text, context, order, open_start),
                                      rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(kn_sentence, min_size=1, max_size=6).filter(lambda ss: any(ss)),
       st.text(st.sampled_from("ab日本z"), max_size=4), st.booleans())
def test_kneser_ney_is_a_distribution_after_any_history(sentences, history, pruned):
    """P(. | h) sums to 1 over every id, also where the history backs off; pruning only moves
    mass away (the pruned n-grams' share is not handed back)."""
    model = CharNgram.count(sentences)
    if pruned:
        model = model.pruned(2)
    ids = np.arange(model.base)
    h = model.ids_of(history)[-(model.order - 1):] if history else np.zeros(0, dtype=np.int64)
    windows = np.zeros((len(ids), model.order), dtype=np.int64)
    windows[:, model.order - 1 - len(h):model.order - 1] = h
    windows[:, -1] = ids
    total = np.exp(model.window_scores(windows, np.full(len(ids), len(h) + 1))).sum()
    if pruned:
        assert 0 < total <= 1 + 1e-9
    else:
        assert total == pytest.approx(1.0)


def test_kneser_ney_prefers_what_the_context_continues():
    model = CharNgram.count(["機会があれば行きます", "機械を直します", "機会を待つ", "機械を作る工場"])
    assert model.score("があれば", "機会") > model.score("があれば", "機械")
    assert model.score("を直す", "機械") > model.score("を直す", "機会")
    # A character counted in many contexts is likelier after an unseen one than a frequent
    # character seen in one context only (the continuation counts, Kneser-Ney's point).
    spread = CharNgram.count(["あx", "いx", "うx", "えx", "おy", "おy", "おy", "おy"])
    assert spread.score("x", "か") > spread.score("y", "か")


def test_a_kneser_ney_file_keeps_its_backoffs(counted, tmp_path):
    path = tmp_path / "lm.npz"
    counted.pruned(2).save(path)
    loaded = CharNgram.load(path)
    assert loaded.smoothing == "kneser-ney"
    for text, context in [("晴れ", "今日は"), ("です", "今日は晴れ"), ("猫", "今日"), ("機械を", "")]:
        exact = counted.pruned(2).score(text, context)
        # each character: its log P and up to order - 1 backoff weights, each quantised
        assert abs(loaded.score(text, context) - exact) <= len(text) * 5 * LOG_STEP / 2 + 1e-6
    with np.load(path) as data:
        arrays = dict(data)
    for name, value in (("backoff3", arrays["backoff3"][:-1]), ("backoff1", np.abs(arrays["backoff1"]) + 1),
                        ("smoothing", np.array("witten-bell"))):
        bad = tmp_path / f"bad-{name}.npz"
        np.savez_compressed(bad, **{**arrays, name: value})
        with pytest.raises(CharNgramError):
            CharNgram.load(bad)


def test_a_format_1_file_still_loads_as_stupid_backoff(tmp_path):
    stupid = CharNgram.count(TEXT, smoothing="stupid")
    path = tmp_path / "old.npz"
    stupid.save(path)
    with np.load(path) as data:
        arrays = {k: v for k, v in data.items() if k != "smoothing"}
    np.savez_compressed(path, **{**arrays, "format": np.array(1)})
    loaded = CharNgram.load(path)
    assert loaded.smoothing == "stupid"
    assert abs(loaded.score("晴れ", "今日は") - stupid.score("晴れ", "今日は")) <= 2 * LOG_STEP / 2 + 1e-6
