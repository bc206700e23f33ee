"""Test and benchmark support, never part of the runtime install (pyproject.toml lists only
karukan_engine and ime_frontend): tiny GGUF models and reference decoders, random-weight
stand-ins of the published models, a private headless desktop and the application clients
that drive it. It may import any runtime layer; no runtime module may import it
(tests/test_layering.py)."""
