"""`karukan doctor` under fcitx5: is Karukan in the current input-method group, is its addon
there and enabled, and does a key typed through fcitx5 come back converted (issue 30 item 9)?

The probe opens an input context of its own on fcitx5's D-Bus frontend (a display no focus
group claims, so the user's windows keep theirs), switches it to Karukan, types `a` and expects
kana: that loads the on-demand addon, which starts the engine service if need be.
"""

from __future__ import annotations

import asyncio

from ime_frontend.doctor_check import (DOCTOR_TIMEOUT_S, ESCAPE, PROBE_KEY, TYPING_TIMEOUT_S, CallFailed,
                                       Check, call, converted, wait_until)

FCITX = "org.fcitx.Fcitx5"
CONTROLLER = ("/controller", "org.fcitx.Fcitx.Controller1")
IC_IFACE = "org.fcitx.Fcitx.InputContext1"
IM_NAME = "karukan"
ADD_IT = "add Karukan in fcitx5-configtool (Input Method → Available → Karukan)"
RESTART = "run: fcitx5 -rd (it reloads its addons; its log says why one fails)"
# fcitx5 capabilities: preedit, formatted preedit, client-side input panel (nothing drawn).
PROBE_CAPS = (1 << 1) | (1 << 4) | (1 << 39)


async def fcitx5_usable_checks(bus) -> list[Check]:
    async def controller(member: str, signature: str = "", body: list | None = None) -> list:
        return await call(bus, FCITX, *CONTROLLER, member, signature, body)

    try:
        (group,) = await controller("CurrentInputMethodGroup")
        _layout, items = await controller("InputMethodGroupInfo", "s", [group])
        (methods,) = await controller("AvailableInputMethods")
        (addons,) = await controller("GetAddons")
        known = [entry[0] for entry in methods]
    except (CallFailed, asyncio.TimeoutError) as exc:
        return [Check("fcitx5 group", False, f"fcitx5 does not answer ({type(exc).__name__})", RESTART)]
    if IM_NAME not in known:
        return [Check("fcitx5 addon", False, "fcitx5 does not know the Karukan input method",
                      "run: karukan install --user, then fcitx5 -rd")]
    if IM_NAME not in [name for name, _layout in items]:
        return [Check("fcitx5 group", False, f"Karukan is not in the input-method group '{group}'", ADD_IT)]
    checks = [Check("fcitx5 group", True, f"Karukan is in '{group}'")]
    # A disabled addon is a failure; whether an enabled one loads, the typing probe finds out.
    if any(entry[0] == IM_NAME and not entry[5] for entry in addons):
        checks.append(Check("fcitx5 addon", False, "the Karukan addon is disabled",
                            "enable Karukan under Addons in fcitx5-configtool"))
        return checks
    checks.append(await typing_check(bus))
    return checks


async def typing_check(bus) -> Check:
    """Switch an input context of our own to Karukan and type `a`: kana must come back. A
    context that stays on another input method means the addon did not load."""
    name = "fcitx5 addon"
    shown = {"preedit": ""}
    try:
        path, _uuid = await call(bus, FCITX, "/org/freedesktop/portal/inputmethod", "org.fcitx.Fcitx.InputMethod1",
                                 "CreateInputContext", "a(ss)",
                                 [[["program", "karukan-doctor"], ["display", f"doctor:{bus.unique_name}"]]])
    except (CallFailed, asyncio.TimeoutError) as exc:
        # no D-Bus frontend to type through: what can be checked was
        return Check(name, True, f"enabled (not typed through: {type(exc).__name__})")

    def on_message(msg) -> None:
        if msg.path == path and msg.member == "UpdateFormattedPreedit":
            shown["preedit"] = "".join(text for text, _flags in msg.body[0])

    bus.add_message_handler(on_message)

    async def ic(member: str, signature: str = "", body: list | None = None) -> list:
        return await call(bus, FCITX, path, IC_IFACE, member, signature, body)

    try:
        await ic("SetCapability", "t", [PROBE_CAPS])
        await ic("FocusIn")
        await call(bus, FCITX, *CONTROLLER, "SetCurrentIM", "s", [IM_NAME])
        (current,) = await call(bus, FCITX, *CONTROLLER, "CurrentInputMethod")
        if current != IM_NAME:
            return Check(name, False, f"the Karukan addon did not load (the input method stayed '{current}')",
                         RESTART)
        for release in (False, True):
            await ic("ProcessKeyEvent", "uuubu", [PROBE_KEY, 0, 0, release, 0])
        await wait_until(lambda: converted(shown["preedit"]), TYPING_TIMEOUT_S)
        typed = shown["preedit"]
        for release in (False, True):   # drop the composition: nothing is committed
            await ic("ProcessKeyEvent", "uuubu", [ESCAPE, 0, 0, release, 0])
    except asyncio.TimeoutError:
        return Check(name, False, f"fcitx5 gave no answer within {DOCTOR_TIMEOUT_S:.0f} s", RESTART)
    except CallFailed as exc:
        return Check(name, False, f"error {exc}", RESTART)
    finally:
        bus.remove_message_handler(on_message)
        for member in ("FocusOut", "DestroyIC"):
            try:
                await ic(member)
            except (CallFailed, asyncio.TimeoutError):
                pass
    if converted(typed):
        return Check(name, True, f"loaded; a → {typed}")
    return Check(name, False, f"loaded, but a → {typed or 'nothing'} within {TYPING_TIMEOUT_S:.0f} s "
                              "(the engine service did not answer)",
                 "run: systemctl --user restart karukan-engine.service (or `karukan serve --verbose` to see why)")
