"""Stage 5: write trained weights as a llama.cpp GGUF (gpt2 arch) and quantize it.

The vocabulary goes into the GGUF as an SPM-style ("llama") token list with byte tokens, so
llama.cpp tokenizes one character per token and falls back to bytes; tokenizer.json with the
same ids is written beside it for the runtime.
"""

from __future__ import annotations

import ctypes
import logging
import tempfile
from pathlib import Path

import numpy as np

from karukan_engine.neural.char_vocab import write_gguf_vocabulary
from karukan_engine.training.vocab import write_tokenizer_json

PROMPT_FORMAT = "U+EE02 context U+EE00 reading(katakana) U+EE01 -> surface </s> (jinen/zenz-v3, NFKC)"

# torch parameter name -> GGUF tensor name, per block and at the top level.
_BLOCK_TENSORS = {
    "attn_norm.weight": "attn_norm.weight", "attn_norm.bias": "attn_norm.bias",
    "attn_qkv.weight": "attn_qkv.weight", "attn_qkv.bias": "attn_qkv.bias",
    "attn_output.weight": "attn_output.weight", "attn_output.bias": "attn_output.bias",
    "ffn_norm.weight": "ffn_norm.weight", "ffn_norm.bias": "ffn_norm.bias",
    "ffn_up.weight": "ffn_up.weight", "ffn_up.bias": "ffn_up.bias",
    "ffn_down.weight": "ffn_down.weight", "ffn_down.bias": "ffn_down.bias",
}
_TOP_TENSORS = {
    "token_embd.weight": "token_embd.weight", "position_embd.weight": "position_embd.weight",
    "output_norm.weight": "output_norm.weight", "output_norm.bias": "output_norm.bias",
}


def gguf_tensors(state_dict: dict, n_layer: int) -> dict[str, np.ndarray]:
    """numpy float32 arrays under llama.cpp's names (nn.Linear's [out, in] is GGUF's layout)."""
    out = {gguf_name: state_dict[name].detach().cpu().float().numpy() for name, gguf_name in _TOP_TENSORS.items()}
    for i in range(n_layer):
        for name, gguf_name in _BLOCK_TENSORS.items():
            out[f"blk.{i}.{gguf_name}"] = state_dict[f"blocks.{i}.{name}"].detach().cpu().float().numpy()
    return out


def write_gguf(path: Path, state_dict: dict, config: dict, tokens: list[str], name: str,
               licence: str = "", description: str = "") -> Path:
    """Write an all-f32 GGUF; quantize() makes the shipped file from it."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_name(name)
    if licence:
        writer.add_license(licence)
    if description:
        writer.add_description(description)
    writer.add_string("karukan.prompt_format", PROMPT_FORMAT)
    writer.add_file_type(0)
    writer.add_context_length(config["n_ctx"])
    writer.add_embedding_length(config["n_embd"])
    writer.add_block_count(config["n_layer"])
    writer.add_feed_forward_length(4 * config["n_embd"])
    writer.add_head_count(config["n_head"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    write_gguf_vocabulary(writer, tokens)
    for tensor_name, array in gguf_tensors(state_dict, config["n_layer"]).items():
        writer.add_tensor(tensor_name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


QUANT_TYPES = {"f32": 0, "f16": 1, "q8_0": 7, "q5_0": 8, "q4_0": 2}


def quantize(source: Path, dest: Path, kind: str = "q8_0", threads: int = 2) -> Path:
    """Quantize with llama.cpp itself (the same code a user's llama.cpp would trust)."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[kind]
    params.nthread = threads
    # llama-cpp-python routes llama.cpp's per-tensor progress lines to this logger.
    llama_logger = logging.getLogger("llama-cpp-python")
    level = llama_logger.level
    llama_logger.setLevel(logging.ERROR)
    try:
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(dest).encode(), ctypes.byref(params))
    finally:
        llama_logger.setLevel(level)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize failed with status {rc}")
    return dest


def export_model_dir(weights: Path, directory: Path, name: str, kind: str = "q8_0",
                     licence: str = "", description: str = "") -> Path:
    """<directory>/<name>.gguf (quantized as `kind`) + tokenizer.json from a train.py model.pt."""
    import torch

    payload = torch.load(weights, weights_only=False, map_location="cpu")
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{name}.gguf"
    # The f32 intermediate stays outside the model directory (the runtime loads its first *.gguf).
    with tempfile.TemporaryDirectory() as scratch:
        f32 = Path(scratch) / f"{name}.f32.gguf"
        write_gguf(f32, payload["model"], payload["config"], payload["tokens"], name, licence, description)
        if kind == "f32":
            f32.replace(final)
        else:
            quantize(f32, final, kind)
    write_tokenizer_json(directory / "tokenizer.json", payload["tokens"])
    return final
