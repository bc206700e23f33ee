"""Per-key latency as a real GTK3 application sees it: Karukan beside Mozc, in one run.

Each engine gets its own private desktop (Xvfb, ibus-daemon or fcitx5) and the GTK test window
(karukan_testing/gtk_app.py) with the framework's GTK im-module. Keys go in one at a time
through XTEST (xdotool); the window itself timestamps each key press when it arrives and each
preedit change (monotonic clock, inside the app). So a figure is: key press at the window →
the im-module's preedit-changed, with the whole framework path in between (im-module → daemon
→ engine → daemon → im-module). "typing" is every romaji key; "space" is Space → the
converted preedit. Engines run as installed, with their defaults (Karukan: live conversion on,
the bundled model unless --no-model).

Two waits keep the figures honest. Timing starts --settle-s seconds after the engine first
answers: Karukan loads its model in the background, and until it is loaded Space converts with
the dictionary alone. Space is pressed once the preedit has been still for QUIET_BEFORE_SPACE_S:
a late update of the last typed key (its suggestions, a model refinement) would otherwise be
the first preedit change after Space and be taken for its answer.

Mozc runs in both frameworks (Debian's ibus-mozc and fcitx5-mozc), so each framework's figures
have their own Mozc beside them. Mozc's server refuses to run as root: when run as root, the
Mozc desktops run as the unprivileged --user (create it first: `useradd -m mozcuser`).

    python benchmarks/gtk_latency.py [--engines karukan-ibus,mozc-ibus,karukan-fcitx5,mozc-fcitx5]
                                   [--repeats 3] [--no-model] [--settle-s 10] [--json out.json]
                                   [--quiet-ms 150] [--no-prepare] [--no-quick] [--no-suggest]
                                   [--bursts N] [--rounds R]

--bursts N times N bursts (default: as many as --repeats; each gives one Space, so a p50 over
four is rough).

--rounds R runs every engine R times (each time --repeats passes and --bursts bursts in a fresh
desktop), round r starting with the r-th engine, and pools the times: the machine's drift over
a run (other work on a shared machine) then falls on every engine alike instead of on whichever
ran at that moment.

--quiet-ms sets how long the preedit must be still before Space (the user's pause);
--no-prepare gives Karukan `[conversion] prepare_space = false` (its config file in the
desktop's private XDG_CONFIG_HOME), so Space is not prepared during that pause, and --no-quick
`quick_space = false`, so an unprepared Space waits for the model, and --no-suggest `[suggest]
enabled = false` (no completions list after each key). "settled" is Space → the
last preedit change within SETTLED_QUIET_S of stillness after it: with quick Space, when the
model's conversion replaced the first answer (the same as "Space" when none did).

--pace-ms P types at most one key per P ms (a typist's pace; 0, the default, presses the next key
as soon as the last one's first preedit came). Besides latency the run reports, as a Mozc user
would notice them:
  two texts  typed keys after which the preedit showed two or more different texts before the
             next key (the dictionary's text, then a model's): flicker under the user's eyes;
             meaningful with a pace that leaves time for late updates (--pace-ms 100)
  Return     Return -> the committed text in the window
  burst      BURST typed with no pause (each key as soon as the last one's first preedit came),
             Space right after the last: Space -> the converted preedit (its first showing of
             the text the preedit settles on), while the typing's late work may still run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from karukan_testing.gtk_client import GtkClient, gtk_missing  # noqa: E402
from karukan_testing.headless import HeadlessDesktop  # noqa: E402

SENTENCES = ["kyouhaiitenkidesune", "watashinonamaehanakanodesu", "kaiginosiryouwookurimasu"]
BURST = SENTENCES[0] + SENTENCES[2]   # 43 keys
# each engine's input method, as its framework names it (the engines, in the order they run)
INPUT_METHODS = {"karukan-ibus": "karukan", "mozc-ibus": "mozc-jp", "karukan-fcitx5": "karukan",
                 "mozc-fcitx5": "mozc"}
ENGINES = tuple(INPUT_METHODS)
STEP_TIMEOUT_S = 10.0
# Longer than a key's late updates take to arrive (suggestions start 10 ms after the key).
QUIET_BEFORE_SPACE_S = 0.15
# Stillness after Space that ends its answer: longer than a quick Space's model conversion may
# take to arrive (live_service.QUICK_SPACE_LIMIT_S).
SETTLED_QUIET_S = 0.4
MOZC_IBUS_CONFIG = """engines {
  name : "mozc-jp"
  longname : "Mozc"
  layout : "default"
  layout_variant : ""
  layout_option : ""
  rank : 80
}
active_on_launch: True
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def summary(ms: list[float]) -> dict:
    if not ms:
        return {"n": 0}
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2),
            "max_ms": round(max(ms), 2)}


def run_as(desktop: HeadlessDesktop, argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """A command on the desktop, as its user (ibus-daemon only accepts its own user)."""
    user = desktop.user
    return subprocess.run(argv, env=desktop.env, capture_output=True, text=True, timeout=timeout,
                          user=user, group=user, extra_groups=[] if user else None)


def karukan(desktop: HeadlessDesktop, *args: str) -> None:
    main = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run([sys.executable, "-c", main, *args], env=desktop.env, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"karukan {' '.join(args)} failed: {out.stderr[-2000:]}")


def select_ibus_engine(desktop: HeadlessDesktop, name: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run_as(desktop, ["ibus", "engine", name])
        if run_as(desktop, ["ibus", "engine"]).stdout.strip() == name:
            return
        time.sleep(0.2)
    raise SystemExit(f"ibus-daemon never selected {name}")


def select_fcitx5_im(desktop: HeadlessDesktop, name: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        call = ["dbus-send", "--session", "--print-reply", "--dest=org.fcitx.Fcitx5", "/controller"]
        run_as(desktop, call + ["org.fcitx.Fcitx.Controller1.SetCurrentIM", f"string:{name}"])
        if f'"{name}"' in run_as(desktop, call + ["org.fcitx.Fcitx.Controller1.CurrentInputMethod"]).stdout:
            return
        time.sleep(0.2)
    raise SystemExit(f"fcitx5 never switched to {name}")


def karukan_config(prepare: bool, quick: bool, suggest: bool) -> str | None:
    """Karukan's config.toml for the options that differ from its defaults (None: all default)."""
    if prepare and quick and suggest:
        return None
    return (f"[conversion]\nprepare_space = {str(prepare).lower()}\nquick_space = {str(quick).lower()}\n"
            f"[suggest]\nenabled = {str(suggest).lower()}\n")


def start(engine: str, desktop: HeadlessDesktop, use_model: bool, prepare: bool = True,
          quick: bool = True, suggest: bool = True) -> GtkClient:
    model = [] if use_model else ["--no-model"]
    mozc = engine.startswith("mozc")
    text = karukan_config(prepare, quick, suggest)
    if not mozc and text is not None:
        config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text)
    if engine != "mozc-ibus":         # ibus-daemon owns its bus
        desktop.start_session_bus()
    desktop.start_xvfb()
    if engine == "karukan-ibus":
        karukan(desktop, "install", "--user", "--no-fcitx5", *model)
        desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
    elif engine == "mozc-ibus":
        # Mozc starts in direct input unless told otherwise (its ibus_config.textproto).
        config = Path(desktop.env["XDG_CONFIG_HOME"]) / "mozc/ibus_config.textproto"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(MOZC_IBUS_CONFIG)
        if desktop.user:
            for path in (config.parent, config):
                shutil.chown(path, desktop.user, desktop.user)
        desktop.start_ibus([])           # the system's components: mozc.xml
    elif engine == "mozc-fcitx5":
        desktop.start_fcitx5(["keyboard-us", "mozc"], ["dbus", "dbusfrontend", "keyboard", "mozc"])
    else:
        karukan(desktop, "install", "--user", "--no-ibus", *model)
        desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                             extra_env={"KARUKAN_FCITX5_STARTUP_MS": "120000"})
    fcitx5 = engine.endswith("fcitx5")
    gtk = GtkClient(desktop, "fcitx" if fcitx5 else "ibus", name=f"gtk-{engine}")
    gtk.focus("text")
    if fcitx5:
        select_fcitx5_im(desktop, INPUT_METHODS[engine])
    else:
        select_ibus_engine(desktop, INPUT_METHODS[engine])
    deadline = time.monotonic() + 180
    while True:                          # ready: "a" is answered with あ
        gtk.type("a")
        try:
            gtk.wait_for(lambda s: s["preedit"] == "あ", timeout_s=5, what=f"{engine} to answer")
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            if mozc:
                gtk.keys("Hiragana_Katakana")     # Mozc may start in direct input
            gtk.command("clear")
    gtk.keys("Escape")
    gtk.wait_for(lambda s: s["preedit"] == "", what="the preedit to clear")
    gtk.command("clear")
    return gtk


def press(gtk: GtkClient, key: str) -> bool:
    """One key (sent by the app itself: its timestamp is the moment the key left); wait
    (bounded) for the im-module's next preedit change. False if none came."""
    before = gtk.state()["preedit_changes"]
    gtk.command(f"press {key}")
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while time.monotonic() < deadline:
        if gtk.state()["preedit_changes"] > before:
            return True
        time.sleep(0.005)
    return False


def wait_until_quiet(gtk: GtkClient, quiet_s: float = QUIET_BEFORE_SPACE_S) -> None:
    """Until no preedit change came for quiet_s (bounded by STEP_TIMEOUT_S)."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    changes, still_since = gtk.state()["preedit_changes"], time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - still_since < quiet_s:
        time.sleep(0.01)
        now = gtk.state()["preedit_changes"]
        if now != changes:
            changes, still_since = now, time.monotonic()


def latencies(timings: dict) -> list[tuple[int, float]]:
    """(keyval, ms) for every key press: to the first preedit change after it."""
    changes = [t for _text, t in timings["preedits"]]
    out = []
    for keyval, t in timings["keys"]:
        after = [c for c in changes if c >= t]
        if after:
            out.append((keyval, (after[0] - t) * 1000))
    return out


def settled_latency(timings: dict) -> list[tuple[int, float]]:
    """(keyval, ms) of the last key press: to the last preedit change after it."""
    if not timings["keys"]:
        return []
    keyval, t = timings["keys"][-1]
    after = [c for _text, c in timings["preedits"] if c >= t]
    return [(keyval, (after[-1] - t) * 1000)] if after else []


def keys_with_two_texts(timings: dict) -> tuple[int, int]:
    """(typed keys, those after which the preedit showed two or more different texts before the
    next key). The last key of `timings` (Space) is not a typed key; repeats of a text are one."""
    keys = [t for _k, t in timings["keys"]]
    flickers = 0
    for start, end in zip(keys, keys[1:]):
        texts = [text for text, t in timings["preedits"] if start <= t < end]
        distinct = [text for i, text in enumerate(texts) if i == 0 or text != texts[i - 1]]
        flickers += len(distinct) >= 2
    return max(0, len(keys) - 1), flickers


def commit_latency(timings: dict) -> list[float]:
    """ms from the last key (Return) to the first change of the window's text after it."""
    if not timings["keys"]:
        return []
    sent = timings["keys"][-1][1]
    after = [t for _text, t in timings["texts"] if t >= sent]
    return [(after[0] - sent) * 1000] if after else []


def settled_text_latency(timings: dict) -> list[float]:
    """ms from the last key (Space) to the first showing of the text the preedit settled on."""
    if not timings["keys"] or not timings["preedits"]:
        return []
    sent = timings["keys"][-1][1]
    final = timings["preedits"][-1][0]
    shown = [t for text, t in timings["preedits"] if t >= sent and text == final]
    return [(shown[0] - sent) * 1000] if shown else []


def press_and_wait_commit(gtk: GtkClient) -> list[float]:
    """Return; wait for the commit; ms from Return to the window's text changing."""
    gtk.command("timings")
    gtk.command("press Return")
    gtk.wait_for(lambda s: s["preedit"] == "", what="the commit")
    wait_until_quiet(gtk, QUIET_BEFORE_SPACE_S)
    return commit_latency(gtk.command("timings"))


def measure(gtk: GtkClient, repeats: int, quiet_s: float = QUIET_BEFORE_SPACE_S, pace_s: float = 0.0,
            bursts: int | None = None) -> dict:
    typing, space, settled, commit, missed = [], [], [], [], 0
    typed = two_texts = 0
    gtk.command("timings")                       # forget the warm-up
    for _ in range(repeats):
        for sentence in SENTENCES:
            for ch in sentence:
                started = time.monotonic()
                missed += not press(gtk, ch)
                time.sleep(max(0.0, pace_s - (time.monotonic() - started)))
            wait_until_quiet(gtk, quiet_s)
            missed += not press(gtk, "space")
            wait_until_quiet(gtk, SETTLED_QUIET_S)
            timings = gtk.command("timings")
            timed = latencies(timings)
            typing += [ms for _k, ms in timed[:-1]]
            space += [ms for k, ms in timed[-1:] if k == 0x20]
            settled += [ms for k, ms in settled_latency(timings) if k == 0x20]
            keys, flickers = keys_with_two_texts(timings)
            typed, two_texts = typed + keys, two_texts + flickers
            commit += press_and_wait_commit(gtk)
    return {"typing": typing, "space": space, "space_settled": settled, "return_commit": commit,
            "typed_keys": typed, "keys_with_two_texts": two_texts,
            "burst_space": measure_burst(gtk, repeats if bursts is None else bursts), "missed": missed}


def merged(a: dict | None, b: dict) -> dict:
    """Two rounds' measurements of one engine as one: the times pooled, the counts added."""
    if a is None:
        return b
    return {key: a[key] + b[key] for key in b}


def summarised(raw: dict) -> dict:
    return {key: summary(value) if isinstance(value, list) else value for key, value in raw.items()}


def round_order(engines: list[str], round_index: int) -> list[str]:
    """Round r starts with the r-th engine: each engine takes each place in the order in turn,
    so a drift of the machine during the run falls on every engine alike."""
    shift = round_index % len(engines)
    return engines[shift:] + engines[:shift]


def measure_burst(gtk: GtkClient, repeats: int) -> list[float]:
    """BURST with no pause, then Space at once: Space -> the converted preedit (ms each)."""
    space = []
    for _ in range(repeats):
        gtk.command("timings")
        for key in [*BURST, "space"]:
            press(gtk, key)
        wait_until_quiet(gtk, SETTLED_QUIET_S)
        space += settled_text_latency(gtk.command("timings"))
        press_and_wait_commit(gtk)
    return space


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bursts", type=int, help="bursts timed (default: --repeats)")
    parser.add_argument("--user", default="mozcuser", help="runs the Mozc desktop when run as root")
    parser.add_argument("--no-model", action="store_true", help="Karukan without the model")
    parser.add_argument("--settle-s", type=float, default=10.0,
                        help="wait after the engine first answers, before timing (model loading)")
    parser.add_argument("--quiet-ms", type=float, default=QUIET_BEFORE_SPACE_S * 1000,
                        help="how long the preedit is still before Space (the pause)")
    parser.add_argument("--no-prepare", action="store_true", help="Karukan with [conversion] prepare_space = false")
    parser.add_argument("--no-quick", action="store_true", help="Karukan with [conversion] quick_space = false")
    parser.add_argument("--no-suggest", action="store_true", help="Karukan with [suggest] enabled = false")
    parser.add_argument("--pace-ms", type=float, default=0.0, help="at most one typed key per this many ms")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every engine this many times, each round in a rotated order (times pooled)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    missing = gtk_missing()
    if missing:
        print(f"cannot run: {missing}", file=sys.stderr)
        return 1
    engines = args.engines.split(",")
    raw: dict[str, dict | None] = {engine: None for engine in engines}
    for round_index in range(max(1, args.rounds)):
        for engine in round_order(engines, round_index):
            user = args.user if engine.startswith("mozc") and os.geteuid() == 0 else None
            with HeadlessDesktop(user=user) as desktop:
                gtk = start(engine, desktop, not args.no_model, not args.no_prepare, not args.no_quick,
                            not args.no_suggest)
                time.sleep(args.settle_s)
                raw[engine] = merged(raw[engine], measure(gtk, args.repeats, args.quiet_ms / 1000.0,
                                                          args.pace_ms / 1000.0, args.bursts))
                gtk.close()
            print(f"{engine}: round {round_index + 1} done", file=sys.stderr)
    results = {engine: summarised(r) for engine, r in raw.items()}
    print(f"{'engine':<16} {'typing p50':>11} {'p95':>8} {'n':>5}   {'Space p50':>10} {'p95':>8} {'n':>4}"
          f"   {'settled p50':>11} {'p95':>8}   {'Return p50':>10} {'p95':>6}   {'burst Space p50':>15} {'p95':>6}"
          f"   {'two texts':>13}  missed")
    for engine, r in results.items():
        t, s, f, c, b = r["typing"], r["space"], r["space_settled"], r["return_commit"], r["burst_space"]
        print(f"{engine:<16} {t.get('p50_ms', '-'):>11} {t.get('p95_ms', '-'):>8} {t['n']:>5}   "
              f"{s.get('p50_ms', '-'):>10} {s.get('p95_ms', '-'):>8} {s['n']:>4}   "
              f"{f.get('p50_ms', '-'):>11} {f.get('p95_ms', '-'):>8}   {c.get('p50_ms', '-'):>10} {c.get('p95_ms', '-'):>6}   "
              f"{b.get('p50_ms', '-'):>15} {b.get('p95_ms', '-'):>6}   "
              f"{r['keys_with_two_texts']:>5} of {r['typed_keys']:<4}  {r['missed']}")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "gtk_latency", "repeats": args.repeats, "rounds": max(1, args.rounds),
            "bursts": args.bursts or args.repeats,
            "sentences": SENTENCES,
            "model": not args.no_model, "prepare_space": not args.no_prepare, "quick_space": not args.no_quick,
            "suggest": not args.no_suggest,
            "quiet_ms": args.quiet_ms, "pace_ms": args.pace_ms, "burst": BURST,
            "settle_s": args.settle_s, "load": os.getloadavg(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "results": results,
        }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
