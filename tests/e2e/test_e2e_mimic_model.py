"""End to end with a downloaded-model stand-in installed: a (small) zenz-family mimic GGUF
(karukan_testing.mimic: the real zenz tokenizer, the published zenz metadata quirks, Q5_K_M)
is the registry's default model; the IBus engine started by the real ibus-daemon from its
installed component (with the model) loads it and converts through it. The mimic's weights make
it write one character whatever it is given, so its candidates are recognisable."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_support import eventually, karukan, need, need_fcitx5_addon, run
from karukan_testing.app_clients import IBusApp

pytest.importorskip("llama_cpp")
pytest.importorskip("tokenizers")

from karukan_testing import mimic  # noqa: E402

SPACE, RETURN, ESCAPE = 0x20, 0xFF0D, 0xFF1B
ZENZ_TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
MARK_CHAR = "鬱"  # what the mimic writes


@pytest.fixture(scope="module")
def mimic_desktop(desktop):
    install_mimic(desktop)
    return desktop


def install_mimic(desktop, framework: str = "ibus") -> None:
    """The mimic as the registry's default model, the engine installed with it for `framework`
    ("ibus" or "fcitx5"), whose daemon is then started (fcitx5: and the session bus before it)."""
    from tokenizers import Tokenizer

    if framework == "ibus":
        need("ibus-daemon", "dbus-daemon")
    else:
        need_fcitx5_addon()
    [token] = Tokenizer.from_file(str(ZENZ_TOKENIZER)).encode(MARK_CHAR, add_special_tokens=False).ids
    spec = mimic.small("zenz-v3-xsmall", n_layer=1, n_embd=256, n_head=4, n_ctx_train=256, always_token=token)
    gguf = mimic.build(spec, desktop.root / "models" / "zenz-v3-xsmall", ZENZ_TOKENIZER, n_threads=1)
    registry = desktop.root / "models.toml"
    registry.write_text(f'default = "mimic"\n[models.mimic]\npath = "{gguf.parent}"\narch = "gpt2"\nn_vocab = 6000\n',
                        encoding="utf-8")
    desktop.env["KARUKAN_MODELS_TOML"] = str(registry)
    if framework == "ibus":
        karukan(desktop, "install", "--user", "--no-fcitx5")  # with the model
        desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
    else:
        # the engine service is D-Bus activated, with the bus's environment: it must know the registry
        assert desktop.session_address is None, "install_mimic starts the session bus for fcitx5"
        desktop.start_session_bus()
        karukan(desktop, "install", "--user", "--no-ibus")
        desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                             extra_env={"KARUKAN_FCITX5_STARTUP_MS": "120000"})


def test_the_engine_loads_the_installed_mimic_and_converts_with_it(mimic_desktop):
    async def body():
        app = await IBusApp.connect(mimic_desktop.ibus_address)
        await app.set_engine("karukan")

        async def ready():
            return await app.engine_name() == "karukan"

        await eventually(ready)
        for ch in "kanji":
            assert await app.tap(ord(ch))
        assert app.shown.preedit == "かんじ"

        async def converted_by_the_model():  # the model loads in the background
            assert await app.tap(SPACE)
            if any(c.startswith(MARK_CHAR * 3) for c in app.shown.candidates):
                return True
            assert await app.tap(ESCAPE)  # back to the reading, try again
            return False

        await eventually(converted_by_the_model, timeout_s=60, interval_s=0.5)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates  # the dictionary's candidates are there too
        assert app.shown.preedit == candidates[0]
        assert await app.tap(RETURN)
        assert app.shown.commits == [candidates[0]]
        app.disconnect()

    run(body())
