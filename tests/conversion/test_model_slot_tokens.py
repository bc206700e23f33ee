"""The model slot checks a draft with the surface's tokens as the model sees them after the
prompt (prompt and surface tokenized together: no SentencePiece `▁` at the surface's start) and
never generates more than the family's 50 tokens."""

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.neural.greedy_pool import GreedyPool  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_testing import mimic  # noqa: E402

TINY = dict(n_layer=1, n_embd=128, n_head=4, n_head_kv=2, head_dim=32, n_ff=256, n_ctx_train=256)


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    path = mimic.build(mimic.small("jinen-v2-xsmall", **TINY), tmp_path_factory.mktemp("v2") / "m", n_threads=1)
    model = load_model(path.parent, ModelOptions(n_threads=1))
    slot = ModelSlot(model, "v2")
    yield model, slot
    slot.close()


def test_a_draft_is_checked_with_the_joint_encodings_surface_tokens(v2, monkeypatch):
    model, slot = v2
    seen = []
    real = GreedyPool.first_disagreement

    def spy(pool, owner, prompt, ids):
        seen.append((list(prompt), list(ids)))
        return real(pool, owner, prompt, ids)

    monkeypatch.setattr(GreedyPool, "first_disagreement", spy)
    slot.check_draft("きょう", "", "今日")
    [(prompt, ids)] = seen
    space = model.tokenizer.vocab["\u2581"]
    assert model.tokenizer.encode("今日")[0] == space  # alone it would start with ▁
    assert prompt == model.prompt_ids("きょう") and ids == model.tokenizer.encode("今日")[1:]
    assert prompt + ids == model.tokenizer.encode(model.build_prompt("きょう").text + "今日")


def test_greedy_output_never_exceeds_the_family_budget(v2):
    model, slot = v2
    assert model.family.max_new_tokens == 50
    assert slot._job_shape(model, "きょう", "", 200)[1] == 50
    assert slot._job_shape(model, "きょう", "", None)[1] == 50
    assert slot._job_shape(model, "きょう", "", 12)[1] == 12
