"""The script and width forms of a reading (Mozc's transliterations): one table, used by the F6–F10
keys, by the tail of every candidate list and by the converters that offer them as candidates."""

from __future__ import annotations

import enum
from typing import Callable

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Source
from karukan_engine.kana import (
    to_fullwidth_ascii,
    to_fullwidth_katakana,
    to_halfwidth_ascii,
    to_halfwidth_katakana,
    to_hiragana,
    to_katakana,
)


class Form(enum.Enum):
    """A transliteration, in the order Mozc lists them; the value is the label shown."""

    HIRAGANA = "[全]ひらがな"
    KATAKANA = "[全]カタカナ"
    HALFWIDTH_KATAKANA = "[半]カタカナ"
    FULLWIDTH_ALPHANUMERIC = "[全]英数"
    HALFWIDTH_ALPHANUMERIC = "[半]英数"

    @property
    def label(self) -> str:
        return self.value

    def of(self, text: str) -> str:
        """The text in this form (half-width kana in the text is read as kana too)."""
        return _TRANSFORMS[self](text)


_TRANSFORMS: dict[Form, Callable[[str], str]] = {
    Form.HIRAGANA: lambda s: to_hiragana(to_fullwidth_katakana(s)),
    Form.KATAKANA: lambda s: to_katakana(to_fullwidth_katakana(s)),
    # Half-width everything: kana, Japanese punctuation and full-width ASCII alike.
    Form.HALFWIDTH_KATAKANA: lambda s: to_halfwidth_ascii(to_halfwidth_katakana(s)),
    Form.FULLWIDTH_ALPHANUMERIC: to_fullwidth_ascii,
    Form.HALFWIDTH_ALPHANUMERIC: to_halfwidth_ascii,
}


def script_variants(reading: str) -> list[Candidate]:
    """Every form of the reading as a candidate, in Form order, each surface once."""
    return unique_surfaces(Candidate(form.of(reading), form.label, Source.VARIANT) for form in Form)
