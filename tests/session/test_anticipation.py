"""Between keys the session has the live text of what the next letter can settle worked out
(session.anticipate), so that letter's key finds it in the converter's caches instead of
analysing a lattice on the key path. It must never change what any key shows."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, SessionSettings, SuggestSettings
from karukan_engine.core.types import ConversionRequest
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.live.live_service import LiveLink, LiveService
from karukan_engine.romaji import Composer
from karukan_engine.session import Session
from karukan_engine.session.composition import NEXT_VOWELS, next_readings
from session_fakes import ScriptedConverter

WAIT_S = 30


def typed(keys: str) -> Composer:
    composer = Composer()
    for key in keys:
        composer.insert(key)
    return composer


@pytest.mark.parametrize("keys, readings", [
    ("k", ["か", "こ", "き", "く", "け", "っ"]),             # a consonant: its vowels, and っ (kk)
    ("kan", ["かな", "かの", "かに", "かぬ", "かね", "かん"]),   # n: な行, and ん (nn, or n + consonant)
    ("ka", ["かあ", "かお", "かい", "かう", "かえ"]),          # nothing pending: a vowel alone
    ("ky", ["きゃ", "きょ", "きぃ", "きゅ", "きぇ"]),          # only a lone consonant is tried doubled
])
def test_the_next_letters_readings(keys, readings):
    assert next_readings(typed(keys)) == readings


@settings(max_examples=200)
@given(st.text(alphabet="aiueoknstyhmrwgzdbp'-", max_size=20))
def test_next_readings_are_exactly_the_new_readings_the_tried_letters_settle(keys):
    composer = typed(keys)
    pending = composer.pending
    letters = NEXT_VOWELS + (pending if len(pending) == 1 and pending not in NEXT_VOWELS else "")
    now = composer.settled_reading()
    expected = set()
    for letter in letters:
        trial = typed(keys)
        trial.insert(letter)
        if trial.settled_reading() not in ("", now):
            expected.add(trial.settled_reading())
    found = next_readings(composer)
    assert len(found) == len(set(found)) and set(found) == expected
    assert composer.settled_reading() == now and composer.text() == typed(keys).text()


class SupersedingConverter(ScriptedConverter):
    """Its first live() call begins a newer event in the context, as a key typed meanwhile would."""

    def __init__(self) -> None:
        super().__init__()
        self.service: LiveService | None = None
        self.live_readings: list[str] = []

    def live(self, request: ConversionRequest) -> str:
        self.live_readings.append(request.reading)
        if len(self.live_readings) == 1:
            self.service.begin(1)
        return super().live(request)


def test_the_work_stops_between_readings_once_a_newer_event_began():
    converter = SupersedingConverter()
    service = LiveService(converter)
    converter.service = service
    try:
        epoch = service.begin(1)
        service.anticipate(1, epoch, lambda: [ConversionRequest(r) for r in ("か", "こ", "き")])
        assert service.scheduler.idle(WAIT_S)
        assert converter.live_readings == ["か"]
        service.anticipate(1, epoch, lambda: [ConversionRequest("く")])   # an older event's: never run
        assert service.scheduler.idle(WAIT_S)
        assert converter.live_readings == ["か"]
    finally:
        service.shutdown()


@pytest.fixture(scope="module")
def judged(system):
    return LatticeConverter.judged(system)


def session_on(converter, anticipate: bool) -> tuple[Session, LiveService]:
    config = Config(session=SessionSettings(anticipate=anticipate), suggest=SuggestSettings(enabled=False))
    session = Session(converter, config)
    service = LiveService(converter)
    session.attach_live(LiveLink(service, 1, lambda update: None))
    return session, service


def analysed_here(converter: LatticeConverter, monkeypatch) -> list[str]:
    """The readings the converter analyses anew on this (the key's) thread from now on."""
    here = threading.current_thread()
    found: list[str] = []
    put = converter._cache.put

    def recording_put(key, analysis):
        if threading.current_thread() is here:
            found.append(key[0])
        put(key, analysis)

    monkeypatch.setattr(converter._cache, "put", recording_put)
    return found


@pytest.mark.parametrize("anticipate", [True, False])
def test_a_letter_typed_after_a_pause_finds_its_live_text_worked_out(judged, monkeypatch, anticipate):
    judged._cache.clear()   # nothing analysed by an earlier test
    session, service = session_on(judged, anticipate)
    try:
        for key in "kyouhat":
            session.process_key(ord(key))
        assert service.scheduler.idle(WAIT_S)
        on_the_key_path = analysed_here(judged, monkeypatch)
        view = session.process_key(ord("e"))
        assert view.preedit_text.endswith("て")
        assert (on_the_key_path == []) == anticipate
    finally:
        service.shutdown()


@pytest.fixture(scope="module")
def unshared(system):
    """A converter of its own: the reference session shares no cache with the one anticipating."""
    return LatticeConverter.judged(system)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="aiueoknstyhmrwgdb", min_size=1, max_size=14))
def test_anticipation_never_changes_what_a_key_shows(judged, unshared, keys):
    """Keys typed without pauses (the work runs beside them) show what a session without it shows."""
    reference = Session(unshared, Config(suggest=SuggestSettings(enabled=False)))
    session, service = session_on(judged, True)
    try:
        for key in keys:
            assert session.process_key(ord(key)) == reference.process_key(ord(key))
    finally:
        service.shutdown()


def test_a_converter_failing_between_keys_is_not_logged_with_a_traceback(caplog):
    """The key that needs the text reports the failure (by type only); the anticipation stops."""
    service = LiveService(ScriptedConverter(fail=["live"]))
    try:
        epoch = service.begin(1)
        service.anticipate(1, epoch, lambda: [ConversionRequest("ひみつ")])
        assert service.scheduler.idle(WAIT_S)
        assert service.scheduler.stats.failed == 0
        assert not [r for r in caplog.records if r.levelname in ("ERROR", "WARNING") or "ひみつ" in r.getMessage()]
    finally:
        service.shutdown()
