"""Space's first answer worked out right after a key (issue 30, Space after a burst): where that
answer is the dictionary's conversion, its segments and the first one's candidate list are
computed off the key path once the key is answered, so a Space typed right after finds them in
the converter's caches. Driven through a real Session and LiveService over the lattice converter
and over the fused converter with a tiny model whose text never comes first (the default's
weights)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, LearningSettings, SessionSettings
from karukan_engine.conversion.settings import ConversionSettings, FusionWeights
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.live.live_service import LiveLink, LiveService
from karukan_engine.session import Session, State
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import NO_REWRITERS

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

TIMEOUT_S = 20
SENTENCES = ["kaiginosiryouwookurimasu", "kyouhaiitenkidesune", "toukyouekimademachiawasewoshimashou"]


class Counted:
    """Counts the segment candidate searches of one lattice converter."""

    def __init__(self, monkeypatch, lattice: LatticeConverter) -> None:
        self.calls = 0
        real = lattice._segment_candidates

        def counted(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(lattice, "_segment_candidates", counted)


def attached(converter, warm: bool = True) -> tuple[Session, LiveService]:
    service = LiveService(converter)
    config = Config(session=SessionSettings(live_conversion=True), learning=LearningSettings(enabled=False),
                    rewriters=NO_REWRITERS)
    session = Session(converter, config)
    session.attach_live(LiveLink(service, 1, lambda update: None))
    if not warm:
        session._work.warm_space = lambda request: None
    return session, service


def typed(session: Session, service: LiveService, keys: str):
    view = None
    for _, keysym, mods in parse_keys(keys):
        view = session.process_key(keysym, mods)
    assert service.scheduler.idle(TIMEOUT_S)
    return view


def shown(view) -> tuple:
    return ("".join(span.text for span in view.preedit), tuple(item.text for item in view.candidates.items))


@pytest.fixture
def lattice(system, tmp_path):
    return LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))


@pytest.mark.parametrize("sentence", SENTENCES)
def test_space_after_a_key_finds_its_list_worked_out(lattice, monkeypatch, sentence):
    session, service = attached(lattice)
    counted = Counted(monkeypatch, lattice)
    try:
        typed(session, service, sentence)
        searched = counted.calls            # the warm-up's search of the first segment
        view = typed(session, service, "<space>")
        assert session.state is State.CONVERSION and view.candidates.items
        assert searched >= 1 and counted.calls == searched   # Space searched nothing itself
    finally:
        service.shutdown()


@pytest.mark.parametrize("keys, one_segment", [
    # A pending consonant changes what Space converts (it flushes): the live text did not
    # analyse that reading, so the warm-up would cost a whole lattice on the typing's time.
    ("kaiginosiryouwookurimas", None),
    # A reading still one segment: the next key changes that segment, so its list would not be used.
    ("kaigi", "かいぎ"),
], ids=["key-pending", "one-segment"])
def test_nothing_is_worked_out_that_the_next_key_would_change(lattice, monkeypatch, keys, one_segment):
    session, service = attached(lattice)
    counted = Counted(monkeypatch, lattice)
    try:
        typed(session, service, keys)
        if one_segment is not None:
            assert [s.reading for s in lattice.convert(ConversionRequest(one_segment))] == [one_segment]
        assert counted.calls == 0
        typed(session, service, "<space>")
        assert counted.calls == 1
    finally:
        service.shutdown()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.sampled_from(SENTENCES + ["watasinonamaehanakanodesu", "nihongo", "a", "kisyanokisyaga"]),
       then=st.sampled_from(["<space>", "<space><space>", "<space><Right>", "<space><Down><Down>"]))
def test_the_warm_up_changes_nothing_shown(system, tmp_path_factory, keys, then):
    views = []
    for warm in (True, False):
        converter = LatticeConverter(system, None, LearningStore(tmp_path_factory.mktemp("warm") / "l.json"))
        session, service = attached(converter, warm)
        try:
            typed(session, service, keys)
            views.append(shown(typed(session, service, then)))
        finally:
            service.shutdown()
    assert views[0] == views[1]


def test_the_fused_converter_warms_its_lean_answer(system, model, tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot

    never_first = ConversionSettings(chunk_chars=8, space_budget_ms=60_000.0, prepare_space=False,
                                     weights=FusionWeights(margin=math.inf, keep_base_order=True))
    lattice = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    fused = FusedConverter(lattice, [ModelSlot(model, "tiny")], never_first, lexicon=system)
    assert fused.shared.model_never_first() and fused.space.quick_space()
    session, service = attached(fused)
    counted = Counted(monkeypatch, lattice)
    try:
        typed(session, service, SENTENCES[0])
        searched = counted.calls
        view = typed(session, service, "<space>")
        assert view.candidates.items and searched >= 1 and counted.calls == searched
    finally:
        service.shutdown()
    # where the model's text may come first, the lean answer is the ranking's: nothing to warm
    may_lead = FusedConverter(lattice, [ModelSlot(model, "tiny")], replace(never_first, weights=FusionWeights()),
                              lexicon=system)
    before = counted.calls
    may_lead.warm_space(ConversionRequest("かいぎのしりょう"))
    assert counted.calls == before
