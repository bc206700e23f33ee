"""The operation table (ime_frontend.operations) against everything built from it or written
beside it: the service on a real private bus, the client, the resilient proxy, the in-process
host, the IBus engine and the fcitx5 addon's C++ source."""

from __future__ import annotations

import ast
import asyncio
import inspect
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from dbus_fast.signature import get_signature_tree
from hypothesis import given
from hypothesis import strategies as st

from addon_calls import AddonSource, interface_methods, mismatches, read_addon
from ime_frontend import contexts, operations as ops, service, wire
from ime_frontend.client import EngineClient, RemoteContext
from ime_frontend.contexts import ContextHost, EngineCore
from ime_frontend.pending import PendingContext
from ime_frontend.resilient import ResilientContext
from karukan_engine.config import Config, SessionSettings
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.session import Session
from ime_frontend.toolkit import PURPOSE_PASSWORD
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.view import View
from test_service_resilience import TIMEOUT_S, bus_address, run, running_service  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
ADDON_SRC = ROOT / "ime_frontend/fcitx5/src"
ENGINE = ROOT / "ime_frontend/ibus/engine.py"
SPACE = 0x20

# One call of every operation, in an order that gives each something to do: (method, host-style
# arguments, keyword arguments, what the session method receives; None: the host answers alone).
SCRIPT = [
    ("set_content_type", (0, 0), {}, (FieldPrivacy(),)),
    ("set_surrounding_text", ("今日は", 1, None), {}, ("今日は", 1, 1)),   # no anchor: at the cursor
    ("focus_in", (), {}, ()),
    ("process_key", (ord("k"), 0, False), {"keycode": 45}, (ord("k"), 0, False)),   # keycode stays on the wire
    ("process_key", (ord("a"), 0, False), {}, (ord("a"), 0, False)),
    ("process_key", (SPACE, 0, False), {}, (SPACE, 0, False)),
    ("page_down", (), {}, ()),
    ("page_up", (), {}, ()),
    ("get_view", (), {}, None),
    ("select_candidate", (1,), {}, (1,)),
    ("set_input_mode", ("katakana",), {}, ("katakana",)),
    ("process_key", (ord("a"), 0, False), {}, (ord("a"), 0, False)),
    ("reset", (), {}, ()),
    ("set_enabled", (False,), {}, (False,)),
    ("set_enabled", (True,), {}, (True,)),
    ("return_committed", ("ア",), {}, ("ア",)),
    ("focus_out", (), {}, ()),
]
BY_METHOD = {op.method: op for op in ops.CONTEXT_OPERATIONS}
# Host methods that translate toolkit facts into one session value, and the session method that
# takes it (ime_frontend.toolkit); every other host method calls the session's of its name.
TRANSLATED = {"set_content_type": "set_field_privacy"}


def session_method(host_method: str) -> str:
    return TRANSLATED.get(host_method, host_method)


def test_the_script_calls_every_operation():
    assert {method for method, *_ in SCRIPT} == set(BY_METHOD)


# --- the table itself ---------------------------------------------------------------------------


def test_the_service_serves_exactly_the_tables_methods_with_its_signatures():
    assert list(service.METHODS) == [m.member for m in ops.INTERFACE_METHODS]
    for m in ops.INTERFACE_METHODS:
        spec = service.METHODS[m.member]
        assert (spec.in_sig, spec.out_sig) == (m.in_sig, m.out_sig)
    assert set(service._CHECKS) | set(service._UNKNOWN_VALUES) <= set(service.METHODS)


def test_every_argument_is_one_complete_dbus_type_and_the_xml_lists_it():
    methods, signals = interface_methods(service.introspection_xml(), wire.INTERFACE)
    for m in ops.INTERFACE_METHODS:
        for p in m.ins + m.outs:
            assert len(get_signature_tree(p.code).types) == 1, (m.member, p.name)
        assert methods[m.member] == (m.in_sig, m.out_sig)
    assert signals == {"ViewUpdated": "uu" + wire.VIEW_SIG}
    assert len(methods) == len(ops.INTERFACE_METHODS)


def test_every_operation_maps_to_a_host_method_taking_its_arguments():
    for op in ops.CONTEXT_OPERATIONS:
        host_params = list(inspect.signature(getattr(ContextHost, op.method)).parameters)[1:]
        assert tuple(host_params) == op.host_params, op.method
        if op is ops.GET_VIEW:   # the host answers it alone
            continue
        session = inspect.signature(getattr(Session, session_method(op.method)))
        if op.method in TRANSLATED:
            assert len(session.parameters) - 1 == 1, op.method
        else:
            assert len(session.parameters) - 1 >= len(op.host_params), op.method


def test_the_input_context_protocol_is_the_table_plus_close():
    declared = {name for name, value in vars(ops.InputContext).items()
                if inspect.iscoroutinefunction(value)}
    assert declared == set(BY_METHOD) | {"close"}
    for op in ops.CONTEXT_OPERATIONS:
        protocol = list(inspect.signature(getattr(ops.InputContext, op.method)).parameters)[1:]
        assert tuple(protocol) == op.host_params, op.method


@pytest.mark.parametrize("proxy", [RemoteContext, ResilientContext, PendingContext])
def test_the_client_and_the_resilient_proxy_offer_every_operation(proxy):
    for op in ops.CONTEXT_OPERATIONS:
        method = getattr(proxy, op.method)
        assert inspect.iscoroutinefunction(method) and method.__name__ == op.method
        assert inspect.signature(method) == op.python_signature()


def test_the_ibus_engine_calls_its_context_only_through_the_table():
    called = {node.func.attr for node in ast.walk(ast.parse(ENGINE.read_text(encoding="utf-8")))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "_context"}
    assert called and called <= set(BY_METHOD) | {"close"}


@pytest.mark.parametrize("params", [
    (ops.Param("keycode", "u", host=None),),                       # wire only, yet no default
    (ops.Param("anchor", "u", none_means="cursor"),),              # falls back on nothing
])
def test_an_operation_that_could_not_be_marshalled_is_refused_when_declared(params):
    with pytest.raises(ValueError):
        ops.Operation("Broken", "broken", params)


# --- marshalling (pure) -------------------------------------------------------------------------

VALUES = {"u": st.integers(0, 2**32 - 1), "b": st.booleans(),
          "s": st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=20)}


@st.composite
def operation_call(draw):
    """An operation, and arguments for it as a Python caller passes them (some as keywords)."""
    op = draw(st.sampled_from(ops.CONTEXT_OPERATIONS))
    values = {}
    for p in op.python_params:
        if p.for_host or draw(st.booleans()):
            values[p.python_name] = draw(VALUES[p.code])
        if p.none_means is not None and draw(st.booleans()):
            values[p.python_name] = None
    positional = draw(st.integers(0, len(op.host_params)))
    names = [p.python_name for p in op.python_params]
    args = tuple(values[n] for n in names[:positional])
    kwargs = {n: values[n] for n in names[positional:] if n in values}
    return op, args, kwargs, values


@given(operation_call(), st.integers(0, 2**32 - 1))
def test_a_call_marshals_to_its_signature_and_back_to_the_hosts_arguments(call, context):
    op, args, kwargs, values = call
    body = op.wire_body(context, op.bind(args, kwargs))
    get_signature_tree(op.in_sig).verify(body)          # raises when a value does not fit its type
    assert len(body) == len(op.dbus.ins)
    got_context, host_args = op.host_args(body)
    assert got_context == context and len(host_args) == len(op.host_params)
    for name, value in zip(op.host_params, host_args):
        param = next(p for p in op.params if p.python_name == name)
        if values[name] is None:
            assert value == values[next(p.python_name for p in op.params if p.name == param.none_means)]
        else:
            assert value == values[name]
    wire_only = {p.name: p for p in op.params if not p.for_host}
    for name, param in wire_only.items():
        assert body[1 + op.params.index(param)] == values.get(name, param.default)


@given(operation_call(), st.sampled_from(["extra", "missing", "twice"]))
def test_a_call_with_wrong_arguments_is_refused_before_it_is_sent(call, mistake):
    op, args, kwargs, _values = call
    if mistake == "missing" and not op.host_params:
        mistake = "extra"
    if mistake == "twice" and not args:
        mistake = "extra"
    if mistake == "extra":
        kwargs = {**kwargs, "no_such_argument": 1}
    elif mistake == "missing":
        args, kwargs = (), {}
    else:
        kwargs = {**kwargs, op.python_params[0].python_name: args[0]}
    with pytest.raises(TypeError):
        op.bind(args, kwargs)


# --- the fcitx5 addon against the service's introspection ---------------------------------------


def test_the_addons_calls_and_signals_exist_with_the_services_signatures():
    source = read_addon(ADDON_SRC)
    calls = AddonSource(source).service_calls()
    assert {c.member for c in calls} >= {"CreateContext", "ProcessKey", "FocusIn", "FocusOut", "Reset",
                                         "SelectCandidate", "DestroyContext", "GetInfo", "ReturnCommitted"}
    assert mismatches(source, service.introspection_xml(), wire.INTERFACE) == []


def test_the_addon_talks_to_the_services_name_path_and_interface():
    addon = AddonSource(read_addon(ADDON_SRC))
    assert (addon.constant("kService"), addon.constant("kPath"), addon.constant("kInterface")) == \
        (wire.BUS_NAME, wire.OBJECT_PATH, wire.INTERFACE)


@pytest.mark.parametrize("old, new, problem", [
    ('call("ProcessKey")', 'call("ProcessKeys")', "no method ProcessKeys"),
    ('static_cast<uint32_t>(index)', 'static_cast<int32_t>(index)', "SelectCandidate sent as (ui)"),
    ('"FocusIn", true', '"FocusOn", true', "no method FocusOn"),     # through a parameter
    ('? "FocusIn"', '? "FocusOn"', "no method FocusOn"),               # through a local
    ("<< release;", "<< release << release;", "ProcessKey sent as (uuuubb)"),
    ("std::vector<Item>, int32_t, std::string>;", "std::vector<Item>, int32_t>;", "reply read as"),
    ("msg << state->id << text;", "msg << state->id;", "ReturnCommitted sent as (u)"),
    ('kInterface, "ViewUpdated")', 'kInterface, "ViewChanged")', "signal ViewChanged"),
])
def test_a_change_on_the_addons_side_is_caught(old, new, problem):
    source = read_addon(ADDON_SRC)
    assert old in source
    found = mismatches(source.replace(old, new), service.introspection_xml(), wire.INTERFACE)
    assert any(problem in p for p in found), found


@pytest.mark.parametrize("old, new, problem", [
    ('name="Reset"', 'name="Clear"', "no method Reset"),
    ('<arg name="release" type="b"', '<arg name="release" type="u"', "the service takes (uuuuu)"),
    ('<arg name="context" type="u" direction="out"/>', '<arg name="context" type="i" direction="out"/>',
     "CreateContext reply read as (u)"),
])
def test_a_change_on_the_services_side_is_caught(old, new, problem):
    xml = service.introspection_xml()
    assert old in xml
    found = mismatches(read_addon(ADDON_SRC), xml.replace(old, new), wire.INTERFACE)
    assert any(problem in p for p in found), found


# --- every operation on the real bus ------------------------------------------------------------

RECORDED: list[tuple[str, tuple]] = []


def _recording(name: str):
    def method(self, *args):
        RECORDED.append((name, args))
        return getattr(Session, name)(self, *args)

    return method


RecordingSession = type("RecordingSession", (Session,), {
    session_method(op.method): _recording(session_method(op.method)) for op in ops.CONTEXT_OPERATIONS
    if hasattr(Session, session_method(op.method))})
NO_LIVE = Config(session=SessionSettings(live_conversion=False))


def _core() -> EngineCore:
    return EngineCore(PlainConverter(), config=NO_LIVE)


async def _play(ctx) -> list:
    results = []
    for method, args, kwargs, _session_args in SCRIPT:
        if method == "process_key" and isinstance(ctx, ContextHost):
            kwargs = {}   # the host has no keycode: it never reaches the session
        results.append(await getattr(ctx, method)(*args, **kwargs))
    return results


def _as_sent(result):
    """What a host's answer looks like after the wire: a View without its in-process extras."""
    return wire.decode_view(wire.encode_view(result)) if isinstance(result, View) else result


def test_every_operation_round_trips_through_the_service_the_client_and_the_resilient_proxy(
        bus_address, monkeypatch):
    monkeypatch.setattr(contexts, "Session", RecordingSession)
    expected_calls = [(session_method(m), session_args) for m, _a, _k, session_args in SCRIPT
                      if session_args is not None]

    async def in_process() -> list:
        core = _core()
        try:
            return await _play(core.new_context(asyncio.get_running_loop()))
        finally:
            core.close()

    async def through_service() -> tuple[list, list]:
        async with running_service(bus_address, _core):
            client = await EngineClient.connect(bus_address)
            try:
                remote = await _play(await client.create_context("ops"))
                calls, RECORDED[:] = list(RECORDED), []
                resilient = await _play(await ResilientContext.open(client, "ops"))
            finally:
                client.disconnect()
            return (remote, calls), (resilient, list(RECORDED))

    RECORDED.clear()
    reference = run(in_process())
    # In process the session gets the arguments as given (an absent anchor stays None).
    assert RECORDED == [(session_method(m), session_args if m in TRANSLATED else args)
                        for m, args, _k, session_args in SCRIPT if session_args is not None]
    RECORDED.clear()
    (remote, remote_calls), (resilient, resilient_calls) = run(through_service())
    assert remote_calls == expected_calls and resilient_calls == expected_calls
    for (method, *_), want, got_remote, got_resilient in zip(SCRIPT, reference, remote, resilient):
        if BY_METHOD[method].reply is ops.Reply.VIEW:
            assert _as_sent(want) == got_remote == got_resilient, method
        else:
            assert got_remote is None and got_resilient is None, method
    assert any(v.candidates for v in remote if isinstance(v, View))   # the script reached a conversion


def test_a_remembered_setting_reaches_the_context_the_proxy_recreates(bus_address):
    # The service restarts and forgets the context; the proxy's next context is a password field again.
    async def body():
        client = await EngineClient.connect(bus_address)
        try:
            async with running_service(bus_address, _core):
                ctx = await ResilientContext.open(client, "remembered")
                assert await ctx.set_content_type(PURPOSE_PASSWORD, 0) is None
                assert not (await ctx.process_key(ord("a"), 0, False)).handled
            async with running_service(bus_address, _core):
                await ctx.process_key(ord("a"), 0, False)    # finds the context gone: passes through
                after_restart = await ctx.process_key(ord("a"), 0, False)
                await ctx.set_content_type(0, 0)
                typing_again = await ctx.process_key(ord("a"), 0, False)
        finally:
            client.disconnect()
        return after_restart, typing_again

    after_restart, typing_again = run(body())
    assert not after_restart.handled                              # still a password field
    assert typing_again.handled and typing_again.preedit_text == "あ"


def test_a_host_raising_for_an_unknown_value_is_an_invalid_args_error_only_where_declared(bus_address):
    # SetInputMode maps the session's ValueError to InvalidArgs; other operations keep "Failed".
    from dbus_fast.errors import DBusError

    async def body():
        async with running_service(bus_address, _core):
            client = await EngineClient.connect(bus_address)
            try:
                ctx = await client.create_context("errors")
                with pytest.raises(DBusError) as info:
                    await ctx.set_input_mode("no-such-mode")
                return info.value.type
            finally:
                client.disconnect()

    assert run(body()) == wire.ERROR_INVALID_ARGS


def test_the_introspection_xml_is_well_formed_and_names_each_argument():
    root = ET.fromstring(service.introspection_xml())
    iface = root.find(f"interface[@name='{wire.INTERFACE}']")
    process_key = iface.find("method[@name='ProcessKey']")
    assert [a.get("name") for a in process_key.findall("arg")] == \
        ["context", "keysym", "keycode", "state", "release", "view"]
