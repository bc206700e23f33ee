"""The `karukan` command: a thin dispatcher to the subcommands of each layer.

Exit status: 0 on success, 2 on bad usage, 1 on other errors (one line on stderr).
Each subcommand lives beside the layer it drives and exposes `register(subparsers)`;
the handler it sets returns an int exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand module -> imported lazily so `karukan keys` never pays for llama.cpp or D-Bus.
SUBCOMMAND_MODULES = (
    "karukan_engine.session.keys_cli",        # keys
    "karukan_engine.conversion.convert_cli",  # convert
    "karukan_engine.dictionary.dict_cli",     # dict
    "karukan_engine.evaluation.eval_cli",     # eval
    "karukan_engine.neural.model_cli",        # model
    "ime_frontend.frontend_cli",              # serve, install, uninstall, doctor
)


class UsageError(Exception):
    """Bad command-line usage: exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 itself; keep its message one line
        self.exit(2, f"karukan: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="karukan", description="Karukan Japanese input method engine")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # that layer is not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except UsageError as exc:
        print(f"karukan: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # one line, never a traceback for the user
        print(f"karukan: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Run as `python -m`, this module is __main__; use the importable one so the UsageError that
    # subcommands raise is the class main() catches.
    from karukan_engine.cli import main as _main

    sys.exit(_main())
