"""The fast GGUF header reader agrees with the gguf package's reader, keeps only what loading
needs, and turns every truncation or corruption into an error (never a wrong answer)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

gguf = pytest.importorskip("gguf")

from karukan_engine.neural.errors import ModelFormatError  # noqa: E402
from karukan_engine.neural.gguf_header import read_header  # noqa: E402
from karukan_engine.neural.runtime import inspect_gguf  # noqa: E402
from karukan_testing.tiny_models import TinyModelSpec, write_gguf  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", TinyModelSpec(arch="gpt2", vocab_size=600, n_layer=1))


def test_agrees_with_the_gguf_package(tiny):
    header = read_header(tiny)
    reader = gguf.GGUFReader(str(tiny))
    assert [(t.name, tuple(t.shape), t.ggml_type, header.data_start + t.offset) for t in header.tensors] == [
        (t.name, tuple(int(x) for x in t.shape), int(t.tensor_type), int(t.data_offset)) for t in reader.tensors]
    assert header.data_end() == max(int(t.data_offset) + int(t.n_bytes) for t in reader.tensors)
    tokens = reader.get_field("tokenizer.ggml.tokens")
    assert header.metadata["tokenizer.ggml.tokens"] == [tokens.contents(i) for i in range(len(tokens.data))]
    for key in ("general.architecture", "gpt2.context_length", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.model"):
        assert header.metadata[key] == reader.get_field(key).contents()
    assert header.metadata["tokenizer.ggml.scores"] is None  # other arrays are skipped


# (GGUFWriter drops empty strings and refuses empty arrays)
_VALUES = (st.integers(0, 2**31 - 1) | st.text(min_size=1, max_size=20) | st.booleans()
           | st.floats(allow_nan=False, allow_infinity=False, width=32)
           | st.lists(st.integers(0, 1000), min_size=1, max_size=5) | st.lists(st.text(max_size=5), min_size=1, max_size=5))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.dictionaries(st.text(st.sampled_from("abcxyz."), min_size=1, max_size=12).map(lambda k: "t." + k),
                            _VALUES, max_size=6))
def test_any_metadata_reads_back(tmp_path, meta):
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in meta.items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        else:
            writer.add_array(key, value)
    writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    header = read_header(path)
    for key, value in meta.items():
        assert header.metadata[key] == (None if isinstance(value, list) else value)
    assert [(t.name, t.shape) for t in header.tensors] == [("w", (3, 2))]
    assert header.data_end() <= path.stat().st_size


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0.0, 0.9999))
def test_every_truncation_is_a_format_error(tiny, tmp_path, fraction):
    data = tiny.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: max(4, int(len(data) * fraction))])
    with pytest.raises(ModelFormatError):
        inspect_gguf(cut)


def test_not_gguf_and_bad_versions(tmp_path):
    (tmp_path / "text.gguf").write_text("hello, not a model")
    with pytest.raises(ModelFormatError, match="not a GGUF"):
        inspect_gguf(tmp_path / "text.gguf")
    (tmp_path / "v9.gguf").write_bytes(b"GGUF" + (9).to_bytes(4, "little") + bytes(16))
    with pytest.raises(ModelFormatError, match="corrupt"):
        inspect_gguf(tmp_path / "v9.gguf")
    with pytest.raises(ValueError, match="version"):
        read_header(tmp_path / "v9.gguf")
    huge = b"GGUF" + (3).to_bytes(4, "little") + (2**40).to_bytes(8, "little") + bytes(8)
    (tmp_path / "huge.gguf").write_bytes(huge)
    with pytest.raises(ValueError, match="implausible"):
        read_header(tmp_path / "huge.gguf")
