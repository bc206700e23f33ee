"""End to end through fcitx5 with a downloaded-model stand-in installed (issue 13).

A small zenz-family mimic GGUF (karukan_testing.mimic: the real zenz tokenizer, the published
zenz metadata quirks, Q5_K_M) is set up as a user sets up a model they downloaded: an entry in
their own models.toml, made the `default`, with KARUKAN_MODELS_TOML in the session's environment
(what ~/.config/environment.d/ gives a login), `karukan model list` to see it is on disk, then
`karukan install --user`. fcitx5 loads our addon, which D-Bus-activates the engine service;
the service inherits the session bus's environment and so loads the mimic. The mimic's weights
make it write one character whatever it is given, so its candidates are recognisable.

Then the same entry is mislabelled (models.toml says Qwen3, the file is GPT-2): the restarted
service refuses the file with one line in its log and fcitx5 keeps converting on the dictionary.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from e2e_support import engine_pids, eventually, karukan, live_conversion_off, need_fcitx5_addon, run
from karukan_testing.app_clients import FCITX_CAPS, FcitxApp
from karukan_testing.headless import HeadlessDesktop

pytest.importorskip("llama_cpp")
pytest.importorskip("tokenizers")

from karukan_testing import mimic  # noqa: E402

SPACE, RETURN, ESCAPE = 0x20, 0xFF0D, 0xFF1B
ZENZ_TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
MODEL_CHAR = "鬱"  # what the mimic writes
MODEL_ID = "my-zenz"
REFUSAL = f"model {MODEL_ID} unavailable, dictionary only:"


def registry_text(gguf_dir: Path, arch: str) -> str:
    return (f'default = "{MODEL_ID}"\n[models.{MODEL_ID}]\nname = "zenz stand-in"\npath = "{gguf_dir}"\n'
            f'tokenizer = "tokenizer.json"\nprompt = "zenz-v3"\narch = "{arch}"\nn_vocab = 6000\n')


@pytest.fixture(scope="module")
def mimic_fcitx5():
    need_fcitx5_addon()
    from tokenizers import Tokenizer

    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        [token] = Tokenizer.from_file(str(ZENZ_TOKENIZER)).encode(MODEL_CHAR, add_special_tokens=False).ids
        spec = mimic.small("zenz-v3-xsmall", n_layer=1, n_embd=256, n_head=4, n_ctx_train=256, always_token=token)
        gguf = mimic.build(spec, desktop.root / "models" / "zenz-v3-xsmall", ZENZ_TOKENIZER, n_threads=1)
        registry = desktop.home / ".config/karukan/models.toml"
        registry.write_text(registry_text(gguf.parent, "gpt2"), encoding="utf-8")
        # Before the session bus starts: services it activates inherit its environment.
        desktop.env["KARUKAN_MODELS_TOML"] = str(registry)
        desktop.start_session_bus()
        karukan(desktop, "install", "--user", "--no-ibus")  # with the model
        # A generous call timeout: on a loaded test machine the first conversions through the
        # model may take longer than the addon's default, and a timed-out key goes to the app.
        desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                             extra_env={"KARUKAN_FCITX5_TIMEOUT_MS": "5000", "KARUKAN_FCITX5_STARTUP_MS": "120000"})
        yield desktop, registry, gguf


def service_log(desktop: HeadlessDesktop) -> list[str]:
    """The activated service's log lines (it writes to the session bus daemon's stderr)."""
    return [line for line in desktop.log_tail("dbus-daemon", lines=10_000).splitlines()
            if line.startswith("karukan-engine:")]


async def ready_app(desktop: HeadlessDesktop) -> FcitxApp:
    app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS)
    await app.set_im("karukan")
    assert await app.current_im() == "karukan"
    return app


async def type_kanji(app: FcitxApp) -> None:
    for ch in "kanji":
        assert await app.tap(ord(ch)), ch
    await eventually(lambda: _shows(app, "かんじ"), timeout_s=60, interval_s=0.1)


async def _shows(app: FcitxApp, preedit: str) -> bool:
    await app.ic("FocusIn")    # a round trip: views replayed before it are in
    return app.shown.preedit == preedit


async def convert(app: FcitxApp) -> list[str]:
    assert await app.tap(SPACE)
    await app.ic("FocusIn")
    return list(app.shown.candidates)


def test_model_list_shows_the_installed_mimic_as_the_default(mimic_fcitx5):
    desktop, _registry, _gguf = mimic_fcitx5
    listing = karukan(desktop, "model", "list").stdout
    [row] = [line for line in listing.splitlines() if MODEL_ID in line]
    assert row.startswith(f"*{MODEL_ID}") and " ready " in row, listing


def test_fcitx5_converts_with_the_installed_model(mimic_fcitx5):
    desktop, _registry, _gguf = mimic_fcitx5

    async def body():
        app = await ready_app(desktop)
        await type_kanji(app)

        async def converted_by_the_model():  # the model loads in the background
            if any(c.startswith(MODEL_CHAR * 3) for c in await convert(app)):
                return True
            assert await app.tap(ESCAPE), desktop.log_tail("fcitx5")  # back to the reading, try again
            return False

        await eventually(converted_by_the_model, timeout_s=90, interval_s=0.5)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates  # the dictionary's candidates are there too
        assert app.shown.preedit == candidates[0]
        assert await app.tap(RETURN)
        await app.ic("FocusIn")
        assert app.shown.commits == [candidates[0]] and app.shown.preedit == ""
        app.disconnect()

    run(body())
    assert not [line for line in service_log(desktop) if REFUSAL in line]


def test_a_mislabelled_model_is_refused_with_one_line_and_the_dictionary_converts(mimic_fcitx5):
    desktop, registry, _gguf = mimic_fcitx5
    registry.write_text(registry_text(_gguf.parent, "qwen3"), encoding="utf-8")  # the user's mistake
    for pid in engine_pids(desktop, "ime_frontend.service"):
        os.kill(pid, signal.SIGKILL)   # the addon starts it again, with the edited models.toml

    async def body():
        app = await ready_app(desktop)
        await type_kanji(app)

        async def refused():  # the refusal is logged by the first conversion after the load failed
            await convert(app)
            if any(REFUSAL in line for line in service_log(desktop)):
                return True
            assert await app.tap(ESCAPE), desktop.log_tail("fcitx5")
            return False

        await eventually(refused, timeout_s=90, interval_s=0.5)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates and not any(MODEL_CHAR in c for c in candidates)
        assert await app.tap(RETURN)
        await app.ic("FocusIn")
        assert app.shown.commits == [candidates[0]]
        app.disconnect()

    run(body())
    lines = [line for line in service_log(desktop) if REFUSAL in line]
    assert len(lines) == 1, lines
    assert "'gpt2'" in lines[0] and "'qwen3'" in lines[0], lines[0]   # says what differs

