"""The engine service's methods, declared once.

Every operation on an input context is one row of CONTEXT_OPERATIONS: its D-Bus member and
argument types, the ContextHost (and Session) method it maps to, and what it answers. The
service's dispatch table and introspection XML, the client's RemoteContext and the resilient
proxy are built from these rows, so adding a session call is one row here plus the host method
(and the fcitx5 addon, if it uses the call; a test checks the addon against the XML).

The wire protocol is fixed: the fcitx5 addon and released clients send exactly these
signatures. The view they read back (wire.VIEW_SIG) grew the suggestion list, then on_return;
an addon built before that cannot read it, so `karukan install` (which builds the addon from
this tree) must run again after an update.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence
from xml.sax.saxutils import escape

from ime_frontend import wire
from karukan_engine.session.view import View

_REQUIRED = object()


class Reply(Enum):
    VIEW = "view"          # answered with the view after the operation
    NOTHING = "nothing"    # answered empty: the caller only learns that it is done


@dataclass(frozen=True)
class Param:
    """One argument on the wire, and how the host and the Python callers see it."""

    name: str                    # its name in the introspection XML
    code: str                    # its D-Bus type
    host: str | None = ""        # the host method's parameter it feeds; "" = same name, None = wire only
    default: Any = _REQUIRED     # a wire-only argument's value when the caller gives none
    none_means: str | None = None   # None from the caller means this other argument's value

    @property
    def python_name(self) -> str:
        """The argument's name in the Python methods (the host's name where the host takes it)."""
        return self.host or self.name

    @property
    def for_host(self) -> bool:
        return self.host is not None


@dataclass(frozen=True)
class Method:
    """A D-Bus method's shape: what the service declares in its introspection XML."""

    member: str
    ins: tuple[Param, ...]
    outs: tuple[Param, ...]

    @property
    def in_sig(self) -> str:
        return "".join(p.code for p in self.ins)

    @property
    def out_sig(self) -> str:
        return "".join(p.code for p in self.outs)


CONTEXT = Param("context", "u")
VIEW_OUT = Param("view", wire.VIEW_SIG)


@dataclass(frozen=True)
class Operation:
    """A call on one input context: D-Bus (context id, *params) -> Reply, host.method(*host args)."""

    member: str
    method: str
    params: tuple[Param, ...] = ()
    reply: Reply = Reply.VIEW
    # A setting the service forgets with the context (it restarted): the resilient proxy sends
    # the last value again to the context it re-creates.
    remembered: bool = False

    def __post_init__(self) -> None:
        names = {p.name for p in self.params}
        for p in self.params:
            if not p.for_host and p.default is _REQUIRED:
                raise ValueError(f"{self.member}: wire-only argument {p.name} needs a default")
            if p.none_means is not None and p.none_means not in names:
                raise ValueError(f"{self.member}: {p.name} falls back on an unknown argument {p.none_means}")

    @cached_property
    def dbus(self) -> Method:
        return Method(self.member, (CONTEXT, *self.params), (VIEW_OUT,) if self.reply is Reply.VIEW else ())

    @cached_property
    def in_sig(self) -> str:
        return self.dbus.in_sig

    @cached_property
    def out_sig(self) -> str:
        return self.dbus.out_sig

    @cached_property
    def host_params(self) -> tuple[str, ...]:
        """The host method's parameters, in its order."""
        return tuple(p.python_name for p in self.params if p.for_host)

    @cached_property
    def python_params(self) -> tuple[Param, ...]:
        """The Python callers' parameters: the host's, then the wire-only ones (with defaults)."""
        return tuple(p for p in self.params if p.for_host) + tuple(p for p in self.params if not p.for_host)

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A Python caller's arguments by name, as a function with python_params would take them."""
        params = self.python_params
        if not kwargs and len(args) == len(self.host_params):   # the usual call: no wire-only values
            return {**self._defaults, **dict(zip(self.host_params, args))}
        if len(args) > len(params):
            raise TypeError(f"{self.method}() takes {len(params)} arguments, got {len(args)}")
        values = {p.python_name: a for p, a in zip(params, args)}
        for name, value in kwargs.items():
            if name in values or all(p.python_name != name for p in params):
                raise TypeError(f"{self.method}() got an unexpected or repeated argument {name!r}")
            values[name] = value
        for p in params:
            if p.python_name not in values:
                if p.default is _REQUIRED:
                    raise TypeError(f"{self.method}() missing argument {p.python_name!r}")
                values[p.python_name] = p.default
        return values

    @cached_property
    def _defaults(self) -> dict[str, Any]:
        return {p.python_name: p.default for p in self.params if not p.for_host}

    def wire_body(self, context: int, values: Mapping[str, Any]) -> list:
        """The message body for a call on `context` with the (bound) values."""
        body = [context]
        for p in self.params:
            value = values[p.python_name]
            if value is None and p.none_means is not None:
                value = values[self._param(p.none_means).python_name]
            body.append(value)
        return body

    def host_args(self, body: Sequence[Any]) -> tuple[int, tuple]:
        """(context id, the host method's arguments) from a message body; wire-only ones dropped."""
        context, *rest = body
        return context, tuple(value for p, value in zip(self.params, rest) if p.for_host)

    def python_signature(self) -> inspect.Signature:
        """The signature of the Python methods derived from this operation (self first)."""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter("self", kind)]
        for p in self.python_params:
            default = inspect.Parameter.empty if p.default is _REQUIRED else p.default
            params.append(inspect.Parameter(p.python_name, kind, default=default))
        return inspect.Signature(params)

    def _param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


# The contract, in the order the introspection XML lists it.
PROCESS_KEY = Operation("ProcessKey", "process_key", (
    Param("keysym", "u"),
    Param("keycode", "u", host=None, default=0),   # sent by the addon; the session needs only the keysym
    Param("state", "u", host="modifiers"),
    Param("release", "b"),
))
FOCUS_IN = Operation("FocusIn", "focus_in")
FOCUS_OUT = Operation("FocusOut", "focus_out")
RESET = Operation("Reset", "reset")
PAGE_UP = Operation("PageUp", "page_up")
PAGE_DOWN = Operation("PageDown", "page_down")
GET_VIEW = Operation("GetView", "get_view")
SELECT_CANDIDATE = Operation("SelectCandidate", "select_candidate", (Param("index", "u"),))
SET_SURROUNDING_TEXT = Operation("SetSurroundingText", "set_surrounding_text", (
    Param("text", "s"), Param("cursor", "u"), Param("anchor", "u", none_means="cursor"),
), Reply.NOTHING)
SET_CONTENT_TYPE = Operation("SetContentType", "set_content_type", (
    Param("purpose", "u"), Param("hints", "u"),
), Reply.NOTHING, remembered=True)
# A frontend committed the view's on_return for a plain Return itself (wire.py): the session
# finishes that Return. Nothing to answer: the frontend already shows the result.
RETURN_COMMITTED = Operation("ReturnCommitted", "return_committed", (Param("text", "s"),), Reply.NOTHING)
SET_INPUT_MODE = Operation("SetInputMode", "set_input_mode", (Param("mode", "s"),))
SET_ENABLED = Operation("SetEnabled", "set_enabled", (Param("enabled", "b", host="on"),))

CONTEXT_OPERATIONS: tuple[Operation, ...] = (
    PROCESS_KEY, FOCUS_IN, FOCUS_OUT, RESET, PAGE_UP, PAGE_DOWN, GET_VIEW, SELECT_CANDIDATE,
    SET_SURROUNDING_TEXT, SET_CONTENT_TYPE, SET_INPUT_MODE, SET_ENABLED, RETURN_COMMITTED,
)

# The methods around the operations: a context's life, and the service itself.
CREATE_CONTEXT = Method("CreateContext", (Param("client_name", "s"),), (CONTEXT,))
DESTROY_CONTEXT = Method("DestroyContext", (CONTEXT,), ())
GET_INFO = Method("GetInfo", (), (Param("info", "a{ss}"),))

INTERFACE_METHODS: tuple[Method, ...] = (
    CREATE_CONTEXT, DESTROY_CONTEXT, *(op.dbus for op in CONTEXT_OPERATIONS), GET_INFO,
)
# A late view (the model's text after the key was answered) for the context's owner, with the
# number of view replies the service had sent to that context: a receiver that has read more
# (fcitx5's addon reads its replies before the signals queued meanwhile) drops it as stale.
VIEW_UPDATED = Method("ViewUpdated", (CONTEXT, Param("replies", "u"), VIEW_OUT), ())


class InputContext(Protocol):
    """What a frontend holds for one input context: ContextHost (in process), RemoteContext
    (through the service) and ResilientContext all offer CONTEXT_OPERATIONS plus close()."""

    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View: ...
    async def focus_in(self) -> View: ...
    async def focus_out(self) -> View: ...
    async def reset(self) -> View: ...
    async def page_up(self) -> View: ...
    async def page_down(self) -> View: ...
    async def get_view(self) -> View: ...
    async def select_candidate(self, index: int) -> View: ...
    # These two answer None through the service (a View in process).
    async def set_surrounding_text(self, text: str, cursor: int, anchor: int | None) -> Any: ...
    async def set_content_type(self, purpose: int, hints: int) -> Any: ...
    async def set_input_mode(self, mode: str) -> View: ...
    async def set_enabled(self, on: bool) -> View: ...
    async def return_committed(self, text: str) -> Any: ...
    async def close(self) -> None: ...


def operation_method(op: Operation, run: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """An async method named op.method that calls run(self, op, *args, **kwargs); it shows the
    parameters op declares to inspect.signature() and help()."""

    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await run(self, op, *args, **kwargs)

    method.__name__ = method.__qualname__ = op.method
    method.__doc__ = f"{op.member} on this input context (ime_frontend.operations)."
    method.__signature__ = op.python_signature()  # type: ignore[attr-defined]
    return method


def introspection_xml(interface: str = wire.INTERFACE) -> str:
    """The service's introspection XML, from INTERFACE_METHODS and VIEW_UPDATED."""

    def args(params: tuple[Param, ...], direction: str | None) -> str:
        where = f' direction="{direction}"' if direction else ""
        return "".join(f'<arg name="{p.name}" type="{escape(p.code)}"{where}/>' for p in params)

    methods = "".join(
        f'<method name="{m.member}">{args(m.ins, "in")}{args(m.outs, "out")}</method>' for m in INTERFACE_METHODS
    )
    signal = f'<signal name="{VIEW_UPDATED.member}">{args(VIEW_UPDATED.ins, None)}</signal>'
    return (
        '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" '
        '"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">'
        f'<node><interface name="{interface}">{methods}{signal}</interface>'
        '<interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect">'
        '<arg name="xml" type="s" direction="out"/></method></interface></node>'
    )
