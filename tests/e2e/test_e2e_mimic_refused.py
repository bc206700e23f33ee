"""End to end with a model that does not match its models.toml entry (a GPT-2 zenz-family mimic
listed as Qwen3): the IBus engine refuses it and keeps converting with the dictionary."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_support import karukan, need, run
from karukan_testing.app_clients import IBusApp

pytest.importorskip("llama_cpp")
pytest.importorskip("tokenizers")

from karukan_testing import mimic  # noqa: E402

SPACE, RETURN = 0x20, 0xFF0D
ZENZ_TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
MODEL_CHAR = "鬱"  # what the mimic would write


@pytest.fixture(scope="module")
def refused_desktop(desktop):
    from tokenizers import Tokenizer

    need("ibus-daemon", "dbus-daemon")
    [token] = Tokenizer.from_file(str(ZENZ_TOKENIZER)).encode(MODEL_CHAR, add_special_tokens=False).ids
    spec = mimic.small("zenz-v3-xsmall", n_layer=1, n_embd=256, n_head=4, n_ctx_train=256, always_token=token)
    gguf = mimic.build(spec, desktop.root / "models" / "zenz-v3-xsmall", ZENZ_TOKENIZER, n_threads=1)
    registry = desktop.root / "models.toml"
    registry.write_text(f'default = "mislabelled"\n[models.mislabelled]\npath = "{gguf.parent}"\narch = "qwen3"\n',
                        encoding="utf-8")
    desktop.env["KARUKAN_MODELS_TOML"] = str(registry)
    karukan(desktop, "install", "--user", "--no-fcitx5")  # with the (mislabelled) model
    desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
    return desktop


def test_a_mislabelled_model_is_refused_and_the_dictionary_converts(refused_desktop):
    import asyncio

    from e2e_support import eventually

    async def body():
        app = await IBusApp.connect(refused_desktop.ibus_address)
        await app.set_engine("karukan")

        async def ready():
            return await app.engine_name() == "karukan"

        await eventually(ready)
        for ch in "kanji":
            assert await app.tap(ord(ch))
        await asyncio.sleep(3)  # time enough for a (small) model to load, were it accepted
        assert await app.tap(SPACE)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates and not any(MODEL_CHAR in c for c in candidates)
        assert await app.tap(RETURN)
        assert app.shown.commits == [candidates[0]]
        app.disconnect()

    run(body())
