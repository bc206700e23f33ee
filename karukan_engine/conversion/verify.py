"""Zenzai-style verification (after azooKey's Zenzai): the model checks the lattice's draft.

The draft (the lattice's best) is checked by the model in one teacher-forced pass. Where the
model's argmax departs from the draft, the lattice is searched again with the prefix the model
prefers fixed (constrained lattice, align.py), giving a new draft. This repeats within a small
number of rounds. The result is always a dictionary path, so it segments cleanly; the model only
steers which path.
"""

from __future__ import annotations

from karukan_engine.conversion.align import Aligner

REPLACEMENT_CHAR = "\ufffd"  # a token that ends inside a UTF-8 sequence decodes to this


def verify_draft(slot, aligner: Aligner, reading: str, context: str, draft: str, rounds: int) -> str:
    """The draft after up to `rounds` model checks and constrained lattice re-runs."""
    for _ in range(rounds):
        prefix = slot.check_draft(reading, context, draft)
        if not prefix or REPLACEMENT_CHAR in prefix:
            return draft
        alignment = aligner.best_with_prefix(reading, prefix)
        if alignment is None:
            return draft
        revised = "".join(word.surface for word in alignment.words)
        if revised == draft:
            return draft
        draft = revised
    return draft
