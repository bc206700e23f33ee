"""What the session knows of the application's field: the text around the caret, whether the
field is private or a password field, and whether the text being composed was typed while the
field was private.

Privacy belongs to the text, decided when it is typed: a composition typed in a private field is
never learned, nor does it become a learned choice's left context, even when the field turns
normal before the commit.
"""

from __future__ import annotations

from karukan_engine.core.types import ConversionRequest
from karukan_engine.session.field import FieldPrivacy

# The left context of a caret the application says starts a line (an empty field, a new line):
# the converter's language models read a newline as a sentence start, where an empty context
# means text they know nothing of (lattice/word_lm.py open_start). Models and learning that read
# the current line only drop it (neural/prompt.py, dictionary/learning.context_key).
LINE_START = "\n"


class FieldContext:
    def __init__(self, context_chars: int, learning_enabled: bool) -> None:
        self.context_chars = context_chars
        self.learning_enabled = learning_enabled
        self.left = ""                 # text left of the caret on the current line (bounded)
        self.right = ""                # text right of it, as the application reported it
        self.password = False
        self.private = False
        self.typed_private = False     # the composition holds text typed in a private field

    def surround(self, text: str, cursor: int, anchor: int | None = None) -> None:
        """Text around the caret in the application (characters); only the current line is kept."""
        cursor = max(0, min(len(text), cursor))
        anchor = cursor if anchor is None else max(0, min(len(text), anchor))
        start, end = min(cursor, anchor), max(cursor, anchor)
        left = text[:start].rsplit("\n", 1)[-1]
        right = text[end:].split("\n", 1)[0]
        n = self.context_chars
        self.left = (left[-n:] or LINE_START) if n else ""
        self.right = right[:n]

    def forget(self) -> None:
        """The application's text is unknown now (focus out, caret moved)."""
        self.left = self.right = ""

    def set_privacy(self, field: FieldPrivacy, composing: bool) -> None:
        if (self.private or self.password) and not (field.private or field.password):
            # text typed while the field was private must not become a learned choice's context
            self.left = ""
        self.private = field.private
        self.password = field.password
        if field.private and composing:
            self.typed_private = True

    def typed(self) -> None:
        """A key added text to the composition."""
        if self.private:
            self.typed_private = True

    def learning_allowed(self) -> bool:
        return self.learning_enabled and not self.password and not self.private and not self.typed_private

    def request(self, reading: str, fixed_lengths: tuple[int, ...] = ()) -> ConversionRequest:
        return ConversionRequest(reading, self.left, fixed_lengths, learn=self.learning_allowed())

    def committed(self, text: str) -> None:
        """Apps without surrounding text still get what was committed as left context; text
        typed privately in a field that is no longer private is context for nothing."""
        if self.typed_private and not self.private:
            self.left = ""
        elif self.context_chars:
            self.left = (self.left + text)[-self.context_chars:]

    def composition_done(self) -> None:
        self.typed_private = False
