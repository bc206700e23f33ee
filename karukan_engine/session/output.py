"""The session's output: the View a frontend renders, built from the state (Mozc's
engine_output). Reads the state, changes nothing."""

from __future__ import annotations

from karukan_engine.romaji.composer import Composer
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session.segments import Conversion
from karukan_engine.session.states import Composing, Converting, Direct, SessionState, Suggesting
from karukan_engine.session.suggestions import SuggestionList
from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View


def build_view(state: SessionState, composer: Composer, mode: InputMode, *, handled: bool, commit: str,
               aux: str, suggestions: SuggestionList | None, on_return: str = "") -> View:
    """suggestions: the list to show while composing (None: none may be shown); on_return: what
    a plain Return would commit now (View.on_return)."""
    preedit: tuple[PreeditSpan, ...] = ()
    caret = 0
    candidates = None
    shown = None
    if isinstance(state, Composing):
        text, caret = composition_display(state, composer)
        preedit = (PreeditSpan(text, PreeditStyle.UNDERLINE),) if text else ()
        shown = suggestions.page() if suggestions is not None else None
    elif isinstance(state, Suggesting):
        chosen = state.suggestions.selected
        preedit = (PreeditSpan(chosen.surface, PreeditStyle.HIGHLIGHT),) if chosen else ()
        shown = state.suggestions.page()
    elif isinstance(state, Converting):
        conv = state.conversion
        preedit = tuple(
            PreeditSpan(s.chosen.surface, PreeditStyle.HIGHLIGHT if i == conv.focus else PreeditStyle.UNDERLINE)
            for i, s in enumerate(conv.segments)
        )
        caret = conv.preedit_start(conv.focus)
        candidates = candidate_page(conv)
    return View(handled=handled, preedit=preedit, caret=caret, candidates=candidates, aux=aux, commit=commit,
                mode=mode.value, enabled=not isinstance(state, Direct), suggestions=shown, on_return=on_return)


def composition_display(state: Composing, composer: Composer) -> tuple[str, int]:
    """The preedit text and caret while composing: the live text then the pending keys, or the kana."""
    if state.shows_live(composer) and state.live_text is not None:
        text = state.live_text + composer.text()[len(composer.units):]
        return text, len(text)
    return composer.text(), composer.caret()


def candidate_page(conv: Conversion) -> CandidatePage:
    seg = conv.focused
    size = conv.page_size
    page = seg.index // size
    start = page * size
    items = tuple(
        CandidateItem(str(i + 1), cand.surface, cand.annotation)
        for i, cand in enumerate(seg.candidates[start : start + size])
    )
    return CandidatePage(items, seg.index - start, page, conv.pages(), len(seg.candidates))
