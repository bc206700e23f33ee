"""`karukan serve | install | uninstall | doctor` (registered by karukan_engine.cli)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ime_frontend.serve_options import add_serve_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="run the engine service on the session bus")
    add_serve_arguments(serve)
    serve.set_defaults(handler=_serve)

    install = subparsers.add_parser("install", help="install into IBus, fcitx5, D-Bus activation and systemd")
    scope = install.add_mutually_exclusive_group()
    scope.add_argument("--user", action="store_true", help="for the current user (default)")
    scope.add_argument("--system", action="store_true", help="for everyone, under /usr")
    install.add_argument("--root", type=Path, default=None, help="with --system: stage under this directory")
    install.add_argument("--no-ibus", action="store_true", help="skip the IBus component")
    install.add_argument("--no-fcitx5", action="store_true", help="skip building the fcitx5 addon")
    install.add_argument("--no-model", action="store_true", help="installed engines use the dictionary only")
    install.set_defaults(handler=_install)

    uninstall = subparsers.add_parser("uninstall", help="remove what `karukan install` put in place")
    scope = uninstall.add_mutually_exclusive_group()
    scope.add_argument("--user", action="store_true", help="the per-user install (default)")
    scope.add_argument("--system", action="store_true", help="the system install")
    uninstall.add_argument("--root", type=Path, default=None, help="with --system: the staging directory")
    uninstall.set_defaults(handler=_uninstall)

    doctor = subparsers.add_parser("doctor", help="report installation, running frameworks and the engine")
    doctor.set_defaults(handler=_doctor)


def _layout(args: argparse.Namespace):
    from karukan_engine.core.errors import UsageError
    from ime_frontend.install import system_layout, user_layout

    if args.root is not None and not args.system:
        raise UsageError("--root needs --system")
    return system_layout(args.root or Path("/")) if args.system else user_layout()


def _serve(args: argparse.Namespace) -> int:
    from ime_frontend.service import run_serve

    return run_serve(args)


def _install(args: argparse.Namespace) -> int:
    from ime_frontend.install import install

    report = install(_layout(args), ibus=not args.no_ibus, fcitx5=not args.no_fcitx5, model=not args.no_model)
    for path in report.installed:
        print(f"installed {path}")
    for note in report.notes:
        print(f"note: {note}")
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from ime_frontend.install import uninstall

    removed = uninstall(_layout(args))
    for path in removed:
        print(f"removed {path}")
    if not removed:
        print("nothing to remove")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from ime_frontend.doctor import run_doctor

    checks, healthy = run_doctor()
    for check in checks:
        print(f"[{'ok' if check.ok else '--'}] {check.name}: {check.detail}")
        if check.fix and not check.ok:
            print(f"     fix: {check.fix}")
    return 0 if healthy else 1
