"""The compiled dictionary format, written and read by one module: what is written reads back."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.dictionary import format as dictionary_format
from karukan_engine.dictionary.system import Entry, SystemDictionary
from karukan_engine.kana import to_katakana

POS = 4
readings = st.text(alphabet="あいうかきゝゞー", min_size=1, max_size=4)


@st.composite
def entries(draw):
    rows = []
    for reading in draw(st.lists(readings, min_size=1, max_size=12)):
        surface = draw(st.sampled_from([reading, to_katakana(reading), "亜" + reading, "伊"]))
        rows.append((reading, surface, draw(st.integers(0, POS - 1)), draw(st.integers(0, POS - 1)),
                     draw(st.integers(-500, 8000))))
    return rows


@settings(max_examples=25, deadline=None)
@given(entries())
def test_every_entry_written_reads_back(tmp_path_factory, rows):
    out = tmp_path_factory.mktemp("dict")
    reading, surface, lid, rid, cost = (list(column) for column in zip(*rows))
    matrix = np.arange(POS * POS, dtype=np.int16).reshape(POS, POS)
    segmenter = np.eye(POS, dtype=bool)
    meta = dictionary_format.write(out, dictionary_format.CompiledDictionary(
        readings=reading, surfaces=surface, lids=np.array(lid, dtype=np.int16), rids=np.array(rid, dtype=np.int16),
        costs=np.array(cost, dtype=np.int16), matrix=matrix, segmenter=segmenter,
        prefix_penalty=np.zeros(POS, dtype=np.int16), suffix_penalty=np.zeros(POS, dtype=np.int16),
        symbols=[("ほし", "★", "星")], meta={"note": "kept"}))
    assert meta["note"] == "kept" and meta["entries"] == len(rows) and meta["format"] == dictionary_format.FORMAT_VERSION
    d = SystemDictionary(out)
    assert sorted(d.iter_entries(), key=_key) == sorted((Entry(*row) for row in rows), key=_key)
    assert (d.matrix == matrix).all() and (d.segmenter == segmenter).all()
    assert (out / "symbols.tsv").read_text(encoding="utf-8") == "ほし\t★\t星\n"


def _key(e: Entry):
    return e.reading, e.cost, e.surface, e.lid, e.rid
