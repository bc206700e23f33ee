"""Training pairs packed as compact token arrays, for a training run on another machine.

The GPU path (gpu_train.py) never sees text: the pairs are tokenized here, on CPU, with exactly
the tokenizer and encoder of train.py (train.vocabulary_for over all training pairs, then
data.encode_pair), and written as

    <dir>/train.npz, <dir>/dev.npz   ids (uint16, every example's ids end to end),
                                     offsets (uint32, n + 1: example i is ids[offsets[i]:offsets[i+1]]),
                                     prompt_len, context_len (uint8, one per example),
                                     kept (the source pairs' kept/dropped bits, np.packbits)
    <dir>/tokens.json                the vocabulary (CharTokenizer tokens, ids in order)
    <dir>/meta.json                  counts, sizes, the source files' sha256, the subsample share

np.savez_compressed, no pickles. Everything together stays within a byte budget (default 40 MB,
what travels to the GPU machine with the repository): when the training split does not fit, a
seeded random subset of its pairs is kept (the same subset for the same pairs and seed), and
meta.json says how many. Pairs that do not fit n_ctx are dropped, as train.py drops them.

    python -m karukan_engine.training.token_arrays [--pairs DIR] [--out DIR] [--vocab-size 4000]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from karukan_engine.training.data import Example, encode_pair
from karukan_engine.training.pairs import Pair, read_pairs
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.vocab import CharTokenizer

FORMAT = 1
DEFAULT_MAX_BYTES = 40_000_000
DEFAULT_DEV_LIMIT = 2000      # train.py scores its dev loss on the first 2,000 dev pairs
_META_RESERVE = 4096          # bytes kept for meta.json when fitting the training split
_FIELDS = ("ids", "offsets", "prompt_len", "context_len", "kept", "n_pairs")


def pack(examples: Sequence[Example | None]) -> dict[str, np.ndarray]:
    """Arrays of the examples that are not None (None: a pair that was not kept)."""
    ids = array("H")
    offsets = array("I", [0])
    prompt_len = array("B")
    context_len = array("B")
    kept = np.zeros(len(examples), dtype=bool)
    for index, example in enumerate(examples):
        if example is None:
            continue
        if max(example.ids) > 0xFFFF or example.prompt_len > 0xFF or example.context_len > 0xFF:
            raise ValueError("token id or prompt length out of the packed range (uint16 / uint8)")
        kept[index] = True
        ids.extend(example.ids)
        offsets.append(len(ids))
        prompt_len.append(example.prompt_len)
        context_len.append(example.context_len)
    return {"ids": np.frombuffer(ids, dtype=np.uint16).copy(),
            "offsets": np.frombuffer(offsets, dtype=np.uint32).copy(),
            "prompt_len": np.frombuffer(prompt_len, dtype=np.uint8).copy(),
            "context_len": np.frombuffer(context_len, dtype=np.uint8).copy(),
            "kept": np.packbits(kept), "n_pairs": np.array(len(examples), dtype=np.int64)}


def unpack(arrays: dict[str, np.ndarray]) -> list[Example]:
    """The Examples of pack()'s arrays, in order (plain Python ints, as encode_pair returns)."""
    flat = arrays["ids"].tolist()
    offsets = arrays["offsets"].tolist()
    return [Example(flat[begin:end], prompt, context)
            for begin, end, prompt, context in zip(offsets, offsets[1:], arrays["prompt_len"].tolist(),
                                                   arrays["context_len"].tolist())]


def kept_mask(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """One bool per source pair: True where its example is in the arrays."""
    n = int(arrays["n_pairs"])
    return np.unpackbits(arrays["kept"], count=n).astype(bool)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def load_split(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        missing = [f for f in _FIELDS if f not in data.files]
        if missing:
            raise ValueError(f"{path}: not a token array file (missing {', '.join(missing)})")
        return {name: data[name] for name in _FIELDS}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _split_meta(arrays: dict[str, np.ndarray], n_fit: int, size: int) -> dict:
    n_kept = len(arrays["prompt_len"])
    return {"pairs": int(arrays["n_pairs"]), "fit_n_ctx": n_fit, "kept": n_kept,
            "kept_share_of_fitting": round(n_kept / max(n_fit, 1), 6),
            "tokens": int(arrays["offsets"][-1]), "bytes": size}


def build_token_arrays(train_pairs: list[Pair], dev_pairs: list[Pair], out_dir: Path,
                       vocab_size: int = 4000, n_ctx: int = 128, max_bytes: int = DEFAULT_MAX_BYTES,
                       dev_limit: int = DEFAULT_DEV_LIMIT, seed: int = 0, sources: dict | None = None,
                       log=print) -> dict:
    """Tokenize, pack and write the arrays of train and dev (see the module doc); returns meta."""
    from karukan_engine.training.train import vocabulary_for  # torch is imported there

    started = time.monotonic()
    tokenizer = vocabulary_for(train_pairs, vocab_size)
    if len(tokenizer) > 0x10000:
        raise ValueError(f"a vocabulary of {len(tokenizer)} tokens does not fit uint16 ids")
    if n_ctx > 0xFF:
        raise ValueError("n_ctx above 255 does not fit the uint8 prompt lengths")
    out_dir.mkdir(parents=True, exist_ok=True)
    tokens_json = json.dumps(tokenizer.tokens, ensure_ascii=False).encode("utf-8")
    dev_encoded = [encode_pair(tokenizer, p, n_ctx) for p in dev_pairs[:dev_limit]]
    dev_bytes = _npz_bytes(pack(dev_encoded))
    train_encoded = [encode_pair(tokenizer, p, n_ctx) for p in train_pairs]
    fitting = np.array([e is not None for e in train_encoded], dtype=bool)
    n_fit = int(fitting.sum())
    budget = max_bytes - len(tokens_json) - len(dev_bytes) - _META_RESERVE
    # Each pair's rank in one seeded permutation: keeping the n lowest-ranked fitting pairs gives
    # nested, reproducible subsets.
    rank = np.random.default_rng(seed).permutation(len(train_encoded))
    fitting_ranks = np.sort(rank[fitting])
    keep = n_fit
    for _ in range(12):
        if keep == n_fit:
            selected = fitting
        else:
            selected = fitting & (rank < fitting_ranks[keep]) if keep else np.zeros_like(fitting)
        train_arrays = pack([e if s else None for e, s in zip(train_encoded, selected)])
        train_bytes = _npz_bytes(train_arrays)
        if len(train_bytes) <= budget:
            break
        keep = int(keep * budget / len(train_bytes) * 0.995)
    else:
        raise ValueError(f"the training split does not fit {max_bytes} bytes")
    (out_dir / "train.npz").write_bytes(train_bytes)
    (out_dir / "dev.npz").write_bytes(dev_bytes)
    (out_dir / "tokens.json").write_bytes(tokens_json)
    meta = {"format": FORMAT, "n_ctx": n_ctx, "vocab_size": len(tokenizer), "requested_vocab_size": vocab_size,
            "seed": seed, "dev_limit": dev_limit, "max_bytes": max_bytes,
            "train": _split_meta(train_arrays, n_fit, len(train_bytes)),
            "dev": _split_meta(pack(dev_encoded), sum(e is not None for e in dev_encoded), len(dev_bytes)),
            "sources": sources or {}, "build_seconds": round(time.monotonic() - started, 1)}
    meta["total_bytes"] = len(train_bytes) + len(dev_bytes) + len(tokens_json)
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    meta["total_bytes"] += (out_dir / "meta.json").stat().st_size
    log(f"token arrays: {meta['train']['kept']} of {meta['train']['pairs']} training pairs "
        f"({meta['train']['kept_share_of_fitting']:.1%} of those that fit n_ctx), {meta['dev']['kept']} dev, "
        f"vocab {len(tokenizer)}, {meta['total_bytes'] / 1e6:.1f} MB, {meta['build_seconds']} s")
    return meta


@dataclass
class TokenArrays:
    tokens: list[str]
    train: list[Example]
    dev: list[Example]
    meta: dict

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer(self.tokens)


def load_token_arrays(directory: Path, splits: tuple[str, ...] = ("train", "dev")) -> TokenArrays:
    """The vocabulary, the Examples of the splits asked for (others empty) and meta.json."""
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{directory}: token array format {meta.get('format')}, expected {FORMAT}")
    tokens = json.loads((directory / "tokens.json").read_text(encoding="utf-8"))
    examples = {split: unpack(load_split(directory / f"{split}.npz")) if split in splits else []
                for split in ("train", "dev")}
    return TokenArrays(tokens, examples["train"], examples["dev"], meta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m karukan_engine.training.token_arrays",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=None, help="the pairs stage directory (default: work dir)")
    parser.add_argument("--out", type=Path, default=None, help="default: <work dir>/arrays")
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--n-ctx", type=int, default=128)
    parser.add_argument("--max-mb", type=float, default=DEFAULT_MAX_BYTES / 1e6, help="budget in MB (10^6 bytes)")
    parser.add_argument("--dev-limit", type=int, default=DEFAULT_DEV_LIMIT)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    pairs_dir = args.pairs or stage_dir("pairs")
    out = args.out or stage_dir("arrays")
    paths = {split: pairs_dir / f"{split}.jsonl" for split in ("train", "dev")}
    sources = {f"{split}.jsonl": {"sha256": _sha256(path), "bytes": path.stat().st_size}
               for split, path in paths.items()}
    build_token_arrays(read_pairs(paths["train"]), read_pairs(paths["dev"]), out, args.vocab_size, args.n_ctx,
                       int(args.max_mb * 1e6), args.dev_limit, args.seed, sources, log=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
