"""Errors that cross layers: raised low, caught high."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command-line usage: a subcommand raises it, the `karukan` dispatcher exits 2."""
