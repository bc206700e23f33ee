"""Conversion: the typed interface between the session and the converters below it."""

from karukan_engine.core.types import (
    Candidate,
    ConversionRequest,
    Converter,
    Segment,
)

__all__ = ["Candidate", "ConversionRequest", "Converter", "Segment"]
