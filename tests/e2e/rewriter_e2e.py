"""The rewriters end to end: ねこ → 🐱 and きょう → today's date (read from the clock when the
conversion runs) reach the candidate window of a real framework and commit."""

from __future__ import annotations

SPACE, RETURN = 0x20, 0xFF0D
MAX_STEPS = 40


def shows(page: list[str], surface: str, annotation: str = "") -> bool:
    """Whether the page lists surface, with `annotation` after it when one is given (both
    frameworks' windows show it after the candidate's text)."""
    if annotation:
        return f"{surface} {annotation}" in page
    return any(text == surface or text.startswith(surface + " ") for text in page)


async def type_text(app, text: str) -> None:
    for ch in text:
        assert await app.tap(ord(ch)), ch


async def convert_and_commit(app, keys: str, wanted: str) -> list[list[str]]:
    """Type keys, Space, then Space through the list until `wanted` is shown; Return commits."""
    await type_text(app, keys)
    assert await app.tap(SPACE)
    pages = [list(app.shown.candidates)]
    for _ in range(MAX_STEPS):
        if app.shown.preedit == wanted:
            break
        assert await app.tap(SPACE)
        pages.append(list(app.shown.candidates))
    assert app.shown.preedit == wanted, pages
    assert await app.tap(RETURN)
    assert app.shown.commits[-1] == wanted
    return pages

