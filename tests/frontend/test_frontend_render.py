"""Views to IBus signals, and the engine service's wire form of a view."""

from __future__ import annotations

import io

from dbus_fast import Message
from dbus_fast._private.unmarshaller import Unmarshaller
from hypothesis import given, settings
from hypothesis import strategies as st

from ime_frontend import wire
from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.render import (
    ANNOTATION_FOREGROUND, PREEDIT_COMMIT, IBusRenderer, aux_text, candidate_text, preedit_attributes,
)
from karukan_engine.session.view import SUGGESTION_HINT, CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View

texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
spans = st.lists(st.builds(PreeditSpan, texts, st.sampled_from(list(PreeditStyle))), max_size=4)


@st.composite
def pages(draw):
    items = draw(st.lists(st.builds(CandidateItem, st.sampled_from("123456789"), texts, texts), min_size=1, max_size=9))
    cursor = draw(st.one_of(st.none(), st.integers(0, len(items) - 1)))
    pages_n = draw(st.integers(1, 5))
    return CandidatePage(tuple(items), cursor, draw(st.integers(0, pages_n - 1)), pages_n,
                         draw(st.integers(len(items), 60)))


@st.composite
def suggestion_pages(draw):
    """The suggestion list is one page."""
    items = draw(st.lists(st.builds(CandidateItem, st.sampled_from("123456789"), texts, texts), min_size=1, max_size=9))
    cursor = draw(st.one_of(st.none(), st.integers(0, len(items) - 1)))
    return CandidatePage(tuple(items), cursor, 0, 1, len(items))


views = st.builds(
    View, handled=st.booleans(), preedit=spans.map(tuple), caret=st.integers(0, 60),
    candidates=st.one_of(st.none(), pages()), aux=texts, commit=texts,
    mode=st.sampled_from(["hiragana", "katakana", "alphanumeric"]), enabled=st.booleans(),
    suggestions=st.one_of(st.none(), suggestion_pages()), on_return=texts,
)


class ClientModel:
    """What an IBus client shows after receiving the engine's signals."""

    def __init__(self) -> None:
        self.preedit = ("", 0, ())
        self.table: tuple | None = None
        self.aux = ""
        self.committed: list[str] = []
        self.orientation: int | None = None
        self.candidate_attrs: tuple = ()

    def apply(self, member: str, body: list) -> None:
        if member == "CommitText":
            self.committed.append(gv.decode_text(body[0])[0])
        elif member == "UpdatePreeditText":
            text, attrs = gv.decode_text(body[0])
            assert body[3] == PREEDIT_COMMIT
            self.preedit = (text, body[1], tuple(attrs)) if body[2] else ("", 0, ())
        elif member == "UpdateLookupTable":
            table = gv.decode_lookup_table(body[0])
            self.table = (table.candidates, table.labels, table.cursor, table.cursor_visible) if body[1] else None
            self.orientation, self.candidate_attrs = table.orientation, table.candidate_attrs
        elif member == "UpdateAuxiliaryText":
            self.aux = gv.decode_text(body[0])[0] if body[1] else ""
        else:
            raise AssertionError(member)


def expected_table(view: View):
    page = view.candidates if view.candidates is not None else view.suggestions
    if page is None:
        return None
    return (tuple(f"{i.text} {i.annotation}" if i.annotation else i.text for i in page.items),
            tuple(i.label for i in page.items), page.cursor or 0, page.cursor is not None)


@settings(max_examples=150, deadline=None)
@given(st.lists(views, min_size=1, max_size=8))
def test_client_shows_exactly_the_last_view(sequence):
    renderer, client = IBusRenderer(), ClientModel()
    for view in sequence:
        for member, _sig, body in renderer.render(view):
            client.apply(member, body)
    last = sequence[-1]
    text = last.preedit_text
    shown = (text, min(last.caret, len(text)), tuple(preedit_attributes(last))) if text else ("", 0, ())
    assert client.preedit == shown
    assert client.table == expected_table(last)
    assert client.aux == aux_text(last)
    assert client.committed == [v.commit for v in sequence if v.commit]


@settings(max_examples=50, deadline=None)
@given(views)
def test_rendering_the_same_view_twice_sends_only_the_commit(view):
    renderer = IBusRenderer()
    renderer.render(view)
    again = renderer.render(view)
    assert [m for m, _s, _b in again] == (["CommitText"] if view.commit else [])


def test_clear_leaves_nothing_shown():
    renderer, client = IBusRenderer(), ClientModel()
    page = CandidatePage((CandidateItem("1", "漢字"),), 0, 0, 1, 1)
    view = View(True, (PreeditSpan("かんじ"),), 3, page, aux="1/1")
    for member, _s, body in renderer.render(view) + renderer.clear():
        client.apply(member, body)
    assert (client.preedit, client.table, client.aux) == (("", 0, ()), None, "")


def test_highlighted_segment_gets_colours_and_offsets_in_characters():
    view = View(True, (PreeditSpan("漢字"), PreeditSpan("を", PreeditStyle.HIGHLIGHT)), 3)
    attrs = preedit_attributes(view)
    assert gv.Attribute(gv.AttrType.UNDERLINE, gv.Underline.SINGLE, 0, 2) in attrs
    assert {(a.type, a.start, a.end) for a in attrs if a.type != gv.AttrType.UNDERLINE} == {
        (gv.AttrType.FOREGROUND, 2, 3), (gv.AttrType.BACKGROUND, 2, 3)}


@settings(max_examples=150, deadline=None)
@given(views)
def test_view_wire_form_round_trips_through_a_dbus_message(view):
    body = [wire.encode_view(view)]
    data = Message(destination="a.b", path="/a", interface="a.b", member="M", signature=wire.VIEW_SIG,
                   body=body)._marshall(False)
    unmarshaller = Unmarshaller(io.BytesIO(data))
    unmarshaller.unmarshall()
    decoded = wire.decode_view(list(unmarshaller.message.body[0]))
    assert decoded == View(view.handled, view.preedit, view.caret, view.candidates, view.aux, view.commit,
                           view.mode, view.enabled, view.suggestions, view.on_return)


def test_suggestions_fill_the_lookup_table_without_a_cursor_until_selected():
    items = (CandidateItem("1", "ありがとう"), CandidateItem("2", "ありがとうございます"))
    renderer, client = IBusRenderer(), ClientModel()
    for cursor, visible in ((None, False), (1, True)):
        view = View(True, (PreeditSpan("ありがと"),), 4, suggestions=CandidatePage(items, cursor, 0, 1, 2))
        for member, _s, body in renderer.render(view):
            client.apply(member, body)
        assert client.table == (("ありがとう", "ありがとうございます"), ("1", "2"), cursor or 0, visible)
    for member, _s, body in renderer.render(View(True, (PreeditSpan("ありがと"),), 4)):
        client.apply(member, body)
    assert client.table is None


def _shown(renderer: IBusRenderer, view: View) -> ClientModel:
    client = ClientModel()
    for member, _s, body in renderer.render(view):
        client.apply(member, body)
    return client


def test_the_table_is_vertical_unless_the_setting_says_horizontal():
    view = View(True, (PreeditSpan("かんじ"),), 3, CandidatePage((CandidateItem("1", "漢字"),), 0, 0, 1, 1))
    assert _shown(IBusRenderer(), view).orientation == gv.Orientation.VERTICAL
    assert _shown(IBusRenderer(vertical=False), view).orientation == gv.Orientation.HORIZONTAL


def test_an_annotation_follows_its_candidate_in_grey():
    items = (CandidateItem("1", "漢字"), CandidateItem("2", "カンジ", "[全]カタカナ"))
    client = _shown(IBusRenderer(), View(True, (PreeditSpan("漢字"),), 2, CandidatePage(items, 0, 0, 1, 2)))
    assert client.table[0] == ("漢字", "カンジ [全]カタカナ")
    grey = gv.Attribute(gv.AttrType.FOREGROUND, ANNOTATION_FOREGROUND, 4, 11)
    assert client.candidate_attrs == ((), (grey,))
    assert candidate_text(items[1]) == ("カンジ [全]カタカナ", (grey,))


def test_the_aux_text_carries_the_page_indicator_or_the_suggestion_hint():
    items = tuple(CandidateItem(str(i + 1), f"候補{i}") for i in range(3))
    converting = View(True, (PreeditSpan("候補1"),), 0, CandidatePage(items, 1, 2, 3, 21))
    assert _shown(IBusRenderer(), converting).aux == "[20/21]"      # the last page holds 19..21
    message = View(True, (PreeditSpan("候補1"),), 0, CandidatePage(items, 1, 2, 3, 21), aux="ライブ変換: オン")
    assert _shown(IBusRenderer(), message).aux == "ライブ変換: オン  [20/21]"
    suggesting = View(True, (PreeditSpan("こう"),), 2, suggestions=CandidatePage(items, None, 0, 1, 3))
    assert _shown(IBusRenderer(), suggesting).aux == SUGGESTION_HINT
    entered = View(True, (PreeditSpan("候補0"),), 3, suggestions=CandidatePage(items, 0, 0, 1, 3))
    assert _shown(IBusRenderer(), entered).aux == "[1/3]"
