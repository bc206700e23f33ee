"""Conversion: the typed interface between the session and the converters below it."""

from karukan_engine.conversion.types import (
    Candidate,
    ConversionRequest,
    Converter,
    Segment,
)

__all__ = ["Candidate", "ConversionRequest", "Converter", "Segment"]
