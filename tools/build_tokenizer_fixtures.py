"""Write the generated tokenizer.json fixtures of the jinen tokenizer kinds (the zenz one is the
real file, copied). The tests pin the ids these files give, so rebuild them only on purpose:

    python tools/build_tokenizer_fixtures.py            # into tests/fixtures/

- jinen-v1-like-tokenizer: a byte-level BPE over single characters whose prompt marks are
  single tokens (karukan_testing.mimic.jinen_v1_vocabulary), 1,500 tokens.
- jinen-v2-metaspace-tokenizer: a SentencePiece BPE with byte fallback and a Metaspace
  pre-tokenizer, the marks as special tokens (mimic.jinen_v2_vocabulary), 1,200 tokens.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from karukan_testing import mimic  # noqa: E402

SIZES = {"jinen-v1-like-tokenizer": 1500, "jinen-v2-metaspace-tokenizer": 1200}


def build(out: Path) -> list[Path]:
    written = []
    v1 = out / "jinen-v1-like-tokenizer"
    v1.mkdir(parents=True, exist_ok=True)
    vocab = mimic.jinen_v1_vocabulary(SIZES[v1.name], first=mimic.COMMON_CHARS)
    written.append(mimic.write_jinen_v1_tokenizer(v1 / "tokenizer.json", vocab))
    v2 = out / "jinen-v2-metaspace-tokenizer"
    v2.mkdir(parents=True, exist_ok=True)
    vocab = mimic.jinen_v2_vocabulary(SIZES[v2.name], first=mimic.COMMON_CHARS)
    written.append(mimic.write_jinen_v2_tokenizer(v2 / "tokenizer.json", vocab))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(f"{path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
