"""A tiny Mozc-shaped source tree (src/data layout) for tests and for trying the build quickly.

    python tools/dictionary_synthetic.py OUT_DIR [--seed N]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

FEATURES = [
    "BOS/EOS,*,*,*,*,*,*",
    "名詞,一般,*,*,*,*,*",
    "名詞,数,アラビア数字,*,*,*,*",
    "記号,アルファベット,*,*,*,*,*",
    "記号,一般,*,*,*,*,*",
    "助詞,係助詞,*,*,*,*,は",
    "助動詞,*,*,*,特殊・デス,基本形,です",
    "名詞,接尾,一般,*,*,*,*",
    "動詞,自立,*,*,五段・カ行イ音便,基本形,*",
    "動詞,自立,*,*,五段・カ行イ音便,未然形,*",
]
SEGMENTER = """\
# lhs rhs boundary
名詞 名詞,接尾 false
* ^(助詞|助動詞) false
* * true
"""
BOUNDARY = """\
PREFIX 名詞,接尾 1000
SUFFIX 名詞,一般 10
"""
USER_POS = """\
名詞\tNOUN\t*\t名詞,一般,*,*,*,*
数\tNUMBER\t*\t名詞,数,アラビア数字
動詞カ行五段\tKA_GROUP1_VERB\t五段・カ行イ音便\t動詞,自立,*,*,五段・カ行イ音便,<cform>,*
"""
CFORMS = """\
五段・カ行イ音便\t基本形\tく\tく\tく
五段・カ行イ音便\t未然形\tか\tか\tか
五段・カ行イ音便\t連用形\tき\tき\tき
"""
WORDS = [  # reading, POS id, cost, surface
    ("きょう", 1, 100, "今日"), ("きょう", 1, 900, "京"), ("は", 5, 50, "は"), ("いい", 1, 300, "良い"),
    ("てんき", 1, 400, "天気"), ("です", 6, 40, "です"), ("ね", 5, 60, "ね"), ("きょうは", 1, 2000, "教派"),
    ("さん", 7, 200, "さん"), ("さん", 1, 700, "三"), ("かく", 8, 500, "書く"), ("かく", 1, 600, "核"),
]


# Mozc's symbol.tsv columns: POS, symbol, readings, description.
SYMBOLS = "POS\tCHAR\tREADING\tDESCRIPTION\n記号\t→\tやじるし みぎ\t右矢印\n記号\t☆\tほし\t白星\n"


def write_source(root: Path, words=WORDS, matrix=None, seed: int = 0) -> Path:
    """Write the tree under root and return its src/data directory."""
    data = root / "src" / "data"
    oss, rules = data / "dictionary_oss", data / "rules"
    oss.mkdir(parents=True, exist_ok=True)
    rules.mkdir(parents=True, exist_ok=True)
    (oss / "id.def").write_text("".join(f"{i} {f}\n" for i, f in enumerate(FEATURES)), encoding="utf-8")
    (oss / "dictionary00.txt").write_text(
        "".join(f"{r}\t{lid}\t{lid}\t{c}\t{s}\n" for r, lid, c, s in words), encoding="utf-8")
    size = len(FEATURES)
    if matrix is None:
        rng = random.Random(seed)
        matrix = [[0 if i == 0 and j == 0 else rng.randrange(0, 3000) for j in range(size)] for i in range(size)]
    values = [str(size)] + [str(matrix[i][j]) for i in range(size) for j in range(size)]
    (oss / "connection_single_column.txt").write_text("\n".join(values) + "\n", encoding="utf-8")
    (oss / "README.txt").write_text("synthetic test data\n", encoding="utf-8")
    (rules / "segmenter.def").write_text(SEGMENTER, encoding="utf-8")
    (rules / "boundary.def").write_text(BOUNDARY, encoding="utf-8")
    (rules / "user_pos.def").write_text(USER_POS, encoding="utf-8")
    (rules / "cforms.def").write_text(CFORMS, encoding="utf-8")
    (data / "symbol").mkdir(exist_ok=True)
    (data / "symbol" / "symbol.tsv").write_text(SYMBOLS, encoding="utf-8")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_source(args.out, seed=args.seed))


if __name__ == "__main__":
    main()
