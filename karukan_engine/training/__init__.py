"""Build the bundled kana-kanji model: corpus -> readings -> pairs -> training -> GGUF -> eval.

Training-only code (needs the `train` extra: torch, fugashi, unidic-lite, sudachipy). The runtime
never imports this package. Every stage caches its output under the work directory (default
`work_data/` in the repository root) and can be run alone: `python -m karukan_engine.training`.
"""
