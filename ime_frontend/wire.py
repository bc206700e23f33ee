"""The engine service's D-Bus contract: names and the wire form of a View (the methods are in
ime_frontend.operations).

A view travels as one struct so a frontend (Python or the fcitx5 C++ addon) reads it in one go:

    (b handled, s commit, a(su) preedit spans (text, style), u caret (characters),
     a(sss) candidates (label, text, annotation), i candidate cursor (-1: none),
     i page, i pages, u total candidates, s aux, s mode, b enabled,
     a(sss) suggestions (label, text, annotation), i suggestion cursor (-1: none selected),
     s on_return (what a plain Return would commit now; "" when it would do anything else))

The suggestions are completions while composing, a list of their own: a frontend shows them
where it shows candidates (there are never both), without a cursor until one is selected.

A ProcessKey reply may leave out a suggestion list that has not changed since the previous
reply for that context: no items and the cursor SUGGESTIONS_UNCHANGED (-2) mean "the list of
the last reply, again". Typing with the list open then sends it once, not with every key
(fcitx5 rebuilds and redraws its candidate list for every list it is given). Only replies are
compared, with replies: every other reply and every ViewUpdated signal carries its list whole,
and replies to one context arrive in order, so a receiver that handles signals before or after
the replies around them (fcitx5 queues signals during a blocking call) still reads each list
right. ViewEncoder (the service, one per context) and ViewDecoder (a Python client, one per
context) hold that one list.

on_return lets a frontend answer a plain Return without asking: it commits that text and
clears what it shows at once, then calls ReturnCommitted (operations.py) so the session does the
rest (learning, ending the composition) in order with the keys that follow. Late views that
arrive in between belong to the committed composition; the frontend drops them.

Style 0 is underline (composing / unfocused segment), 1 is highlight (focused segment).
"""

from __future__ import annotations

from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View

BUS_NAME = "org.karukan.Engine"
OBJECT_PATH = "/org/karukan/Engine"
INTERFACE = "org.karukan.Engine1"
VIEW_SIG = "(bsa(su)ua(sss)iiiussba(sss)is)"

# D-Bus error names the service answers with.
ERROR_UNKNOWN_CONTEXT = "org.karukan.Engine1.Error.UnknownContext"
ERROR_INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
ERROR_LIMITS = "org.karukan.Engine1.Error.LimitsExceeded"

# The suggestion cursor of a reply whose list is the one sent last (see above).
SUGGESTIONS_UNCHANGED = -2

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


def encode_view(view: View, suggestions_unchanged: bool = False) -> list:
    """The view's wire form; suggestions_unchanged: leave the suggestion list out (the
    receiver keeps the one it has), for ViewEncoder to decide."""
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
        [] if suggestions_unchanged else _items(view.suggestions),
        SUGGESTIONS_UNCHANGED if suggestions_unchanged else _cursor(view.suggestions),
        sendable(view.on_return),
    ]


def decode_view(fields: list, last_suggestions: CandidatePage | None = None) -> View:
    """A View from its wire form; last_suggestions: the list to show when the view says its
    list is unchanged (ViewDecoder remembers it)."""
    (handled, commit, spans, caret, items, cursor, page, pages, total, aux, mode, enabled,
     suggestion_items, suggestion_cursor, on_return) = fields
    candidates = _page(items, cursor, page, pages, total)
    if suggestion_cursor == SUGGESTIONS_UNCHANGED:
        suggestions = last_suggestions
    else:
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
        on_return=on_return,
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


class ViewEncoder:
    """One context's replies as the service sends them: a key's reply leaves the suggestion
    list out when the previous reply carried the same one. Signals use encode_view."""

    def __init__(self) -> None:
        self._replied: CandidatePage | None = None   # the list of the last reply sent
        self.replies = 0   # view replies encoded: a late view's signal says how many came before it

    def encode_reply(self, view: View, key_reply: bool = False) -> list:
        """key_reply: the view answers ProcessKey (the only kind that may leave the list out)."""
        unchanged = key_reply and view.suggestions is not None and view.suggestions == self._replied
        self._replied = view.suggestions
        self.replies = (self.replies + 1) & 0xFFFFFFFF
        return encode_view(view, suggestions_unchanged=unchanged)

    def forget(self) -> None:
        """The last reply never reached the receiver (it could not be sent): send the next list whole."""
        self._replied = None


class ViewDecoder:
    """One context's replies as a Python client reads them (in order): an unchanged suggestion
    list is the one of the previous reply. Signals use decode_view."""

    def __init__(self) -> None:
        self._replied: CandidatePage | None = None

    def decode_reply(self, fields: list) -> View:
        view = decode_view(fields, self._replied)
        self._replied = view.suggestions
        return view
