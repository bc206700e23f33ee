"""karukan_engine/lm/char_ngram.py: pruning, the compact file and its failures (the counting and
the exact scores are checked in tests/test_ngram_baseline.py)."""

import math

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
    assert abs(score - exact) <= len(text) * LOG_STEP / 2 + 1e-6
    # Longer text never scores higher: every character's log S is <= 0.
    assert stored.score(text + "晴", context) <= score + 1e-9


PACKAGE_DATA = BUNDLED.parents[1]   # karukan_engine/data
PACKAGE_BUDGET = 30 * 1000 * 1000


@pytest.mark.skipif(not BUNDLED.is_file(), reason="bundled n-gram not built")
def test_the_bundled_ngram_loads_and_prefers_common_text():
    model = CharNgram.load(BUNDLED)
    assert model.order == 5 and len(model.chars) > 3000
    assert model.score("会議の資料を送ります") > model.score("会義の資量を贈ります")
    assert model.score("機会", "また") > model.score("機械", "また")


def test_the_package_data_fits_its_budget():
    total = sum(p.stat().st_size for p in PACKAGE_DATA.rglob("*") if p.is_file())
    assert total <= PACKAGE_BUDGET, f"package data {total / 1e6:.1f} MB > 30 MB"


def test_doctor_says_whether_the_ngram_loads(counted, tmp_path):
    from ime_frontend.doctor import ngram_check

    good = tmp_path / "lm.npz"
    counted.pruned(1).save(good)
    check = ngram_check(good)
    assert check.ok and "order 5" in check.detail
    broken = tmp_path / "broken.npz"
    broken.write_bytes(good.read_bytes()[:100])
    check = ngram_check(broken)
    assert not check.ok and "without it" in check.detail
