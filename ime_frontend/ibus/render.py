"""Turn engine Views into IBus engine signals, sending only what changed.

Preedit text is shown with PREEDIT_COMMIT mode so that ibus-daemon itself commits what the user
sees when focus leaves mid-composition (the engine then drops the session's focus-out commit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ime_frontend.ibus import gvariant as gv
from karukan_engine.session.view import CandidateItem, PreeditStyle, View

PREEDIT_CLEAR = 0
PREEDIT_COMMIT = 1

# The focused segment in conversion: light text on a blue background, as most IBus engines do.
HIGHLIGHT_FOREGROUND = 0xFFFFFF
HIGHLIGHT_BACKGROUND = 0x3465A4
# A candidate's annotation follows its text in grey (IBus tables have no comment column; ibus-mozc
# appends its descriptions the same way).
ANNOTATION_FOREGROUND = 0x808080

Signal = tuple[str, str, list[Any]]   # (member, signature, body)


def candidate_text(item: CandidateItem) -> tuple[str, tuple[gv.Attribute, ...]]:
    """A candidate as the lookup table shows it: its text, then its annotation in grey."""
    if not item.annotation:
        return item.text, ()
    start = len(item.text) + 1
    shown = f"{item.text} {item.annotation}"
    return shown, (gv.Attribute(gv.AttrType.FOREGROUND, ANNOTATION_FOREGROUND, start, len(shown)),)


def aux_text(view: View) -> str:
    """The auxiliary text: the session's message, then the candidate window's footer ([2/37], or
    the suggestion list's hint), as ibus-mozc shows them above its table."""
    return "  ".join(part for part in (view.aux, view.candidate_footer) if part)


def preedit_attributes(view: View) -> list[gv.Attribute]:
    attrs: list[gv.Attribute] = []
    start = 0
    for span in view.preedit:
        end = start + len(span.text)
        if end > start:
            attrs.append(gv.Attribute(gv.AttrType.UNDERLINE, gv.Underline.SINGLE, start, end))
            if span.style is PreeditStyle.HIGHLIGHT:
                attrs.append(gv.Attribute(gv.AttrType.FOREGROUND, HIGHLIGHT_FOREGROUND, start, end))
                attrs.append(gv.Attribute(gv.AttrType.BACKGROUND, HIGHLIGHT_BACKGROUND, start, end))
        start = end
    return attrs


@dataclass
class IBusRenderer:
    """Remembers what the client shows so each View sends only the signals that change it."""

    _preedit: tuple | None = None
    _table: tuple | None = None
    _aux: str | None = None
    vertical: bool = True            # [ui] candidate_layout: one candidate a line, else a strip
    # Whether the last render moved the caret on screen (the preedit text before it changed):
    # the client will report a new cursor rectangle once it has drawn the preedit.
    caret_moved: bool = False

    def render(self, view: View, commit: bool = True) -> list[Signal]:
        signals: list[Signal] = []
        self.caret_moved = False
        if commit and view.commit:
            signals.append(("CommitText", "v", [gv.text(view.commit)]))
        self._render_preedit(view, signals)
        self._render_table(view, signals)
        aux = aux_text(view)
        if aux != (self._aux or ""):
            signals.append(("UpdateAuxiliaryText", "vb", [gv.text(aux), bool(aux)]))
        self._aux = aux
        return signals

    @property
    def showing_candidates(self) -> bool:
        return self._table is not None

    def clear(self) -> list[Signal]:
        """Signals that leave the client with no preedit, candidates or aux text."""
        return self.render(View(handled=False), commit=False)

    def _render_preedit(self, view: View, signals: list[Signal]) -> None:
        text = view.preedit_text
        caret = min(max(0, view.caret), len(text))
        attrs = tuple(preedit_attributes(view))
        state = (text, caret, attrs)
        old_text, old_caret, _old_attrs = self._preedit or ("", 0, ())
        if state == (old_text, old_caret, _old_attrs):
            return
        self.caret_moved = text[:caret] != old_text[:old_caret]
        signals.append(("UpdatePreeditText", "vubu", [gv.text(text, attrs), caret, bool(text), PREEDIT_COMMIT]))
        self._preedit = state

    def _render_table(self, view: View, signals: list[Signal]) -> None:
        # Suggestions take the candidate window while composing (as in ibus-mozc), without a
        # cursor until one is selected; a view never carries both.
        page = view.candidates if view.candidates is not None else view.suggestions
        if page is None or not page.items:
            if self._table is not None:
                signals.append(("UpdateLookupTable", "vb", [gv.lookup_table([]), False]))
            self._table = None
            return
        state = (tuple((i.label, i.text, i.annotation) for i in page.items), page.cursor)
        if state == self._table:
            return
        shown = [candidate_text(i) for i in page.items]
        table = gv.lookup_table(
            [text for text, _attrs in shown],
            labels=[i.label for i in page.items],
            cursor=page.cursor if page.cursor is not None else 0,
            cursor_visible=page.cursor is not None,
            page_size=len(page.items),
            orientation=gv.Orientation.VERTICAL if self.vertical else gv.Orientation.HORIZONTAL,
            candidate_attrs=[attrs for _text, attrs in shown],
        )
        signals.append(("UpdateLookupTable", "vb", [table, True]))
        self._table = state
