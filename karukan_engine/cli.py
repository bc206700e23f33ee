"""The `karukan` command: a thin dispatcher to the subcommands of each layer.

Exit status: 0 on success, 2 on bad usage, 1 on other errors (one line on stderr).
Each subcommand lives beside the layer it drives and exposes `register(subparsers)`;
the handler it sets returns an int exit status.
"""

from __future__ import annotations

import argparse
import sys

# The top layer: it may import every layer below, and nothing imports it. Each subcommand module
# keeps its heavy imports (llama.cpp, D-Bus) inside its handlers, so `karukan keys` pays for neither.
from ime_frontend import frontend_cli                   # serve, install, uninstall, doctor
from karukan_engine.conversion import convert_cli       # convert
from karukan_engine.core.errors import UsageError
from karukan_engine.dictionary import dict_cli          # dict
from karukan_engine.evaluation import eval_cli          # eval
from karukan_engine.neural import model_cli             # model
from karukan_engine.session import keys_cli             # keys

SUBCOMMANDS = (keys_cli, convert_cli, dict_cli, eval_cli, model_cli, frontend_cli)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 itself; keep its message one line
        self.exit(2, f"karukan: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="karukan", description="Karukan Japanese input method engine")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in SUBCOMMANDS:
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
    sys.exit(main())
