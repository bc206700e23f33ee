"""The engine service's D-Bus contract: names and the wire form of a View (the methods are in
ime_frontend.operations).

A view travels as one struct so a frontend (Python or the fcitx5 C++ addon) reads it in one go:

    (b handled, s commit, a(su) preedit spans (text, style), u caret (characters),
     a(sss) candidates (label, text, annotation), i candidate cursor (-1: none),
     i page, i pages, u total candidates, s aux, s mode, b enabled,
     a(sss) suggestions (label, text, annotation), i suggestion cursor (-1: none selected))

The suggestions are completions while composing, a list of their own: a frontend shows them
where it shows candidates (there are never both), without a cursor until one is selected.

Style 0 is underline (composing / unfocused segment), 1 is highlight (focused segment).
"""

from __future__ import annotations

from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View

BUS_NAME = "org.karukan.Engine"
OBJECT_PATH = "/org/karukan/Engine"
INTERFACE = "org.karukan.Engine1"
VIEW_SIG = "(bsa(su)ua(sss)iiiussba(sss)i)"

# D-Bus error names the service answers with.
ERROR_UNKNOWN_CONTEXT = "org.karukan.Engine1.Error.UnknownContext"
ERROR_INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
ERROR_LIMITS = "org.karukan.Engine1.Error.LimitsExceeded"

STYLE_CODES = {PreeditStyle.UNDERLINE: 0, PreeditStyle.HIGHLIGHT: 1}
_STYLES_BY_CODE = {code: style for style, code in STYLE_CODES.items()}


def sendable(text: str) -> str:
    """text as a D-Bus string can carry it: a NUL or a lone surrogate (which no word should hold,
    but a model or an old file might) becomes U+FFFD instead of making the whole view unsendable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text.replace("\0", "\ufffd") if "\0" in text else text


def _items(page: CandidatePage | None) -> list:
    items = page.items if page is not None else ()
    return [[sendable(item.label), sendable(item.text), sendable(item.annotation)] for item in items]


def _cursor(page: CandidatePage | None) -> int:
    return page.cursor if page is not None and page.cursor is not None else -1


def encode_view(view: View) -> list:
    page = view.candidates
    return [
        bool(view.handled),
        sendable(view.commit),
        [[sendable(span.text), STYLE_CODES[span.style]] for span in view.preedit],
        max(0, int(view.caret)),
        _items(page),
        _cursor(page),
        page.page if page is not None else 0,
        page.pages if page is not None else 0,
        page.total if page is not None else 0,
        sendable(view.aux),
        sendable(view.mode),
        bool(view.enabled),
        _items(view.suggestions),
        _cursor(view.suggestions),
    ]


def decode_view(fields: list) -> View:
    (handled, commit, spans, caret, items, cursor, page, pages, total, aux, mode, enabled,
     suggestion_items, suggestion_cursor) = fields
    candidates = _page(items, cursor, page, pages, total)
    suggestions = _page(suggestion_items, suggestion_cursor, 0, 1, len(suggestion_items))
    return View(
        handled=handled,
        preedit=tuple(PreeditSpan(text, _STYLES_BY_CODE.get(style, PreeditStyle.UNDERLINE)) for text, style in spans),
        caret=caret,
        candidates=candidates,
        aux=aux,
        commit=commit,
        mode=mode,
        enabled=enabled,
        suggestions=suggestions,
    )


def _page(items: list, cursor: int, page: int, pages: int, total: int) -> CandidatePage | None:
    if not items:
        return None
    return CandidatePage(
        items=tuple(CandidateItem(label, text, note) for label, text, note in items),
        cursor=None if cursor < 0 else cursor,
        page=page,
        pages=pages,
        total=total,
    )
