"""Run the Karukan IBus engine process (`python -m ime_frontend.ibus`).

--ibus: started by ibus-daemon from our component XML: own the component name.
otherwise: register the component ourselves (RegisterComponent), for running by hand.

--backend inprocess (default) runs the sessions in this process; --backend service forwards every
context to the engine service on the session bus. Measured in benchmarks/roundtrip_bench.py: the
in-process engine saves the second D-Bus hop (see docs/benchmarks.md).

Exit status 1 when the connection to ibus-daemon is lost without SIGTERM/SIGINT (the daemon
restarts its engines; a supervisor sees a failure, not a clean stop).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from typing import NoReturn

from dbus_fast import Message, MessageType

from ime_frontend.bus import MessageBus, unexpected_loss
from ime_frontend.ibus.address import ibus_address
from ime_frontend.ibus.component import COMPONENT_NAME, ENGINE_NAME, component_desc
from ime_frontend.ibus.engine import FACTORY_PATH, ContextFactory, Factory
from ime_frontend.ibus import gvariant as gv

log = logging.getLogger(__name__)

ADDRESS_WAIT_S = 10.0
SERVICE_TIMEOUT_S = 0.25


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="karukan-ibus", description="Karukan IBus engine")
    parser.add_argument("--ibus", action="store_true", help="started by ibus-daemon (component mode)")
    parser.add_argument("--backend", choices=("inprocess", "service"), default="inprocess")
    parser.add_argument("--no-model", action="store_true", help="dictionary only, never load a model")
    parser.add_argument("--address", default=None, help="IBus bus address (default: found like libibus)")
    parser.add_argument("--verbose", action="store_true")
    return parser.parse_args(argv)


async def _wait_for_address(explicit: str | None) -> str:
    deadline = asyncio.get_running_loop().time() + ADDRESS_WAIT_S
    while True:
        address = explicit or ibus_address()
        if address:
            return address
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError("no IBus daemon found (IBUS_ADDRESS / address file)")
        await asyncio.sleep(0.1)


def _context_factory(args: argparse.Namespace, loop: asyncio.AbstractEventLoop) -> tuple[ContextFactory, list]:
    """How engines get their input contexts, and the resources to close at exit."""
    closers: list = []
    if args.backend == "service":
        from ime_frontend.client import EngineClient
        from ime_frontend.resilient import ResilientContext, ServiceStarter

        # The same short timeout as the fcitx5 addon: a slow service must not hold keys for long.
        # Calls never D-Bus-activate the service themselves: the starter does, once, right away
        # (the engine process starts when IBus first needs Karukan), and calls made while it
        # starts wait for it within the startup budget instead of passing keys through raw.
        async def connect() -> tuple[EngineClient, ServiceStarter]:
            client = await EngineClient.connect(timeout_s=SERVICE_TIMEOUT_S, auto_start=False)
            starter = ServiceStarter(client)
            starter.start()
            return client, starter

        client_future = asyncio.ensure_future(connect())

        async def remote(on_update):
            client, starter = await client_future
            if not closers:
                closers.append(_closer(client.disconnect))
            return await ResilientContext.open(client, "ibus", on_update, starter)

        return remote, closers

    from ime_frontend.pending import PendingContext

    # Build the converter in the background: the daemon may ask for an engine right away.
    core_future = loop.run_in_executor(None, _build_core, not args.no_model)

    async def context(on_update):
        core = await core_future
        if not closers:
            closers.append(_closer(lambda: loop.run_in_executor(None, core.close)))
        return core.new_context(loop, on_update)

    async def local(on_update):
        if core_future.done():
            return await context(on_update)
        # Answer CreateEngine now: ibus-daemon passes keys to the application raw until it has
        # an engine, while the engine holds them until the converter is built.
        return PendingContext(context(on_update))

    return local, closers


def _build_core(use_model: bool):
    from ime_frontend.contexts import build_core

    # Tests only: the converter is not built until this file exists (keys typed meanwhile wait).
    gate = os.environ.get("KARUKAN_TEST_CORE_GATE")
    while gate and not os.path.exists(gate):
        time.sleep(0.05)
    return build_core(use_model)


def _vertical_candidates() -> bool:
    """[ui] candidate_layout from the user's config (the engine or the service reports its
    problems; a file that cannot be used leaves the default, vertical)."""
    from karukan_engine.config import Config, ConfigError

    try:
        return Config.load().ui.candidate_layout == "vertical"
    except ConfigError:
        return True


def _closer(fn):
    """An async closer for fn, awaiting its result when it returns one (an executor future)."""

    async def close() -> None:
        result = fn()
        if asyncio.isfuture(result):
            await result

    return close


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    address = await _wait_for_address(args.address)
    bus = await MessageBus(bus_address=address).connect()
    make_context, closers = _context_factory(args, loop)
    bus.export(FACTORY_PATH, Factory(bus, make_context, {ENGINE_NAME}, vertical=_vertical_candidates()))
    if args.ibus:
        await bus.request_name(COMPONENT_NAME)
    else:
        exec_line = " ".join([sys.executable, "-m", "ime_frontend.ibus", "--ibus"])
        reply = await bus.call(Message(
            destination="org.freedesktop.IBus", path="/org/freedesktop/IBus",
            interface="org.freedesktop.IBus", member="RegisterComponent", signature="v",
            body=[gv.component(component_desc(exec_line))],
        ))
        if reply.message_type == MessageType.ERROR:
            raise RuntimeError(f"RegisterComponent failed: {reply.error_name}")
    print("READY", flush=True)
    lost = asyncio.ensure_future(bus.wait_for_disconnect())
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({lost, stopped}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if not stopped.done() and unexpected_loss(bus):
        log.error("lost the connection to ibus-daemon")
        status = 1
    lost.cancel()
    stopped.cancel()
    # Save while still connected, and leave the connection to close with the process (main
    # exits at once): were ibus-daemon to see our factory gone while this process lives, it
    # would take an engine selected meanwhile as already starting and wait 15 s for a factory
    # that never comes (issue 30 item 5).
    for close in closers:
        await close()
    return status


def main(argv: list[str] | None = None) -> NoReturn:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="karukan-ibus: %(levelname)s %(name)s: %(message)s")
    try:
        status = asyncio.run(run(args))
    except (RuntimeError, OSError) as exc:
        print(f"karukan-ibus: error: {exc}", file=sys.stderr)
        status = 1
    exit_now(status)


def exit_now(status: int) -> None:
    """End the process without the interpreter's teardown (which took ~0.15 s): the learning
    data is saved, and the bus connection closes as the process ends, in one step for the daemon."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
