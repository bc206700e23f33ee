"""The bundled model's tokenizer (marks as single added tokens, as karukan_engine.training
writes prompts: mark ids around the separately encoded parts): encoding the whole prompt text,
as the runtime now does for every tokenizer.json, gives exactly the training layout."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tokenizers")

from karukan_engine.neural.prompt import MARKS, build_prompt  # noqa: E402
from karukan_engine.neural.tokenizer import HfTokenizer  # noqa: E402

BUNDLED = Path(__file__).resolve().parents[2] / "karukan_engine" / "data" / "model" / "tokenizer.json"
_TEXT = st.text(st.sampled_from("あいうかきくアイウ漢字今日東京、。！？ ABCabc123😀鬱\u3000\t\uee00\uee01\uee02"), max_size=15)


@pytest.fixture(scope="module")
def bundled():
    if not BUNDLED.is_file():
        pytest.skip("bundled model not built")
    return HfTokenizer(BUNDLED, 10**6)


@settings(max_examples=200, deadline=None)
@given(reading=_TEXT, context=_TEXT)
def test_whole_prompt_encoding_is_the_training_layout(bundled, reading, context):
    prompt = build_prompt(reading, context)
    ctx_mark, in_mark, out_mark = (bundled.mark_id(m) for m in MARKS)
    assert None not in (ctx_mark, in_mark, out_mark)
    spliced = [ctx_mark] + bundled.encode(prompt.context) + [in_mark] + bundled.encode(prompt.reading) + [out_mark]
    assert bundled.encode_prompt(prompt) == spliced
