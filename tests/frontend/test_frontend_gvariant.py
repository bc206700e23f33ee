"""IBus serialisable objects: exact shapes (checked against libibus itself) and wire round trips."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from dbus_fast import Message, Variant
from dbus_fast._private.unmarshaller import Unmarshaller
from hypothesis import given, settings
from hypothesis import strategies as st

from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.component import component_desc, component_xml

SYSTEM_PYTHON = "/usr/bin/python3"


def through_the_wire(value: Variant) -> Variant:
    """Marshal a variant in a real D-Bus message and read it back."""
    import io

    data = Message(destination="a.b", path="/a", interface="a.b", member="M", signature="v", body=[value])._marshall(False)
    unmarshaller = Unmarshaller(io.BytesIO(data))
    unmarshaller.unmarshall()
    return unmarshaller.message.body[0]


def plain(value):
    """A variant tree as plain JSON-able lists (what GLib's unpack() gives, tuples as lists)."""
    if isinstance(value, Variant):
        return plain(value.value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def libibus(script: str):
    """Run `script` with the system python and libibus (gi); it prints JSON."""
    if not shutil.which(SYSTEM_PYTHON):
        pytest.skip("no system python")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import gi; gi.require_version('IBus', '1.0')"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("python3-gi with the IBus typelib is not installed (dev.sh installs it)")
    prelude = (
        "import json, gi\ngi.require_version('IBus', '1.0')\nfrom gi.repository import IBus\n"
        "def out(obj):\n    v = obj.serialize_object()\n"
        "    print(json.dumps([v.get_type_string(), v.unpack()], ensure_ascii=False))\n"
    )
    result = subprocess.run([SYSTEM_PYTHON, "-c", prelude + script], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_text_with_attributes_matches_libibus():
    (sig, value), = libibus(
        "t = IBus.Text.new_from_string('かんじ')\nt.append_attribute(1, 1, 0, 3)\n"
        "t.append_attribute(3, 0x3465a4, 1, 2)\nout(t)\n")
    ours = gv.text("かんじ", [gv.Attribute(1, 1, 0, 3), gv.Attribute(3, 0x3465A4, 1, 2)])
    assert ours.signature == sig
    assert plain(ours) == value


def test_lookup_table_matches_libibus():
    (sig, value), = libibus(
        "t = IBus.LookupTable.new(3, 1, True, False)\n"
        "for c in ['漢字', '感じ', '幹事']: t.append_candidate(IBus.Text.new_from_string(c))\n"
        "for l in ['1', '2', '3']: t.append_label(IBus.Text.new_from_string(l))\n"
        "t.set_orientation(2)\nout(t)\n")
    ours = gv.lookup_table(["漢字", "感じ", "幹事"], ["1", "2", "3"], cursor=1, page_size=3)
    assert ours.signature == sig
    assert plain(ours) == value


def test_property_menu_matches_libibus():
    (sig, value), = libibus(
        "T = IBus.Text.new_from_string\n"
        "sub = IBus.PropList()\n"
        "sub.append(IBus.Property.new('InputMode.hiragana', IBus.PropType.RADIO, T('Hiragana'), '', T(''),"
        " True, True, IBus.PropState.CHECKED, None))\n"
        "p = IBus.Property.new('InputMode', IBus.PropType.MENU, T('Input mode'), '', T('Switch'),"
        " True, True, IBus.PropState.UNCHECKED, sub)\np.set_symbol(T('あ'))\nout(p)\n")
    ours = gv.property_(gv.Property(
        key="InputMode", label="Input mode", prop_type=gv.PropType.MENU, tooltip="Switch", symbol="あ",
        sub_props=(gv.Property(key="InputMode.hiragana", label="Hiragana", prop_type=gv.PropType.RADIO,
                               state=gv.PropState.CHECKED),),
    ))
    assert ours.signature == sig
    assert plain(ours) == value


def test_engine_desc_field_order_matches_libibus():
    (sig, value), = libibus(
        "d = IBus.EngineDesc(name='karukan', longname='Karukan', description='d', language='ja',"
        " license='L', author='A', icon='i', layout='default', rank=3, symbol='あ', version='0.1',"
        " textdomain='karukan')\nout(d)\n")
    ours = gv.engine_desc(gv.EngineDesc(name="karukan", longname="Karukan", description="d", language="ja",
                                        license="L", author="A", icon="i", layout="default", rank=3,
                                        symbol="あ", version="0.1", textdomain="karukan"))
    assert ours.signature == sig
    assert plain(ours) == value


def test_component_xml_is_read_by_libibus(tmp_path):
    path = tmp_path / "karukan.xml"
    path.write_text(component_xml("/bin/true --ibus", icon="/x/icon.svg"))
    (sig, value), = libibus(f"c = IBus.Component.new_from_file({str(path)!r})\nout(c)\n")
    ours = gv.component(component_desc("/bin/true --ibus", icon="/x/icon.svg"))
    assert ours.signature == sig
    # libibus fills observed paths from the file it read; the rest must be identical.
    ours_plain, theirs = plain(ours), value
    ours_plain[10] = theirs[10] = []
    assert ours_plain == theirs


attributes = st.builds(
    gv.Attribute,
    type=st.sampled_from(list(gv.AttrType)).map(int),
    value=st.integers(0, 0xFFFFFF),
    start=st.integers(0, 50),
    end=st.integers(0, 50),
)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(texts, st.lists(attributes, max_size=6))
def test_text_round_trips_through_a_dbus_message(value, attrs):
    decoded = gv.decode_text(through_the_wire(gv.text(value, attrs)))
    assert decoded == (value, attrs)


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, max_size=9), st.integers(0, 8), st.booleans())
def test_lookup_table_round_trips(candidates, cursor, visible):
    labels = [str(i + 1) for i in range(len(candidates))]
    table = gv.decode_lookup_table(through_the_wire(gv.lookup_table(candidates, labels, cursor, visible)))
    assert table.candidates == tuple(candidates)
    assert table.labels == tuple(labels)
    assert (table.cursor, table.cursor_visible) == (cursor, visible)
    assert table.page_size == max(1, len(candidates))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text("abcxyz", min_size=1, max_size=8), texts), max_size=5), st.integers(0, 4))
def test_property_menu_round_trips(items, checked):
    subs = tuple(gv.Property(key=k, label=label, prop_type=gv.PropType.RADIO,
                             state=gv.PropState.CHECKED if i == checked else gv.PropState.UNCHECKED)
                 for i, (k, label) in enumerate(items))
    menu = gv.Property(key="InputMode", label="Mode", prop_type=gv.PropType.MENU, symbol="あ", sub_props=subs)
    (decoded,) = gv.decode_prop_list(through_the_wire(gv.prop_list([menu])))
    assert decoded == menu
