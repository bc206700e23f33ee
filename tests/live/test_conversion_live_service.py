"""LiveService without a model: synchronous fallbacks, explicit calls, suggestions."""

import threading

import pytest

from karukan_engine.conversion.fused import FusedConverter
from karukan_engine.live.live_service import LiveService, UpdateKind
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.scheduling.scheduler import Priority, Scheduler
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from service_fakes import GatedModelConverter

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")


def test_a_converter_without_tiers_answers_synchronously():
    service = LiveService(PlainConverter())
    try:
        assert service.key("s", service.begin("s"), ConversionRequest("かな"), lambda u: None) == "かな"
        assert service.scheduler.idle(10)
        assert service.scheduler.stats.submitted == 0
    finally:
        service.shutdown()


def test_call_runs_on_a_worker_returns_and_raises():
    service = LiveService(PlainConverter())
    try:
        worker = service.call("s", lambda: threading.current_thread().name)
        assert worker != threading.current_thread().name
        with pytest.raises(ZeroDivisionError):
            service.call("s", lambda: 1 / 0)
    finally:
        service.shutdown()


def test_call_outranks_queued_live_work_and_is_not_superseded():
    scheduler = Scheduler(workers=1)
    service = LiveService(PlainConverter(), scheduler)
    release, started, order = threading.Event(), threading.Event(), []

    def block(ctx):
        started.set()
        release.wait(10)

    try:
        scheduler.submit("other", Priority.LIVE, block, lambda r: None)
        assert started.wait(10)
        scheduler.submit("other", Priority.LIVE, lambda ctx: order.append("live"), lambda r: None)
        result = []
        caller = threading.Thread(target=lambda: result.append(
            service.call("s", lambda: order.append("explicit") or "done")))
        caller.start()
        for _ in range(1000):                       # until the explicit job is queued
            if scheduler.stats.submitted == 3:
                break
            threading.Event().wait(0.01)
        scheduler.begin_key("s")                    # a newer key must not drop it
        release.set()
        caller.join(10)
        assert result == ["done"]
        assert scheduler.idle(10)
        assert order == ["explicit", "live"]
    finally:
        service.shutdown()


@needs_dictionary
def test_suggestions_arrive_for_the_current_key_only(tmp_path):
    dictionary = SystemDictionary()
    base = LatticeConverter(dictionary, None, LearningStore(tmp_path / "learning.json"))
    service = LiveService(FusedConverter(base, [], lexicon=dictionary))
    got = []
    try:
        epoch = service.begin("s")
        service.request(UpdateKind.SUGGESTIONS, "s", epoch, ConversionRequest("ありがと"), got.append, delay_s=0.0)
        assert service.scheduler.idle(30)
        assert got[0].kind is UpdateKind.SUGGESTIONS and got[0].epoch == epoch
        assert any("ありがとう" in c.surface for c in got[0].suggestions)
        got.clear()
        gate = threading.Event()
        service.scheduler.submit("s", Priority.EXPLICIT, lambda ctx: gate.wait(10) and None, lambda r: None)
        service.request(UpdateKind.SUGGESTIONS, "s", epoch, ConversionRequest("ありがと"), got.append, delay_s=0.0)
        service.begin("s")              # a newer key before the suggestion job ran
        gate.set()
        assert service.scheduler.idle(30)
        assert got == []
    finally:
        service.shutdown()



@pytest.mark.parametrize("refines", [True, False])
def test_live_work_is_queued_only_for_a_converter_that_refines_live_text(refines):
    """A ready model whose weights never put its text first (the bundled one) wakes no worker
    on a key: its live refinement could only give the quick text back."""
    converter = GatedModelConverter()
    converter.refines_live = lambda: refines
    converter.gate.set()
    service = LiveService(converter)
    got = []
    try:
        assert service.key("s", service.begin("s"), ConversionRequest("かな"), got.append) == "かな"
        assert service.scheduler.idle(10)
        assert ("かな" in converter.started) == refines
        assert [u.text for u in got if u.kind is UpdateKind.LIVE] == (["[かな]"] if refines else [])
    finally:
        service.shutdown()
