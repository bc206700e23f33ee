"""The engine service's command-line options, shared by `karukan serve` and `python -m
ime_frontend.service` (a module of its own so neither entry point imports the other, and
registering them never imports D-Bus)."""

from __future__ import annotations

import argparse


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-model", action="store_true", help="dictionary only, never load a model")
    parser.add_argument("--model", default=None, help="a models.toml id or a GGUF path")
    parser.add_argument("--replace", action="store_true", help="take over from a running engine service")
    parser.add_argument("--address", default=None, help="D-Bus address (default: the session bus)")
    parser.add_argument("--verbose", action="store_true")
