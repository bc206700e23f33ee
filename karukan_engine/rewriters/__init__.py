"""Rewriters: the candidates people expect beyond the dictionary, added after ranking.

Each module is one rewriter with one job — emoji (by reading and `:name`), symbols, emoticons,
dates and times (from the clock when the conversion runs), numbers (notations of digits, digits
of kana numbers), single kanji — and offers Additions: candidates with a place in the list.
stage.RewriterStage applies the enabled ones ([rewriters] in the config) to the candidate list
of a segment when it is built (Space, `convert -n`), never on the typing path; placement.add
keeps each surface once and the converter's first candidate first. Their data is Mozc's tables,
compiled by tools/build_rewriters.py into data/rewriters/ and read once per process.
"""

from karukan_engine.rewriters.stage import RewriterStage

__all__ = ["RewriterStage"]
