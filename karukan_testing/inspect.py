"""Looking inside a session or a composer from a test, without a hook in the runtime code."""

from __future__ import annotations

import copy
import dataclasses

from karukan_engine.romaji.composer import Composer
from karukan_engine.session.session import Session


def resolved_text(composer: Composer) -> str:
    """The text as flush() would leave it (pending keys resolved), the composer unchanged."""
    twin = copy.copy(composer)
    twin.units = [dataclasses.replace(unit) for unit in composer.units]
    twin.flush()
    return "".join(unit.text for unit in twin.units)


def typing_latin_until_word_ends(session: Session) -> bool:
    """Whether a Shift+letter switched the session to Latin letters for the current word."""
    return session._typing.temporary_alphanumeric
