"""The model-only Converter (one segment, beam candidates, greedy live conversion)."""

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.core.types import ConversionRequest, Converter, check_segments
from karukan_engine.neural.background import load_in_background
from karukan_engine.neural.converter import NeuralConverter
from karukan_engine.neural.model import ModelOptions, load_model
from neural_support import tiny_model_dir


@pytest.fixture(scope="module")
def model():
    m = load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1))
    yield m
    m.close()


def test_is_a_converter_with_beam_candidates(model):
    conv = NeuralConverter(model, beam=5, max_new=8)
    assert isinstance(conv, Converter)
    req = ConversionRequest("かんじ", "")
    cands = conv.candidates(req, 5)
    expected = []
    for g in model.beam("かんじ", "", beam=5, max_new=8):
        if g.text and g.text not in expected:
            expected.append(g.text)
    assert [c.surface for c in cands] == (expected or ["かんじ"])
    assert all(c.source == "model" for c in cands)
    assert conv.live(req) == (model.greedy("かんじ", "", max_new=8).text or "かんじ")


def test_segments_cover_the_reading_and_honour_fixed_lengths(model):
    conv = NeuralConverter(model, beam=3, max_new=6)
    req = ConversionRequest("きょうはいいてんき", "", fixed_lengths=(3, 1))
    segments = conv.convert(req)
    check_segments(req.reading, segments, req.fixed_lengths)
    assert [s.reading for s in segments] == ["きょう", "は", "いいてんき"]
    whole = conv.convert(ConversionRequest("かんじ"))
    assert len(whole) == 1 and whole[0].reading == "かんじ"
    assert conv.convert(ConversionRequest("")) == []


def test_falls_back_to_the_reading_while_loading_or_after_failure(tmp_path):
    failed = load_in_background(str(tmp_path / "missing.gguf"))
    failed._done.wait(30)
    conv = NeuralConverter(failed)
    req = ConversionRequest("かんじ")
    assert [c.surface for c in conv.candidates(req, 3)] == ["かんじ"]
    assert conv.live(req) == "かんじ"
    assert conv.convert(req)[0].best.surface == "かんじ"


def test_bad_inputs_do_not_break_it(model):
    conv = NeuralConverter(model, beam=200, max_new=4)
    assert conv.candidates(ConversionRequest("かんじ"), 0) == []
    long = ConversionRequest("あ" * 1000)
    assert [c.surface for c in conv.candidates(long, 3)] == [long.reading]  # too long: fallback
    assert conv.live(long) == long.reading
