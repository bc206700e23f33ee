"""Build random-weight "mimic" GGUFs in the shapes, vocabularies, metadata and quantization of the
published jinen / zenz models (see karukan_testing/mimic.py), for loading checks and speed
measurements without the real files. Speed does not depend on weight values; the output of a
mimic is noise.

    python tools/build_mimic_models.py                       # all, into work_data/mimic/<name>/
    python tools/build_mimic_models.py jinen-v2-xsmall --quant F32 --out /tmp/mimics

Each lands as work_data/mimic/<name>/<published file name> with tokenizer.json beside it, so
`karukan convert --model work_data/mimic/jinen-v2-xsmall ...` runs it. The zenz mimics carry
the real zenz tokenizer (tests/fixtures/zenz-char-tokenizer, CC BY-SA 4.0; the NOTICE there
applies to the built files too); the jinen ones carry generated vocabularies (32k byte-level BPE
for v1, 32k SentencePiece BPE for v2, both with single-token marks).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from karukan_testing import mimic  # noqa: E402

ZENZ_TOKENIZER = REPO / "tests" / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"mimics to build (default: all): {', '.join(mimic.MIMICS)}")
    parser.add_argument("--out", type=Path, default=REPO / "work_data" / "mimic", help="parent directory (default work_data/mimic)")
    parser.add_argument("--quant", choices=sorted(mimic.FTYPES), default="Q5_K_M", help="weight type (default Q5_K_M, as published)")
    parser.add_argument("--tokenizer", type=Path, default=ZENZ_TOKENIZER, help="the zenz tokenizer.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = args.names or list(mimic.MIMICS)
    unknown = [n for n in names if n not in mimic.MIMICS]
    if unknown:
        parser.error(f"unknown mimic(s): {', '.join(unknown)}")
    for name in names:
        spec = replace(mimic.MIMICS[name], quant=args.quant, seed=args.seed)
        started = time.perf_counter()
        path = mimic.build(spec, args.out / name, args.tokenizer, n_threads=args.threads)
        n_vocab = 6000 if spec.vocab == "zenz" else spec.vocab_size
        params = mimic.parameter_count(spec, n_vocab) / 1e6
        print(f"{name}: {spec.arch} {spec.n_layer}x{spec.n_embd}, vocab {n_vocab}, {params:.1f} M parameters, "
              f"{args.quant}, {path.stat().st_size / 2**20:.2f} MiB, {time.perf_counter() - started:.1f} s -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
