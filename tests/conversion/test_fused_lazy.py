"""Space with a model loaded: the fused converter's segments build their candidate lists only
when they are read (as the lattice converter's do), and weights that give the model no say
make Space call no model at all."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.config import Config, LearningSettings, SessionSettings  # noqa: E402
from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from tools.fusion_fit import NO_MODEL_SAY  # noqa: E402
from karukan_engine.core.types import ConversionRequest, LazyCandidates, Segment  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.session import Session, State  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

READINGS = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "わたしのなまえはなかのです"]
# Weights that give the model no say in the ranking (tools/fusion_fit.NO_MODEL_SAY).
NO_SAY = ConversionSettings(weights=NO_MODEL_SAY)
# Default weights: the model's NLL and candidates count.
SAY = ConversionSettings(chunk_chars=8, space_budget_ms=float("inf"))   # all of the model work, always


def fused_converter(system, model, tmp_path, conversion: ConversionSettings) -> FusedConverter:
    base = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    return FusedConverter(base, [ModelSlot(model, "tiny")], conversion, lexicon=system)


def session_for(fused: FusedConverter) -> Session:
    # Live conversion only where the model has no say: elsewhere the tiny model would refine
    # every typed key synchronously (no scheduler here), which Space does not need.
    live = fused.shared.model_never_wins()
    return Session(fused, Config(session=SessionSettings(live_conversion=live),
                                 learning=LearningSettings(enabled=False)))


def keys(session: Session, text: str):
    view = None
    for _, keysym, mods in parse_keys(text):
        view = session.process_key(keysym, mods)
    return view


class ModelCalls:
    """Counts every way the converter can ask the model for work."""

    def __init__(self, monkeypatch, fused: FusedConverter, model) -> None:
        self.calls: list[str] = []
        for owner, name in ((fused.slots[0], "greedy"), (model, "beam"), (model, "score_many"),
                            (fused.ranking, "model_candidates")):
            real = getattr(owner, name)
            monkeypatch.setattr(owner, name, self._counting(name, real))

    def _counting(self, name, real):
        def call(*args, **kwargs):
            self.calls.append(name)
            return real(*args, **kwargs)
        return call


@pytest.mark.parametrize("conversion", [NO_SAY, SAY], ids=["no-say", "say"])
def test_space_builds_only_the_focused_segments_list(system, model, tmp_path, monkeypatch, conversion):
    fused = fused_converter(system, model, tmp_path, conversion)
    converted: list[list[Segment]] = []
    real_convert = fused.convert
    monkeypatch.setattr(fused, "convert", lambda request: converted.append(real_convert(request)) or converted[-1])
    session = session_for(fused)
    view = keys(session, "kyouhaiitenkidesune<space>")
    assert session.state is State.CONVERSION and view.candidates is not None
    segments = converted[-1]
    assert len(segments) > 1
    assert all(isinstance(s.candidates, LazyCandidates) for s in segments)
    # the view shows the first segment's page: only its list was built
    assert [s.candidates.computed for s in segments] == [True] + [False] * (len(segments) - 1)
    shown = [c.text for c in view.candidates.items]
    assert shown == [c.surface for c in segments[0].candidates][:len(shown)]
    keys(session, "<Right>")
    assert segments[1].candidates.computed and not any(s.candidates.computed for s in segments[2:])


def test_space_asks_the_model_nothing_when_the_weights_give_it_no_say(system, model, tmp_path, monkeypatch):
    fused = fused_converter(system, model, tmp_path, NO_SAY)
    assert fused.shared.model_never_wins()
    session = session_for(fused)
    counted = ModelCalls(monkeypatch, fused, model)
    keys(session, "kyouhaiitenkidesune")
    typed = list(counted.calls)
    view = keys(session, "<space>")
    assert session.state is State.CONVERSION
    assert "".join(span.text for span in view.preedit) == "今日はいい天気ですね"
    # the dictionary fills the page, so the model's candidates could not show: none are made
    assert typed == [] and counted.calls == []


def test_space_with_a_model_say_still_weighs_the_models_candidates(system, model, tmp_path, monkeypatch):
    fused = fused_converter(system, model, tmp_path, SAY)
    session = session_for(fused)
    keys(session, "kyouhaiitenkidesune")
    counted = ModelCalls(monkeypatch, fused, model)
    keys(session, "<space>")
    assert "model_candidates" in counted.calls and "score_many" in counted.calls


def test_an_nll_no_weight_reads_is_never_computed(system, model, tmp_path, monkeypatch):
    """Weights of the bundled model's shape (lattice and n-gram, no NLL weight, no gate): Space
    and live text weigh the model's candidates but make no NLL pass, which could change nothing."""
    from dataclasses import replace

    from karukan_engine.conversion.settings import FusionWeights

    weights = FusionWeights(lattice=2.0, nll=0.0, learning=1.0, unaligned=8.0, nll_total=0.0, ngram=0.1, margin=0.5)
    fused = fused_converter(system, model, tmp_path, replace(SAY, weights=weights))
    assert weights.uses_model_score and not weights.uses_nll
    assert replace(weights, confident_nll=0.05).uses_nll   # the gate reads the NLL
    counted = ModelCalls(monkeypatch, fused, model)
    fused.live(ConversionRequest(READINGS[0]))
    assert "greedy" in counted.calls and "score_many" not in counted.calls
    session = session_for(fused)
    keys(session, "kyouhaiitenkidesune<space>")
    assert session.state is State.CONVERSION
    assert "model_candidates" in counted.calls and "score_many" not in counted.calls


@pytest.fixture(scope="module")
def eager_lists(system, model, tmp_path_factory):
    """Every reading's segment lists, each read at once in order (what convert gave before its
    lists became lazy), from a converter of its own."""
    fused = fused_converter(system, model, tmp_path_factory.mktemp("eager"), SAY)
    return {r: [(s.reading, tuple(s.candidates)) for s in fused.convert(ConversionRequest(r))] for r in READINGS}


@pytest.fixture(scope="module")
def lazy_fused(system, model, tmp_path_factory):
    return fused_converter(system, model, tmp_path_factory.mktemp("lazy"), SAY)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_lazy_lists_are_the_eager_ones_whatever_order_they_are_read_in(lazy_fused, eager_lists, data):
    reading = data.draw(st.sampled_from(READINGS))
    segments = lazy_fused.convert(ConversionRequest(reading))
    order = data.draw(st.permutations(range(len(segments))))
    got: dict[int, tuple] = {}
    for index in order:
        got[index] = tuple(segments[index].candidates)
    assert [(s.reading, got[i]) for i, s in enumerate(segments)] == eager_lists[reading]
