"""A real session with the fused converter and asynchronous live conversion (tiny real model)."""

from dataclasses import replace

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.config import Config  # noqa: E402
from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.live.live_service import LiveLink, LiveService, UpdateKind  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.neural.model import load_model  # noqa: E402
from karukan_testing.tiny_models import TinyModelSpec, write_model_dir  # noqa: E402
from karukan_engine.session.session import Session  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

WORDS = ["kaigi", "toukyou", "kyouha", "densha", "sakura"]


@pytest.fixture(scope="module")
def fused(tmp_path_factory):
    directory = write_model_dir(tmp_path_factory.mktemp("tiny"), TinyModelSpec(seed=3, eos_scale=2.0))
    model = load_model(directory)
    dictionary = SystemDictionary()
    base = LatticeConverter(dictionary, None, LearningStore(tmp_path_factory.mktemp("l") / "l.json"))
    yield FusedConverter(base, [ModelSlot(model, "tiny")], lexicon=dictionary)
    model.close()


def live_session(converter):
    config = Config()
    config = replace(config, session=replace(config.session, live_conversion=True))
    return Session(converter, config)


def test_keys_get_the_quick_text_and_the_model_text_follows(fused):
    service = LiveService(fused, budget_ms=60_000)
    changed = 0
    try:
        for context, word in enumerate(WORDS):
            session = live_session(fused)
            delivered = []
            session.attach_live(LiveLink(service, context, delivered.append))
            for ch in word:
                view = session.process_key(ord(ch))
            reading = "".join(u.text for u in session._composer.units)
            quick = fused.live_quick(ConversionRequest(reading))
            assert view.preedit_text.startswith(quick)       # pending romaji may follow
            assert service.scheduler.idle(60)
            refined = fused.live_refined(ConversionRequest(reading))
            # The link also delivers suggestion lists (issue 14 item 5); this test is about the text.
            current = [u for u in delivered
                       if u.kind is UpdateKind.LIVE and u.epoch == service.scheduler.epoch(context)]
            if refined != quick:
                assert [u.text for u in current] == [refined]
                updated = session.apply_live_update(current[0])
                assert updated is not None and updated.preedit_text.startswith(refined)
                changed += 1
            else:
                assert current == []
    finally:
        service.shutdown()
    assert changed > 0, "the tiny model should change at least one preedit"


def test_a_stale_model_text_is_never_applied(fused):
    service = LiveService(fused, budget_ms=60_000)
    checked = 0
    try:
        for context, word in enumerate(WORDS):
            session = live_session(fused)
            updates = []
            session.attach_live(LiveLink(service, context, updates.append))
            for ch in word:
                session.process_key(ord(ch))
                assert service.scheduler.idle(60)   # let every key's model text arrive
            current = service.scheduler.epoch(context)
            for old in [u for u in updates if u.epoch != current]:
                assert session.apply_live_update(old) is None   # as if it had arrived late
                checked += 1
    finally:
        service.shutdown()
    assert checked > 0
