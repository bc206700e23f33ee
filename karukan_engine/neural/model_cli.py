"""`karukan model list`, `karukan model download ID` and `karukan model prompt READING`."""

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
    show = sub.add_parser("prompt", help="the exact prompt text and tokens a model gets for a reading")
    show.add_argument("--model", metavar="ID|DIR", help="a models.toml id, a GGUF or a model directory (default: the default model)")
    show.add_argument("--context", default="", metavar="TEXT", help="left context (text before the cursor)")
    show.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    show.add_argument("reading", metavar="READING")
    show.set_defaults(handler=show_prompt)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    from karukan_engine.core.errors import UsageError

    raise UsageError("model: choose an action: list | download ID | prompt READING")


def list_models(args: argparse.Namespace) -> int:
    from karukan_engine.neural.download import is_downloaded
    from karukan_engine.neural.registry import load_registry

    registry = load_registry()
    if not registry.entries:
        print("no models.toml found", file=sys.stderr)
        return 1
    rows = []
    for entry in registry.entries.values():
        state = _local_state(entry, registry) if entry.source_kind != "hub" else (
            "ready" if is_downloaded(entry) else "not downloaded")
        size = f"{entry.size_mib:.0f} MiB" if entry.size_mib else "-"
        mark = "*" if entry.id == registry.default_id else " "
        rows.append((f"{mark}{entry.id}", state, size, entry.license or "-", entry.name))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    print("(* = default)")
    return 0


def _local_state(entry, registry) -> str:
    """"ready" only when loading would find its files: a regular .gguf (in its directory, beside
    its tokenizer.json when it has one); a directory without one is "absent"."""
    from karukan_engine.neural.registry import resolve_model

    try:
        gguf = resolve_model(entry.id, registry).gguf
    except NeuralError:
        return "absent"
    return "ready" if gguf.is_file() else "absent"


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


def show_prompt(args: argparse.Namespace) -> int:
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.prompt_view import prompt_view, render_view
    from karukan_engine.neural.registry import load_model_by_id_or_path

    with load_model_by_id_or_path(args.model, ModelOptions(n_threads=1)) as model:
        view = prompt_view(model, args.reading, args.context, label=args.model or "default")
    if args.json:
        import json

        print(json.dumps(view, ensure_ascii=False))
    else:
        print(render_view(view))
    return 0
