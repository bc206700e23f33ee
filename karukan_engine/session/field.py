"""What the application says about the focused text field, in the session's own terms.

Frontends translate their toolkit's facts (GTK/IBus input purposes and hints, fcitx5 capability
flags) into this; the session never sees a toolkit number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldPrivacy:
    """password: a password or PIN field: keys reach the application untouched, nothing is
    shown or learned. private: the application asks that nothing typed there be learned."""

    password: bool = False
    private: bool = False
