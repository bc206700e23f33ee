"""The engine's threads hand the GIL over quickly: a key's answer crosses threads while live
refinement or a preparation runs Python on a worker (ime_frontend.contexts.SWITCH_INTERVAL_S)."""

from __future__ import annotations

import sys

import pytest

from ime_frontend.contexts import SWITCH_INTERVAL_S, EngineCore
from karukan_engine.config import Config, SessionSettings
from session_fakes import SuggestingConverter


@pytest.fixture
def interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)   # Python's default
    yield
    sys.setswitchinterval(before)


def _core() -> EngineCore:
    return EngineCore(SuggestingConverter([]), config=Config(session=SessionSettings(live_conversion=False)))


@pytest.mark.parametrize("override, expected", [(None, SWITCH_INTERVAL_S), ("0.5", 0.0005), ("junk", SWITCH_INTERVAL_S),
                                                ("0", 0.005), ("-3", 0.005)])
def test_an_engine_core_shortens_the_switch_interval(interval, monkeypatch, override, expected):
    if override is None:
        monkeypatch.delenv("KARUKAN_SWITCH_INTERVAL_MS", raising=False)
    else:
        monkeypatch.setenv("KARUKAN_SWITCH_INTERVAL_MS", override)
    core = _core()
    try:
        assert sys.getswitchinterval() == pytest.approx(expected)
    finally:
        core.close()
