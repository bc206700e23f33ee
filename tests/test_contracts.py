"""The declared contracts (karukan_engine/conversion/contracts.py) hold for every implementation.

Each concrete converter and each test fake that stands in for one must be an instance of its
protocols (runtime_checkable) and define every protocol method with the protocol's parameters:
names, kinds and defaults. A method renamed, dropped or given another parameter on either side
fails here instead of in a probe at run time.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from karukan_engine.conversion.contracts import (
    DictionaryConverter,
    EngineConverter,
    LiveConverter,
    ModelSource,
    Persistent,
)
from karukan_engine.live.live_service import DictionaryOnly
from karukan_engine.conversion.model_slot import Loaded
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import Converter
from karukan_engine.dictionary.system import DEFAULT_DIR
from session_fakes import ScriptedConverter, SuggestingConverter
from service_fakes import GatedModelConverter, SavingConverter

ROOT = Path(__file__).resolve().parents[1]
has_dictionary = (DEFAULT_DIR / "meta.json").is_file()


def protocol_members(protocol: type) -> tuple[set[str], set[str]]:
    """(methods, data attributes) the protocol declares, its base protocols' included."""
    methods, attributes = set(), set()
    for base in protocol.__mro__:
        if not getattr(base, "_is_protocol", False) or base.__module__ == "typing":
            continue
        attributes |= set(vars(base).get("__annotations__", {}))
        methods |= {name for name, value in vars(base).items()
                    if not name.startswith("_") and inspect.isfunction(value)}
    return methods, attributes - methods


def parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def assert_implements(obj: object, protocol: type) -> None:
    assert isinstance(obj, protocol), f"{type(obj).__name__} is not a {protocol.__name__}"
    methods, attributes = protocol_members(protocol)
    for name in sorted(methods):
        implemented = getattr(type(obj), name)
        assert inspect.isfunction(implemented), f"{type(obj).__name__}.{name} is not a method"
        assert parameters(implemented) == parameters(getattr(protocol, name)), (
            f"{type(obj).__name__}.{name}{inspect.signature(implemented)} differs from "
            f"{protocol.__name__}.{name}{inspect.signature(getattr(protocol, name))}")
    for name in sorted(attributes):
        assert hasattr(obj, name), f"{type(obj).__name__} lacks {protocol.__name__}.{name}"


def lattice():
    from karukan_engine.lattice.converter import LatticeConverter

    return LatticeConverter.load_default()


def fused():
    from karukan_engine.conversion.fused import FusedConverter

    return FusedConverter(lattice())


def load_handle():
    from karukan_engine.neural.background import LoadHandle

    handle = LoadHandle(lambda: "a model")
    handle.wait(10)
    return handle


needs_dictionary = pytest.mark.skipif(not has_dictionary, reason="compiled dictionary not built")
IMPLEMENTATIONS = [
    # (what, how to make one, the protocols it promises)
    ("PlainConverter", PlainConverter, (Converter, Persistent, EngineConverter, DictionaryConverter)),
    pytest.param("LatticeConverter", lattice, (Converter, EngineConverter, DictionaryConverter),
                 marks=needs_dictionary),
    pytest.param("FusedConverter", fused, (Converter, EngineConverter, LiveConverter), marks=needs_dictionary),
    ("DictionaryOnly", lambda: DictionaryOnly(PlainConverter()), (Converter, EngineConverter, LiveConverter)),
    ("Loaded", lambda: Loaded(object()), (ModelSource,)),
    ("LoadHandle", load_handle, (ModelSource,)),
    # test fakes: they stand in for the real thing only while they keep its contract
    ("ScriptedConverter", ScriptedConverter, (Converter, EngineConverter)),
    ("SuggestingConverter", SuggestingConverter, (EngineConverter, LiveConverter)),
    ("SavingConverter", SavingConverter, (EngineConverter, DictionaryConverter)),
    ("GatedModelConverter", GatedModelConverter, (EngineConverter, LiveConverter)),
]


@pytest.mark.parametrize("name, make, protocols", IMPLEMENTATIONS)
def test_implementations_keep_their_contracts(name, make, protocols):
    obj = make()
    try:
        for protocol in protocols:
            assert_implements(obj, protocol)
    finally:
        if isinstance(obj, Persistent):
            obj.close()


def test_a_drifted_fake_fails_the_check():
    class Drifted(PlainConverter):
        def save(self, force: bool) -> bool:   # a parameter the protocol does not have
            return True

    class Missing:
        def save(self) -> bool:
            return True

    with pytest.raises(AssertionError, match="save"):
        assert_implements(Drifted(), Persistent)
    with pytest.raises(AssertionError, match="not a Persistent"):
        assert_implements(Missing(), Persistent)
    with pytest.raises(AssertionError, match="not a LiveConverter"):
        assert_implements(PlainConverter(), LiveConverter)


def test_the_live_service_wraps_a_converter_without_a_model_once():
    from karukan_engine.live.live_service import live_converter

    gated = GatedModelConverter()
    assert live_converter(gated) is gated
    wrapped = live_converter(PlainConverter())
    assert isinstance(wrapped, DictionaryOnly) and not wrapped.model_ready()


@pytest.mark.parametrize("path", [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "karukan_engine/conversion/fused").glob("*.py")),
    "karukan_engine/live/live_service.py",
    "karukan_engine/conversion/model_slot.py",
    "ime_frontend/contexts.py",
    "karukan_engine/session/session.py",
    "karukan_engine/session/keys_cli.py",
])
def test_no_interface_probes_come_back(path):
    """Callers use the declared protocols; a getattr/hasattr probe would hide an undeclared one."""
    source = (ROOT / path).read_text(encoding="utf-8")
    assert "getattr(" not in source and "hasattr(" not in source
