"""Mimics of the published models (karukan_testing.mimic) in small shapes: the zenz GPT-2 GGUF
with the real zenz tokenizer and the zenz metadata quirks, the jinen v1 GPT-2 GGUF with a 32k
byte-level BPE whose marks are single tokens (4-6), and the jinen v2 Qwen3 GGUF with marks at
32000-32002, all Q5_K_M. They load by path, tokenize prompts as the families were trained (zenz:
no U+EE02 before an empty context), decode by the fast paths exactly as the slow references do,
stop at EOS and at marks, run through `karukan convert` / `karukan keys`, and mismatches are
refused."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.cli import main  # noqa: E402
from karukan_testing import mimic  # noqa: E402
from karukan_engine.neural.errors import ModelLoadError, TokenizerError  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_engine.neural.prompt import CONTEXT_MARK, INPUT_MARK, MARKS, OUTPUT_MARK  # noqa: E402
from karukan_engine.neural.registry import load_model_by_id_or_path, parse_registry  # noqa: E402
from karukan_engine.neural.runtime import LlamaModel  # noqa: E402
from karukan_engine.neural.tokenizer import GgufTokenizer  # noqa: E402
from neural_support import fresh_logprobs, reference_beam, reference_greedy  # noqa: E402

ZENZ_TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
ZENZ_LEAD_BYTE = 172  # the byte-level token of 0xEE, first byte of every mark
ZENZ_EOS = 3
TINY = dict(n_layer=1, n_embd=256, n_head=4, n_ctx_train=256, embed_std=0.1, eos_scale=3.0)
SPECS = {
    "zenz": mimic.small("zenz-v3-xsmall", **TINY),
    "jinen-v1": mimic.small("jinen-v1-xsmall", **TINY),
    "jinen-v2": mimic.small("jinen-v2-xsmall", n_head_kv=2, head_dim=64, n_ff=512, **TINY),
}
READINGS = [("かんじ", ""), ("きょうはいいてんきですね", ""), ("こうえん", "子どもと"), ("がっこう", "昨日、")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("mimics")
    return {kind: mimic.build(spec, root / kind, ZENZ_TOKENIZER, n_threads=1) for kind, spec in SPECS.items()}


@pytest.fixture(scope="module", params=list(SPECS))
def model(request, built):
    m = load_model(built[request.param].parent, ModelOptions(n_threads=1))
    m.kind = request.param
    yield m
    m.close()


def _reader(path):
    from gguf import GGUFReader

    return GGUFReader(str(path))


def _field(reader, key):
    return reader.get_field(key).contents()


def test_mimics_are_q5_k_m_files_in_the_published_layout(built):
    from gguf import GGMLQuantizationType

    for kind, path in built.items():
        reader = _reader(path)
        assert _field(reader, "general.file_type") == mimic.FTYPES["Q5_K_M"]
        assert GGMLQuantizationType.Q5_K in {t.tensor_type for t in reader.tensors}
        assert path.name == SPECS[kind].file and (path.parent / "tokenizer.json").is_file()
    zenz = _reader(built["zenz"])
    assert _field(zenz, "general.architecture") == "gpt2"
    assert _field(zenz, "tokenizer.ggml.pre") == mimic.ZENZ_PRE  # as the published zenz files
    assert _field(zenz, "tokenizer.ggml.eos_token_id") == 2
    v1 = _reader(built["jinen-v1"])
    assert _field(v1, "general.architecture") == "gpt2" and _field(v1, "tokenizer.ggml.pre") == "gpt-2"
    tokens = v1.get_field("tokenizer.ggml.tokens")
    assert len(tokens.data) == mimic.JINEN_V1_VOCAB
    assert [tokens.contents(i) for i in (4, 5, 6)] == [INPUT_MARK, OUTPUT_MARK, CONTEXT_MARK]
    v2 = _reader(built["jinen-v2"])
    assert _field(v2, "general.architecture") == "qwen3"
    tokens = v2.get_field("tokenizer.ggml.tokens")
    assert len(tokens.data) == 32003
    assert [tokens.contents(i) for i in (32000, 32001, 32002)] == [INPUT_MARK, OUTPUT_MARK, CONTEXT_MARK]


def test_real_shapes_match_the_published_sizes():
    assert mimic.parameter_count(mimic.MIMICS["jinen-v1-xsmall"], 6000) == pytest.approx(22.6e6, rel=0.02)
    assert mimic.parameter_count(mimic.MIMICS["jinen-v1-small"], 6000) == pytest.approx(90e6, rel=0.03)
    assert mimic.parameter_count(mimic.MIMICS["jinen-v2-xsmall"], 32003) == pytest.approx(36e6, rel=0.03)
    assert mimic.parameter_count(mimic.MIMICS["jinen-v2-small"], 32003) == pytest.approx(109e6, rel=0.03)


def test_zenz_metadata_is_repaired_when_loading(built):
    llama = LlamaModel(built["zenz"])
    try:
        assert llama.info.fixups["tokenizer.ggml.pre"] == "gpt-2"
        assert llama.eos_id == ZENZ_EOS  # declared 2 (<s>), the family's EOS is </s>
    finally:
        llama.free()
    # the quirk is real: with the published pre-tokenizer name llama.cpp refuses the file
    with pytest.raises(ModelLoadError):
        LlamaModel(built["zenz"], {"tokenizer.ggml.pre": mimic.ZENZ_PRE})


def test_prompt_ids_are_the_tokenizers_encoding_of_the_prompt_text(model):
    from tokenizers import Tokenizer

    own = Tokenizer.from_file(str(Path(model.llama.path).parent / "tokenizer.json"))
    assert model.family.name == ("zenz-v3" if model.kind == "zenz" else "jinen")  # zenz: from its metadata
    for reading, context in READINGS:
        prompt = model.build_prompt(reading, context)
        ids = model.prompt_ids(reading, context)
        assert ids == own.encode(prompt.text, add_special_tokens=False).ids
        if model.kind == "jinen-v2":  # marks as the single tokens 32002 / 32000 / 32001
            assert ids[0] == 32002 and ids[-1] == 32001 and ids.count(32000) == 1
        elif model.kind == "jinen-v1":  # marks as the single tokens 6 / 4 / 5
            assert ids[0] == 6 and ids[-1] == 5 and ids.count(4) == 1
        elif context:  # zenz: marks as three byte tokens each, U+EE02 only before a context
            assert ids[:3] == [172, 120, 204] and ids[-3:] == [172, 120, 203]
        else:
            assert ids[:3] == [172, 120, 202] and ids[-3:] == [172, 120, 203]


def test_the_gguf_vocabulary_tokenizes_prompts_like_tokenizer_json(model):
    gguf = GgufTokenizer(model.llama.vocab)
    for reading, context in READINGS + [("とうきょう1ばんせん", "ABC 鬱")]:
        prompt = model.build_prompt(reading, context)
        assert gguf.encode_prompt(prompt) == model.tokenizer.encode_prompt(prompt)
    # and stops at the same tokens (zenz: </s> and every token holding byte 0xEE)
    assert gguf.extra_stop_ids() == model.tokenizer.extra_stop_ids()
    assert [gguf.mark_id(m) for m in MARKS] == [model.tokenizer.mark_id(m) for m in MARKS]


_USER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.characters(min_codepoint=0x3000, max_codepoint=0x30FF)
                     | st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF) | st.sampled_from("😀\u3000\uee00\ue004\n"),
                     max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reading=_USER_TEXT, context=_USER_TEXT)
def test_the_gguf_vocabulary_agrees_with_tokenizer_json_on_any_prompt(model, reading, context):
    """What lets models.toml run the zenz GGUFs on their own vocabulary (tokenizer = "gguf")."""
    prompt = model.build_prompt(reading, context)
    assert GgufTokenizer(model.llama.vocab).encode_prompt(prompt) == model.tokenizer.encode_prompt(prompt)


def test_only_the_zenz_metadata_needs_repairs(built):
    zenz, v1, v2 = LlamaModel(built["zenz"]), LlamaModel(built["jinen-v1"]), LlamaModel(built["jinen-v2"])
    try:
        assert zenz.info.fixups == {"tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.eos_token_id": 3,
                                    "tokenizer.ggml.bos_token_id": 2, "tokenizer.ggml.padding_token_id": 1}
        assert v1.info.fixups == {} and v2.info.fixups == {}
    finally:
        zenz.free()
        v1.free()
        v2.free()


def test_stop_ids_hold_the_family_eos_and_the_marks(model):
    if model.kind == "zenz":
        assert model.eos_id == ZENZ_EOS and {ZENZ_EOS, ZENZ_LEAD_BYTE} <= model.stop_ids
    elif model.kind == "jinen-v1":
        assert model.eos_id == 2 and {2, 4, 5, 6} <= model.stop_ids
    else:
        assert model.eos_id == 2 and {2, 32000, 32001, 32002} <= model.stop_ids
    for ch in "漢字かなカナ":
        assert not set(model.tokenizer.encode(ch)) & model.stop_ids


def test_greedy_matches_full_reevaluation(model):
    session = model.greedy_decoder()
    for reading, context in READINGS:
        prompt = model.prompt_ids(reading, context)
        out, _, finished = session.generate(prompt, 10, model.stop_ids)
        assert (out, finished) == reference_greedy(model.llama, prompt, 10, model.stop_ids)


@pytest.mark.parametrize("beam", [1, 3, 5])
def test_beam_matches_full_reevaluation(model, beam):
    for reading, context in READINGS[:3]:
        prompt = model.prompt_ids(reading, context)
        fast = model._beam_searcher().search(prompt, 6, beam, model.stop_ids)
        ref = reference_beam(model.llama, prompt, 6, beam, model.stop_ids)
        assert [h.tokens for h in fast] == [r[0] for r in ref]
        assert [h.finished for h in fast] == [r[2] for r in ref]
        for h, r in zip(fast, ref):
            # Q5_K matmuls of a batch and of a fresh prefill differ in the low bits (~1e-3
            # relative); the tokens and their order must not
            assert h.score == pytest.approx(r[1], rel=3e-3, abs=2e-2)


def test_nll_batched_equals_single_and_the_definition(model):
    surfaces = ["漢字", "感じ", "かんじ", "鬱😀", ""]
    batched = model.score_many("かんじ", "前の文", surfaces)
    assert batched == pytest.approx([model.score("かんじ", "前の文", s) for s in surfaces], rel=3e-3, abs=1e-2)
    # the definition, with the surface's tokens from prompt and surface encoded together
    prompt = model.prompt_ids("かんじ", "前の文")
    joint = model.tokenizer.encode(model.build_prompt("かんじ", "前の文").text + "漢字")
    assert joint[: len(prompt)] == prompt
    ids = joint[len(prompt):]
    total = sum(fresh_logprobs(model.llama, prompt + ids[:i])[t] for i, t in enumerate(ids + [model.eos_id]))
    assert batched[0] == pytest.approx(-total / 2, rel=3e-3, abs=1e-2)


@pytest.mark.parametrize("token, stops", [(ZENZ_LEAD_BYTE, True), (ZENZ_EOS, True), (None, False)])
def test_zenz_generation_stops_at_the_first_byte_of_a_mark_and_at_eos(tmp_path, token, stops):
    from tokenizers import Tokenizer

    [kanji] = Tokenizer.from_file(str(ZENZ_TOKENIZER)).encode("漢", add_special_tokens=False).ids
    spec = mimic.small("zenz-v3-xsmall", **{**TINY, "always_token": kanji if token is None else token})
    path = mimic.build(spec, tmp_path / "always", ZENZ_TOKENIZER, n_threads=1)
    with load_model(path.parent, ModelOptions(n_threads=1)) as m:
        greedy = m.greedy("かんじ", max_new=4)
        beams = m.beam("かんじ", beam=3, max_new=4)
    if stops:
        assert greedy.finished and greedy.text == "" and greedy.token_ids == ()
        assert beams[0].finished and beams[0].text == ""
    else:  # the knob works: without a stop the model writes its one token
        assert not greedy.finished and greedy.text == "漢漢漢漢"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("KARUKAN_CONFIG", raising=False)
    return tmp_path


@pytest.mark.parametrize("kind", list(SPECS))
def test_convert_and_keys_run_on_a_mimic_by_path(kind, built, isolated, capsys):
    path = str(built[kind].parent)
    assert main(["convert", "--model", path, "-n", "3", "きょうはいいてんきですね"]) == 0
    out, err = capsys.readouterr()
    assert 1 <= len(out.splitlines()) <= 3 and err == ""
    assert main(["keys", "--model", str(built[kind]), "kyouha<space><return>"]) == 0
    out, _ = capsys.readouterr()
    assert "  commit: " in out


def _mismatched_dir(built, tmp_path):
    """The jinen-v2 mimic's GGUF with the zenz tokenizer.json beside it."""
    directory = tmp_path / "mismatch"
    directory.mkdir()
    (directory / "m.gguf").symlink_to(built["jinen-v2"])
    (directory / "tokenizer.json").write_bytes(ZENZ_TOKENIZER.read_bytes())
    return directory


def test_a_tokenizer_json_of_another_model_is_refused(built, isolated, capsys):
    directory = _mismatched_dir(built, isolated)
    with pytest.raises(TokenizerError, match="does not match the GGUF vocabulary"):
        load_model(directory)
    assert main(["convert", "--model", str(directory), "かんじ"]) == 1
    _, err = capsys.readouterr()
    assert err.startswith("karukan: error: ") and err.count("\n") == 1 and "does not match" in err


def test_registry_architecture_and_vocabulary_size_are_checked(built, tmp_path):
    registry = parse_registry(
        f'[models.zenz-as-qwen]\npath = "{built["zenz"].parent}"\narch = "qwen3"\n'
        f'[models.zenz-vocab]\npath = "{built["zenz"].parent}"\narch = "gpt2"\nn_vocab = 32003\n'
        f'[models.zenz-ok]\npath = "{built["zenz"].parent}"\narch = "gpt2"\nn_vocab = 6000\n', tmp_path)
    with pytest.raises(ModelLoadError, match="'gpt2' model, models.toml says 'qwen3'") as err:
        load_model_by_id_or_path("zenz-as-qwen", ModelOptions(n_threads=1), registry)
    assert "\n" not in str(err.value) and "zenz-as-qwen" in str(err.value)
    with pytest.raises(ModelLoadError, match="6000 tokens, models.toml says 32003"):
        load_model_by_id_or_path("zenz-vocab", ModelOptions(n_threads=1), registry)
    load_model_by_id_or_path("zenz-ok", ModelOptions(n_threads=1), registry).close()


def test_a_mismatched_default_model_leaves_the_dictionary_working(built, isolated, monkeypatch, capsys):
    directory = _mismatched_dir(built, isolated)
    registry = isolated / "models.toml"
    registry.write_text(f'default = "broken"\n[models.broken]\npath = "{directory}"\n', encoding="utf-8")
    monkeypatch.setenv("KARUKAN_MODELS_TOML", str(registry))
    assert main(["convert", "きょうはいいてんきですね"]) == 0
    with_fallback = capsys.readouterr().out
    assert main(["convert", "--no-model", "きょうはいいてんきですね"]) == 0
    assert with_fallback == capsys.readouterr().out and with_fallback.strip()


def test_an_architecture_karukan_does_not_run_is_refused(tmp_path):
    import gguf

    path = tmp_path / "bert.gguf"
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelLoadError, match="'bert' model; Karukan runs gpt2, llama, qwen2, qwen3") as err:
        LlamaModel(path)
    assert "\n" not in str(err.value)
