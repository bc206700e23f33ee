"""Space prepared while the user pauses (issue #14): the explicit conversion is computed off the
key path after a key leaves the session composing, and Space answers from it when nothing it
depends on changed. Driven as key sequences through a real Session and LiveService over the
fused converter with a tiny model, and through the context host with a fake converter."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from ime_frontend.contexts import EngineCore  # noqa: E402
from karukan_engine.config import Config, LearningSettings, SessionSettings  # noqa: E402
from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.live.live_service import LiveLink, LiveService  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.scheduling.prepared import PreparedConversions  # noqa: E402
from karukan_engine.scheduling.scheduler import JobContext, Priority  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from karukan_engine.core.types import Candidate, ConversionRequest, Segment  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402
from karukan_engine.dictionary.user_dictionary import UserDictionary  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.session import Session, State  # noqa: E402
from karukan_engine.session.field import FieldPrivacy  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402
from session_fakes import NO_REWRITERS, SuggestingConverter  # noqa: E402
from test_fused_lazy import ModelCalls  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

READINGS = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "わたしのなまえはなかのです"]
# All of the model work whatever the time it takes, so Space's own plan is the preparation's.
SAY = ConversionSettings(chunk_chars=8, space_budget_ms=float("inf"))
TIMEOUT_S = 20


def fused_converter(system, model, tmp_path, conversion: ConversionSettings = SAY,
                    user: UserDictionary | None = None) -> FusedConverter:
    base = LatticeConverter(system, user, LearningStore(tmp_path / "learning.json"))
    return FusedConverter(base, [ModelSlot(model, "tiny")], conversion, lexicon=system)


def listed(segments: list[Segment]) -> list[tuple[str, tuple[Candidate, ...]]]:
    return [(s.reading, tuple(s.candidates)) for s in segments]


def text_of(segments: list[Segment]) -> str:
    return "".join(s.best.surface for s in segments)


class Attached:
    """A real Session attached to a real LiveService, as an engine drives it (no event loop:
    preparations are queued at once and wait `prepare_delay_s` in their job)."""

    def __init__(self, fused: FusedConverter, prepare_delay_s: float = 0.0, learning: bool = False,
                 deliver=lambda update: None) -> None:
        self.service = LiveService(fused, prepare_delay_s=prepare_delay_s)
        # No rewriters: the lists shown are compared with the converter's own.
        config = Config(session=SessionSettings(live_conversion=False),
                        learning=LearningSettings(enabled=learning), rewriters=NO_REWRITERS)
        self.session = Session(fused, config)
        self.session.attach_live(LiveLink(self.service, 1, deliver))

    def keys(self, text: str):
        view = None
        for _, keysym, mods in parse_keys(text):
            view = self.session.process_key(keysym, mods)
        return view

    def settle(self) -> None:
        assert self.service.scheduler.idle(TIMEOUT_S)

    def close(self) -> None:
        self.service.shutdown()


@pytest.fixture
def attached(system, model, tmp_path):
    made: list[Attached] = []

    def make(conversion: ConversionSettings = SAY, **kwargs) -> Attached:
        made.append(Attached(fused_converter(system, model, tmp_path, conversion), **kwargs))
        return made[-1]

    yield make
    for a in made:
        a.close()


# --- the memo ---------------------------------------------------------------------------------


def segments(text: str) -> list[Segment]:
    return [Segment(text, (Candidate(text),))]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefghij"), st.booleans()), max_size=40),
       st.integers(1, 4))
def test_the_memo_answers_only_the_key_it_finished_and_stays_bounded(steps, capacity):
    memo = PreparedConversions(capacity)
    finished: list[str] = []
    for key, finish in steps:
        preparation = memo.start(key)
        if preparation is None:
            assert key in finished[-capacity:] or memo.take(key, 0) is not None
            continue
        if finish:
            memo.finish(preparation, segments(key))
            finished = [k for k in finished if k != key] + [key]
        else:
            memo.abandon(preparation)
        assert len(memo) <= capacity
    for key in "abcdefghij":
        got = memo.take(key, 0)
        # what was finished lately is there; what never finished never is
        assert (got is not None) == (key in finished[-capacity:])
        if got is not None:
            assert got == segments(key)


def test_a_space_waits_for_the_preparation_of_its_own_key_and_keeps_it_going():
    memo = PreparedConversions()
    preparation = memo.start("k")
    superseded = preparation.stop(lambda: True)   # the Space's event superseded it
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(memo.take("k", TIMEOUT_S)))
    waiter.start()
    assert preparation.claimed.wait(TIMEOUT_S)
    assert not superseded()   # claimed: it goes on
    memo.finish(preparation, segments("k"))
    waiter.join(TIMEOUT_S)
    assert got == [segments("k")]
    # unclaimed, a superseded preparation stops (after the short grace for a Space to claim it)
    other = memo.start("j")
    assert other.stop(lambda: True)() and not other.stop(lambda: False)()


# --- the fused converter --------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_and_prepared(system, model, tmp_path_factory):
    """Two converters over the same model: one converts as today, the other prepares first."""
    return (fused_converter(system, model, tmp_path_factory.mktemp("plain")),
            fused_converter(system, model, tmp_path_factory.mktemp("prepared")))


HIRAGANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがでばぱっー"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reading=st.one_of(st.sampled_from(READINGS), st.text(HIRAGANA, min_size=1, max_size=8)),
       context=st.sampled_from(["", "昨日は", "会議の"]))
def test_a_prepared_conversion_is_the_one_space_computes(plain_and_prepared, reading, context):
    plain, prepared = plain_and_prepared
    request = ConversionRequest(reading, context)
    expected = listed(plain.convert(request))
    assert prepared.prepare(request)
    hits = prepared.prepared.hits
    assert listed(prepared.convert(request)) == expected
    assert prepared.prepared.hits == hits + 1


def test_space_after_a_pause_returns_the_prepared_segments_without_model_work(attached, monkeypatch):
    a = attached()
    fused = a.service.converter
    a.keys("kyouhaiitenkidesune")
    a.settle()                                  # the user paused: the preparation ran
    counted = ModelCalls(monkeypatch, fused, fused.slots[0].get())
    view = a.keys("<space>")
    assert a.session.state is State.CONVERSION and view.candidates is not None
    assert counted.calls == [] and fused.prepared.hits == 1
    # what a Space without preparation shows
    fresh = FusedConverter(fused.base, fused.slots, SAY, lexicon=fused.lexicon)
    expected = fresh.convert(ConversionRequest("きょうはいいてんきですね"))
    assert "".join(span.text for span in view.preedit) == text_of(expected)
    assert [i.text for i in view.candidates.items] == [c.surface for c in expected[0].candidates][:len(view.candidates.items)]


def test_a_pending_romaji_key_is_prepared_as_space_will_flush_it(attached):
    a = attached()
    fused = a.service.converter
    a.keys("nihon")                             # the last n is still pending: Space makes it ん
    a.settle()
    a.keys("<space>")
    assert fused.prepared.hits == 1 and a.session.state is State.CONVERSION


def test_a_choice_learned_after_preparing_is_honoured(attached, monkeypatch):
    a = attached(learning=True)
    fused = a.service.converter
    reading = "きょうはいいてんきですね"
    a.keys("kyouhaiitenkidesune")
    a.settle()
    prepared_text = text_of(fused.prepared.take(fused.space.prepared_key(ConversionRequest(reading, learn=True)), 0))
    chosen = "きょうは良い天気ですね"
    assert chosen != prepared_text
    fused.record([(reading, chosen)])           # e.g. committed in another window meanwhile
    counted = ModelCalls(monkeypatch, fused, fused.slots[0].get())
    view = a.keys("<space>")
    assert "".join(span.text for span in view.preedit) == chosen
    assert counted.calls != []                  # converted afresh, not from the memo


def test_a_user_dictionary_word_added_after_preparing_is_offered(system, model, tmp_path):
    user = UserDictionary(tmp_path / "user.tsv", pos_names=system.user_pos)
    fused = fused_converter(system, model, tmp_path, user=user)
    request = ConversionRequest("かるかん")
    assert fused.prepare(request)
    before = {c.surface for s in fused.convert(request) for c in s.candidates}
    assert fused.prepared.hits == 1 and not any("狩流館" in surface for surface in before)
    user.add("かるかん", "狩流館")
    after = {c.surface for s in fused.convert(request) for c in s.candidates}
    assert any("狩流館" in surface for surface in after) and fused.prepared.hits == 1


def test_a_newer_key_stops_a_preparation_between_stages(system, model, tmp_path, monkeypatch):
    fused = fused_converter(system, model, tmp_path)
    ctx = JobContext(1, 1, Priority.PREPARE, None)
    in_beam, release = threading.Event(), threading.Event()
    real_beam = model.beam

    def slow_beam(*args, **kwargs):
        in_beam.set()
        release.wait(TIMEOUT_S)
        return real_beam(*args, **kwargs)

    monkeypatch.setattr(model, "beam", slow_beam)
    counted = ModelCalls(monkeypatch, fused, model)
    request = ConversionRequest("かいぎのしりょうをおくります")
    result: list[bool] = []
    worker = threading.Thread(target=lambda: result.append(fused.prepare(request, ctx)))
    worker.start()
    assert in_beam.wait(TIMEOUT_S)
    ctx._cancel.set()                           # a key typed: the scheduler cancels the job
    release.set()
    worker.join(TIMEOUT_S)
    assert result == [False] and len(fused.prepared) == 0
    after_beam = counted.calls[counted.calls.index("beam") + 1:]
    assert "score_many" not in after_beam       # the NLL pass after the beam never ran


def test_the_beam_stops_at_its_next_step_when_asked(model):
    asked = []
    full = model.beam("かいぎのしりょうをおくります", beam=3, max_new=12)
    cut = model.beam("かいぎのしりょうをおくります", beam=3, max_new=12,
                     should_stop=lambda: asked.append(1) or True)
    assert asked == [1]                          # asked once, before the first step after the prompt
    assert all(len(g.token_ids) <= 1 for g in cut) and any(len(g.token_ids) > 1 for g in full)


def test_more_urgent_work_stops_a_preparation(system, model, tmp_path):
    fused = fused_converter(system, model, tmp_path)
    ctx = JobContext(1, 1, Priority.PREPARE, None, _outranked=lambda: True)
    assert not fused.prepare(ConversionRequest("かいぎのしりょうをおくります"), ctx)
    assert len(fused.prepared) == 0


def test_keys_typed_before_the_pause_ends_prepare_nothing(attached, monkeypatch):
    a = attached(prepare_delay_s=0.5)
    fused = a.service.converter
    prepared: list[str] = []
    real = fused.prepare
    monkeypatch.setattr(fused, "prepare", lambda request, ctx=None: prepared.append(request.reading) or real(request, ctx))
    a.keys("kaigino")
    a.settle()
    assert prepared == ["かいぎの"]              # each earlier key's request ended in its wait


def test_prepare_space_off_means_no_preparation(attached, monkeypatch):
    a = attached(ConversionSettings(chunk_chars=8, space_budget_ms=float("inf"), prepare_space=False,
                                    quick_space=False))
    fused = a.service.converter
    priorities: list[Priority] = []
    real_submit = a.service.scheduler.submit
    monkeypatch.setattr(a.service.scheduler, "submit",
                        lambda context, priority, *args, **kw: priorities.append(priority)
                        or real_submit(context, priority, *args, **kw))
    a.keys("kyouha")
    a.settle()
    assert priorities and Priority.PREPARE not in priorities   # suggestions only
    assert not fused.can_prepare() and not fused.prepare(ConversionRequest("きょうは"))
    a.keys("<space>")
    assert fused.prepared.hits == 0 and a.session.state is State.CONVERSION


def test_nothing_is_prepared_in_a_password_field(attached):
    a = attached()
    fused = a.service.converter
    a.session.set_field_privacy(FieldPrivacy(password=True))
    a.keys("kyouha")
    a.settle()
    assert len(fused.prepared) == 0


def test_the_setting_is_read_from_the_config():
    assert ConversionSettings().prepare_space
    assert not ConversionSettings.from_mapping({"prepare_space": False}).prepare_space
    with pytest.raises(ValueError, match="prepare_space"):
        ConversionSettings.from_mapping({"prepare_space": "no"})


# --- through the context host -----------------------------------------------------------------


class PreparingConverter(SuggestingConverter):
    """A fake that can prepare: records each preparation and when it started."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared: list[tuple[str, float]] = []

    def can_prepare(self) -> bool:
        return True

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        self.prepared.append((request.reading, time.monotonic()))
        return True


def test_the_host_starts_the_preparation_after_the_reply_and_only_for_the_last_key():
    converter = PreparingConverter()
    core = EngineCore(converter, config=Config(session=SessionSettings(live_conversion=False)))
    core.live.prepare_delay_s = 0.3            # the keys below come well within it

    async def body():
        host = core.new_context(asyncio.get_running_loop())
        for _label, keysym, mods in parse_keys("kai"):
            await host.process_key(keysym, mods, False)
        replied = time.monotonic()
        assert converter.prepared == []        # nothing during the keys
        deadline = time.monotonic() + TIMEOUT_S
        while not converter.prepared and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert [r for r, _ in converter.prepared] == ["かい"]   # か's request was superseded unrun
        assert converter.prepared[0][1] - replied >= 0.25
        await host.close()

    try:
        asyncio.run(body())
    finally:
        core.close()
