"""Predictions offer the model's continuation (issue #14, item 5): the bundled n-gram's kana
continuation of the live text joins the suggestion list, as a completion of the whole reading:
after learned completions and the dictionary's best completion (issue 30: before it, it took
first place from the word the user typed)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.config import Config, SessionSettings  # noqa: E402
from karukan_engine.conversion.fused import suggesting  # noqa: E402
from karukan_engine.core.types import Completion, ConversionRequest, Source  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402
from karukan_engine.lm.char_ngram import BUNDLED  # noqa: E402
from karukan_engine.lm.continuation import Continuer  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file() or not BUNDLED.is_file(),
                                reason="compiled dictionary or bundled n-gram not built")

# Everyday phrase openings; the n-gram is sure how some of them end.
READINGS = ["よろしくおねがい", "ありがとう", "おつかれさま", "わかり", "おせわになって", "きょうは"]


@pytest.fixture(scope="module")
def fused(model, system, tmp_path_factory):
    from karukan_engine.conversion.fused import FusedConverter, bundled_ngram
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.lattice.converter import LatticeConverter

    base = LatticeConverter(system, None, LearningStore(tmp_path_factory.mktemp("learning") / "learning.json"))
    converter = FusedConverter(base, [ModelSlot(model, "tiny")], lexicon=system, ngram=bundled_ngram())
    converter.ngram.wait(60)
    return converter


def expected_continuation(fused, request: ConversionRequest) -> Completion | None:
    text = fused.live_quick(request)
    found = Continuer(fused.ngram.wait(0)).continuations(text, request.left_context, limit=1)
    if not found or found[0].probability < suggesting.CONTINUATION_MIN_P:
        return None
    return Completion(text + found[0].text, source=Source.MODEL, reading=request.reading + found[0].text)


def test_a_sure_continuation_follows_the_learned_completions(fused):
    offered = 0
    for reading in READINGS:
        request = ConversionRequest(reading)
        expected = expected_continuation(fused, request)
        refined = fused.refined_suggestions(request) or []
        continued = [c for c in refined if c.source == Source.MODEL]
        if expected is None:
            assert continued == []
            continue
        offered += 1
        surfaces = [c.surface for c in refined]
        # nothing learned: second, after the dictionary's best (or that one, when it spells it)
        assert expected.surface in surfaces[:2]
        assert refined[0].source == Source.DICTIONARY or refined[0] == expected
        assert continued in ([expected], [])
        assert expected.reading.startswith(reading) and expected.surface.startswith(fused.live_quick(request))
    assert offered >= 2, "the n-gram continued no phrase: the test shows nothing"


def test_an_unsure_continuation_is_not_offered(fused, monkeypatch):
    monkeypatch.setattr(suggesting, "CONTINUATION_MIN_P", 1.01)
    for reading in READINGS:
        assert fused.continuations(ConversionRequest(reading)) == []


def test_learned_completions_stay_ahead_of_the_continuation(fused):
    request = ConversionRequest("よろしくおねがい")
    assert expected_continuation(fused, request) is not None
    fused.record([("よろしくおねがいいたします", "よろしくお願いいたします")])
    refined = fused.refined_suggestions(request)
    expected = expected_continuation(fused, request)
    assert refined[0].source == Source.LEARNING
    assert expected.surface in [c.surface for c in refined[1:3]]


def test_choosing_the_continuation_commits_and_learns_the_whole_phrase(fused):
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    request = ConversionRequest("おつかれさま")
    expected = expected_continuation(fused, request)
    assert expected is not None
    session = Session(fused, Config(session=SessionSettings(live_conversion=False)))
    for _label, keysym, mods in parse_keys("otukaresama"):
        view = session.process_key(keysym, mods)
    texts = [item.text for item in view.suggestions.items]
    assert expected.surface in texts
    for _label, keysym, mods in parse_keys("<tab>" * (texts.index(expected.surface) + 1) + "<return>"):
        view = session.process_key(keysym, mods)
    assert view.commit == expected.surface
    assert expected.surface in fused.base.learning.lookup(expected.reading)
