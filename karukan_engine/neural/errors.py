"""Errors of the neural backend. Every one is a NeuralError, so callers can fall back to the
dictionary with a single except clause; messages never contain user text."""

from __future__ import annotations


class NeuralError(Exception):
    """Base class of every error raised by karukan_engine.neural."""


class ModelNotFoundError(NeuralError, FileNotFoundError):
    """The GGUF file (or the directory meant to hold one) does not exist."""


class ModelFormatError(NeuralError, ValueError):
    """The file exists but is not a readable GGUF (wrong magic, truncated, corrupt)."""


class ModelLoadError(NeuralError):
    """llama.cpp refused the model or could not create a context for it."""


class TokenizerError(NeuralError):
    """tokenizer.json is unreadable or does not match the model's vocabulary."""


class PromptTooLongError(NeuralError, ValueError):
    """The reading alone does not fit the model's context window."""


class InferenceError(NeuralError):
    """llama_decode failed (e.g. no free KV cells) or an argument was out of range."""


class UnknownModelError(NeuralError, KeyError):
    """A model id that models.toml does not list."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown model"


class DownloadError(NeuralError):
    """A model download failed or the model is not downloaded yet."""
