"""IBus serialisable objects as D-Bus values (dbus-fast Variants), built without GObject.

Every IBusSerializable travels as a struct `(s type_name, a{sv} attachments, ...fields)` wrapped in
a `v`; attachments are always empty. Attribute offsets are in characters, end exclusive.
Shapes verified against ibus 1.5.27 (see the project's IBus reference notes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Sequence

from dbus_fast import Variant

ATTRIBUTE_SIG = "(sa{sv}uuuu)"
ATTR_LIST_SIG = "(sa{sv}av)"
TEXT_SIG = "(sa{sv}sv)"
LOOKUP_TABLE_SIG = "(sa{sv}uubbiavav)"
PROPERTY_SIG = "(sa{sv}suvsvbbuvv)"
PROP_LIST_SIG = "(sa{sv}av)"
ENGINE_DESC_SIG = "(sa{sv}ssssssssussssssss)"
COMPONENT_SIG = "(sa{sv}ssssssssavav)"


class AttrType(enum.IntEnum):
    UNDERLINE = 1
    FOREGROUND = 2
    BACKGROUND = 3


class Underline(enum.IntEnum):
    NONE = 0
    SINGLE = 1
    DOUBLE = 2
    LOW = 3
    ERROR = 4


class PropType(enum.IntEnum):
    NORMAL = 0
    TOGGLE = 1
    RADIO = 2
    MENU = 3
    SEPARATOR = 4


class PropState(enum.IntEnum):
    UNCHECKED = 0
    CHECKED = 1
    INCONSISTENT = 2


class Orientation(enum.IntEnum):
    HORIZONTAL = 0
    VERTICAL = 1
    SYSTEM = 2


@dataclass(frozen=True)
class Attribute:
    type: int
    value: int
    start: int   # characters
    end: int     # characters, exclusive


def attribute(attr: Attribute) -> Variant:
    return Variant(ATTRIBUTE_SIG, ["IBusAttribute", {}, attr.type, attr.value, attr.start, attr.end])


def attr_list(attrs: Sequence[Attribute] = ()) -> Variant:
    return Variant(ATTR_LIST_SIG, ["IBusAttrList", {}, [attribute(a) for a in attrs]])


def text(value: str, attrs: Sequence[Attribute] = ()) -> Variant:
    return Variant(TEXT_SIG, ["IBusText", {}, value, attr_list(attrs)])


def lookup_table(
    candidates: Sequence[str],
    labels: Sequence[str] = (),
    cursor: int = 0,
    cursor_visible: bool = True,
    page_size: int | None = None,
    orientation: Orientation = Orientation.SYSTEM,
    round_: bool = False,
    candidate_attrs: Sequence[Sequence[Attribute]] = (),
) -> Variant:
    """candidate_attrs: each candidate's text attributes, in order (none for the ones left out)."""
    size = page_size if page_size is not None else max(1, len(candidates))
    attrs = list(candidate_attrs) + [()] * (len(candidates) - len(candidate_attrs))
    return Variant(
        LOOKUP_TABLE_SIG,
        [
            "IBusLookupTable", {}, size, cursor, cursor_visible, round_, int(orientation),
            [text(c, a) for c, a in zip(candidates, attrs)], [text(label) for label in labels],
        ],
    )


@dataclass(frozen=True)
class Property:
    key: str
    label: str
    prop_type: PropType = PropType.NORMAL
    icon: str = ""
    tooltip: str = ""
    sensitive: bool = True
    visible: bool = True
    state: PropState = PropState.UNCHECKED
    sub_props: tuple["Property", ...] = field(default_factory=tuple)
    symbol: str = ""


def prop_list(props: Sequence[Property]) -> Variant:
    return Variant(PROP_LIST_SIG, ["IBusPropList", {}, [property_(p) for p in props]])


def property_(prop: Property) -> Variant:
    return Variant(
        PROPERTY_SIG,
        [
            "IBusProperty", {}, prop.key, int(prop.prop_type), text(prop.label), prop.icon,
            text(prop.tooltip), prop.sensitive, prop.visible, int(prop.state),
            prop_list(prop.sub_props), text(prop.symbol),
        ],
    )


@dataclass(frozen=True)
class EngineDesc:
    name: str
    longname: str
    description: str
    language: str = "ja"
    license: str = "MIT OR Apache-2.0"
    author: str = "Karukan developers"
    icon: str = ""
    layout: str = "default"
    rank: int = 0
    hotkeys: str = ""
    symbol: str = ""
    setup: str = ""
    layout_variant: str = ""
    layout_option: str = ""
    version: str = ""
    textdomain: str = ""
    icon_prop_key: str = ""


def engine_desc(desc: EngineDesc) -> Variant:
    return Variant(
        ENGINE_DESC_SIG,
        [
            "IBusEngineDesc", {}, desc.name, desc.longname, desc.description, desc.language,
            desc.license, desc.author, desc.icon, desc.layout, desc.rank, desc.hotkeys, desc.symbol,
            desc.setup, desc.layout_variant, desc.layout_option, desc.version, desc.textdomain,
            desc.icon_prop_key,
        ],
    )


@dataclass(frozen=True)
class ComponentDesc:
    name: str
    description: str
    version: str
    license: str
    author: str
    homepage: str
    exec: str
    textdomain: str
    engines: tuple[EngineDesc, ...]


def component(comp: ComponentDesc) -> Variant:
    return Variant(
        COMPONENT_SIG,
        [
            "IBusComponent", {}, comp.name, comp.description, comp.version, comp.license,
            comp.author, comp.homepage, comp.exec, comp.textdomain, [],
            [engine_desc(e) for e in comp.engines],
        ],
    )


# --- decoding (what a pure D-Bus IBus client receives) ----------------------------------------

def _unwrap(value: Variant | list | tuple, type_name: str) -> list | tuple:
    fields = value.value if isinstance(value, Variant) else value
    if not isinstance(fields, (list, tuple)) or len(fields) < 2 or fields[0] != type_name:
        raise ValueError(f"not an {type_name}")
    return fields


def decode_attributes(value: Variant | list) -> list[Attribute]:
    fields = _unwrap(value, "IBusAttrList")
    return [Attribute(*_unwrap(a, "IBusAttribute")[2:6]) for a in fields[2]]


def decode_text(value: Variant | list) -> tuple[str, list[Attribute]]:
    fields = _unwrap(value, "IBusText")
    return fields[2], decode_attributes(fields[3])


@dataclass(frozen=True)
class DecodedLookupTable:
    page_size: int
    cursor: int
    cursor_visible: bool
    round: bool
    orientation: int
    candidates: tuple[str, ...]
    labels: tuple[str, ...]
    candidate_attrs: tuple[tuple[Attribute, ...], ...] = ()


def decode_lookup_table(value: Variant | list) -> DecodedLookupTable:
    f = _unwrap(value, "IBusLookupTable")
    return DecodedLookupTable(
        f[2], f[3], f[4], f[5], f[6],
        tuple(decode_text(c)[0] for c in f[7]), tuple(decode_text(c)[0] for c in f[8]),
        tuple(tuple(decode_text(c)[1]) for c in f[7]),
    )


def decode_prop_list(value: Variant | list) -> list[Property]:
    return [decode_property(p) for p in _unwrap(value, "IBusPropList")[2]]


def decode_property(value: Variant | list) -> Property:
    f = _unwrap(value, "IBusProperty")
    return Property(
        key=f[2], prop_type=PropType(f[3]), label=decode_text(f[4])[0], icon=f[5],
        tooltip=decode_text(f[6])[0], sensitive=f[7], visible=f[8], state=PropState(f[9]),
        sub_props=tuple(decode_prop_list(f[10])), symbol=decode_text(f[11])[0],
    )
