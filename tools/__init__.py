"""Build pipelines (system dictionary, evaluation sets, mimic models), run as scripts from the
repository root. A package so tests and examples import them as `tools.NAME`, like any module."""
