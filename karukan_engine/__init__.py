"""Karukan: a Japanese input method engine (romaji, dictionary lattice, neural kana-kanji)."""

__version__ = "0.1.0"
