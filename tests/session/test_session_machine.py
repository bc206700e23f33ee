"""Random key sequences over all states and modes: no exception, no broken invariant."""

from dataclasses import replace

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from karukan_engine.session import InputMode, Keymap, Session, State, View
from karukan_engine.session.keysyms import (
    CONTROL_MASK,
    LOCK_MASK,
    SHIFT_MASK,
    keysym_for_char,
    parse_key_spec,
)
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.session import reading_of
from karukan_testing.inspect import resolved_text
from session_fakes import ScriptedConverter

WORDS = {"きょう": ["今日", "京"], "は": ["葉"], "かん": [f"漢{i}" for i in range(12)], "てんき": ["天気"]}
SEGMENTS = {"きょうはてんき": ["きょうは", "てんき"], "かんき": ["かん", "き"]}

# Every key the default keymap binds, plus keys nothing binds.
BOUND = sorted({combo for table in Keymap.default().bindings.values() for combo in table},
               key=lambda c: (c.keysym, c.modifiers))
KEYS = st.sampled_from([(c.keysym, c.modifiers) for c in BOUND]
                       + [(parse_key_spec(n)[0], 0) for n in ("F1", "Insert", "Menu", "Shift_L")]
                       + [(0x12345678, 0), (0x1F, 0), (0x7F, 0), (0x1000000, 0)])
CHARS = st.sampled_from("kyouhatenkinaisumy-.,!?/[]~'1234 ABZxlzhjあ")
MODIFIERS = st.sampled_from([0, 0, 0, SHIFT_MASK, LOCK_MASK, CONTROL_MASK])


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.converter = ScriptedConverter(WORDS, SEGMENTS)
        self.session = Session(self.converter)
        self.last: View = self.session.view
        self.allowed: set[str] = set()
        self.password = False

    # What a commit may contain: what was shown (or its pending keys resolved), its live
    # conversion, the conversion with any candidate of the focused segment, a typed space.
    def _expect(self) -> None:
        s = self.session
        view = s.view
        shown = view.preedit_text
        resolved = resolved_text(s._composer)
        allowed = {shown, resolved, "\u3000", " ", self.converter.live(_req(reading_of(resolved)))}
        if view.candidates is not None:
            conv = s._state.conversion
            for cand in conv.focused.candidates:
                allowed.add("".join(cand.surface if i == conv.focus else seg.chosen.surface
                                    for i, seg in enumerate(conv.segments)))
            allowed.add(conv.segments[0].chosen.surface)    # commit first segment
        self.allowed = allowed

    def _check(self, view: View, shown_before: str) -> None:
        self.last = view
        if view.commit:
            assert shown_before or view.commit in ("\u3000", " "), "commit from an empty session"
            assert view.commit in self.allowed, f"unexpected commit {view.commit!r}"

    def _do(self, action) -> None:
        self._expect()
        before = self.session.view.preedit_text
        learned = len(self.converter.recorded)
        view = action()
        assert isinstance(view, View)
        self._check(view, before)
        if self.password:
            assert len(self.converter.recorded) == learned, "learned in a password field"

    @rule(ch=CHARS, mods=MODIFIERS)
    def type_char(self, ch, mods):
        if ch.isupper():
            mods |= SHIFT_MASK
        self._do(lambda: self.session.process_key(keysym_for_char(ch), mods))

    @rule(key=KEYS)
    def press(self, key):
        self._do(lambda: self.session.process_key(*key))
        if self.password:
            assert not self.last.handled

    @rule(key=KEYS)
    def release(self, key):
        # Nothing changes for a release: the frontends answer one without asking the session.
        before = self.session.view
        view = self.session.process_key(key[0], key[1], release=True)
        assert not view.handled and not view.commit
        assert view == replace(before, handled=False) and self.session.view == before

    @rule(index=st.integers(-2, 10))
    def click(self, index):
        self._do(lambda: self.session.select_candidate(index))

    @rule(down=st.booleans())
    def page(self, down):
        self._do(self.session.page_down if down else self.session.page_up)

    @rule(mode=st.sampled_from(list(InputMode)))
    def set_mode(self, mode):
        self._do(lambda: self.session.set_input_mode(mode))

    @rule(on=st.booleans())
    def enable(self, on):
        self._do(lambda: self.session.set_enabled(on))

    @rule()
    def focus_out(self):
        self._do(self.session.focus_out)
        assert self.session.state in (State.PRECOMPOSITION, State.DIRECT)

    @rule()
    def reset(self):
        view = self.session.reset()
        assert not view.commit and not view.preedit

    @rule(text=st.text(max_size=30), cursor=st.integers(-3, 40))
    def surrounding(self, text, cursor):
        self.session.set_surrounding_text(text, cursor)
        assert len(self.session.left_context) <= self.session.config.session.context_chars

    @precondition(lambda self: self.session.state is State.PRECOMPOSITION)
    @rule(password=st.booleans())
    def content_type(self, password):
        self.session.set_field_privacy(FieldPrivacy(password=password))
        self.password = password

    @invariant()
    def view_is_consistent(self):
        s = self.session
        v = s.view
        assert v.handled and not v.commit
        assert 0 <= v.caret <= len(v.preedit_text)
        assert v.enabled == (s.state is not State.DIRECT)
        assert v.mode == s.input_mode.value
        if s.state is State.COMPOSITION:
            assert v.preedit_text and v.candidates is None
        elif s.state is State.CONVERSION:
            page = v.candidates
            assert page is not None and v.preedit_text
            assert 1 <= len(page.items) <= s.config.session.page_size
            assert page.cursor is not None and 0 <= page.cursor < len(page.items)
            assert 0 <= page.page < page.pages and page.total >= len(page.items)
            assert [i.label for i in page.items] == [str(n + 1) for n in range(len(page.items))]
            assert sum(1 for p in v.preedit if p.style.value == "highlight") == 1
            conv = s._state.conversion
            assert "".join(seg.reading for seg in conv.segments) == conv.reading
        else:
            assert not v.preedit and v.candidates is None
        for pairs, _ in self.converter.recorded:
            assert pairs and all(r and surf for r, surf in pairs)


def _req(reading):
    from karukan_engine.core.types import ConversionRequest

    return ConversionRequest(reading)


TestSessionMachine = SessionMachine.TestCase
TestSessionMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow])
