"""The model's part in predictions: where one is loaded, the dictionary's completions are ranked
again with the model's score given the left context, as a second list after the dictionary's,
off the key path and cancelled by the next key (conversion/suggest.py, FusedConverter,
LiveService.request, UpdateKind.SUGGESTIONS)."""

from __future__ import annotations

import math
import threading
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.conversion.suggest import MODEL_MARGIN, NATS_AS_COST, blended
from karukan_engine.core.types import Completion, ConversionRequest, Source
from karukan_engine.dictionary.system import DEFAULT_DIR

_pools = st.lists(st.tuples(st.integers(0, 20000), st.floats(0, 50, allow_nan=False)),
                  min_size=0, max_size=10)


@settings(max_examples=200, deadline=None)
@given(_pools, st.sampled_from([0.0, 300.0, MODEL_MARGIN, math.inf]))
def test_blended_reorders_only_what_is_near_the_best_cost_and_keeps_every_completion(rows, margin):
    pool = [(cost, Completion(f"w{i}", source=Source.DICTIONARY, reading=f"よみ{i}")) for i, (cost, _n) in enumerate(rows)]
    nats = [n for _c, n in rows]
    out = blended(pool, nats, margin)
    assert sorted(c.surface for c in out) == sorted(c.surface for _cost, c in pool)
    cost = {c.surface: cost for cost, c in pool}
    scores = {c.surface: cost + NATS_AS_COST * n for (cost, c), n in zip(pool, nats)}
    best = min(cost.values(), default=0)
    near = [c for c in out if cost[c.surface] <= best + margin]
    far = [c for c in out if cost[c.surface] > best + margin]
    assert out == near + far   # the model never lifts a far completion over a near one
    assert [scores[c.surface] for c in near] == sorted(scores[c.surface] for c in near)
    assert [cost[c.surface] for c in far] == sorted(cost[c.surface] for c in far)
    if math.isinf(margin):   # unbounded: the whole pool by the blend (the rule before issue 30)
        assert [scores[c.surface] for c in out] == sorted(scores.values())
    # The same view of every completion leaves the dictionary's order (ties: as listed).
    dictionary_order = [c for _i, (_cost, c) in sorted(enumerate(pool), key=lambda t: (t[1][0], t[0]))]
    assert blended(pool, [1.0] * len(pool), margin) == dictionary_order


# --- with a real (tiny) model ------------------------------------------------------------------

llama = pytest.importorskip("llama_cpp")
needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

READINGS = ["かい", "きょう", "しりょ", "あり", "てん", "せん", "こう", "とう"]


@pytest.fixture
def fused(model, system, tmp_path):
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.lattice.converter import LatticeConverter

    base = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    return FusedConverter(base, [ModelSlot(model, "tiny")], lexicon=system)


def _by_the_model(model, system, reading: str, context: str) -> list[str]:
    """What the model's ranking should show, computed here from the model's scores."""
    from karukan_engine.conversion.suggest import DICTIONARY_LIMIT, model_pool

    pool = model_pool(reading, [], system)
    nats = [model.score(c.reading, context, c.surface) * len(unicodedata.normalize("NFKC", c.surface))
            for _cost, c in pool]
    return [c.surface for c in blended(pool, nats)][:DICTIONARY_LIMIT]


@needs_dictionary
def test_the_models_ranking_is_the_dictionarys_pool_reordered_by_its_scores(fused, model, system):
    changed = 0
    for reading in READINGS:
        request = ConversionRequest(reading, "会議の")
        plain = [c.surface for c in fused.suggestions(request)]
        refined = fused.refined_suggestions(request)
        assert refined is not None
        assert [c.surface for c in refined] == _by_the_model(model, system, reading, "会議の")
        assert all(isinstance(c, Completion) and c.reading.startswith(reading) for c in refined)
        changed += [c.surface for c in refined] != plain
    assert changed, "the model changed no list: the test shows nothing"


@needs_dictionary
def test_learned_completions_stay_first(fused):
    fused.record([("かいしゃいん", "会社員")])
    refined = fused.refined_suggestions(ConversionRequest("かい", ""))
    assert refined[0].surface == "会社員" and refined[0].source == Source.LEARNING


@needs_dictionary
def test_a_newer_key_or_the_budget_stops_the_scoring(fused):
    from karukan_engine.scheduling.scheduler import JobContext, Priority

    request = ConversionRequest("かい", "")
    cancelled = JobContext("ctx", 1, Priority.SUGGESTION, None)
    cancelled._cancel.set()
    assert fused.refined_suggestions(request, 6, cancelled) is None
    spent = JobContext("ctx", 1, Priority.SUGGESTION, time.monotonic() - 1)
    assert fused.refined_suggestions(request, 6, spent) is None


@needs_dictionary
def test_the_models_list_follows_the_dictionarys_and_a_newer_key_drops_it(fused):
    """Through the live service: first the dictionary's list, then (when it differs) the
    model's, both for the same event; a key typed before the model's job runs drops it."""
    from karukan_engine.live.live_service import LiveService, UpdateKind

    service = LiveService(fused, suggestion_delay_s=0.0)
    try:
        reading = next(r for r in READINGS
                       if [c.surface for c in fused.refined_suggestions(ConversionRequest(r, "会議の"))]
                       != [c.surface for c in fused.suggestions(ConversionRequest(r, "会議の"))])
        got: list = []
        arrived = threading.Event()

        def deliver(update):
            got.append(update)
            if len(got) == 2:
                arrived.set()

        epoch = service.begin("a")
        service.request(UpdateKind.SUGGESTIONS, "a", epoch, ConversionRequest(reading, "会議の"), deliver)
        assert arrived.wait(30)
        first, second = got
        assert first.epoch == second.epoch == epoch and first.reading == second.reading == reading
        assert [c.surface for c in first.suggestions] == [c.surface for c in fused.suggestions(ConversionRequest(reading, "会議の"))]
        assert [c.surface for c in second.suggestions] == [c.surface for c in fused.refined_suggestions(ConversionRequest(reading, "会議の"))]

        # A newer key right after the dictionary's list: the model's never comes.
        dropped: list = []
        gate = threading.Event()

        def deliver_then_type(update):
            dropped.append(update)
            service.begin("b")          # the next key, before the model's job can run
            gate.set()

        epoch = service.begin("b")
        service.request(UpdateKind.SUGGESTIONS, "b", epoch, ConversionRequest(reading, "会議の"), deliver_then_type)
        assert gate.wait(30)
        time.sleep(0.5)
        assert len(dropped) == 1
    finally:
        service.shutdown()


@needs_dictionary
def test_karukan_keys_shows_the_models_ranking_at_once(fused):
    """Without a loop (the CLI), the session asks for the model's ranking synchronously."""
    from karukan_engine.config import Config, SessionSettings
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    reading, romaji = next((r, k) for r, k in (("かい", "kai"), ("きょう", "kyou"), ("せん", "senn"), ("こう", "kou"))
                           if [c.surface for c in fused.refined_suggestions(ConversionRequest(r, ""))]
                           != [c.surface for c in fused.suggestions(ConversionRequest(r, ""))])
    session = Session(fused, Config(session=SessionSettings(live_conversion=False)))
    for _label, keysym, mods in parse_keys(romaji):
        view = session.process_key(keysym, mods)
    expected = [c.surface for c in fused.refined_suggestions(ConversionRequest(reading, "")) if c.surface != reading]
    assert [item.text for item in view.suggestions.items] == expected
