"""`karukan model list` and `karukan model download ID`."""

from __future__ import annotations

import argparse
import sys

from karukan_engine.neural.errors import NeuralError


def register(subparsers) -> None:
    parser = subparsers.add_parser("model", help="list or download kana-kanji models")
    sub = parser.add_subparsers(dest="model_command", metavar="ACTION")
    listing = sub.add_parser("list", help="models in models.toml and whether they are on disk")
    listing.set_defaults(handler=list_models)
    fetch = sub.add_parser("download", help="download a hub model into the Hugging Face cache")
    fetch.add_argument("model_id", metavar="ID")
    fetch.set_defaults(handler=download_model)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    from karukan_engine.core.errors import UsageError

    raise UsageError("model: choose an action: list | download ID")


def list_models(args: argparse.Namespace) -> int:
    from karukan_engine.neural.download import is_downloaded
    from karukan_engine.neural.registry import load_registry

    registry = load_registry()
    if not registry.entries:
        print("no models.toml found", file=sys.stderr)
        return 1
    rows = []
    for entry in registry.entries.values():
        state = "ready" if is_downloaded(entry) else ("absent" if entry.source_kind != "hub" else "not downloaded")
        size = f"{entry.size_mib:.0f} MiB" if entry.size_mib else "-"
        mark = "*" if entry.id == registry.default_id else " "
        rows.append((f"{mark}{entry.id}", state, size, entry.license or "-", entry.name))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    print("(* = default)")
    return 0


def download_model(args: argparse.Namespace) -> int:
    from karukan_engine.neural.download import fetch_entry
    from karukan_engine.neural.registry import load_registry

    registry = load_registry()
    try:
        entry = registry.get(args.model_id)
    except NeuralError as exc:
        from karukan_engine.core.errors import UsageError

        raise UsageError(str(exc)) from None
    if entry.source_kind != "hub":
        location = entry.local_path()
        if location is None or not location.exists():
            raise NeuralError(f"model {entry.id!r} is not downloadable and not installed ({entry.source_text})")
        print(location)
        return 0
    gguf, tokenizer = fetch_entry(entry, allow_download=True)
    print(gguf)
    if tokenizer is not None:
        print(tokenizer)
    return 0
