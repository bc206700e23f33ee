"""The dictionary build on a small synthetic Mozc-shaped source, and the reader over its output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import build_dictionary  # noqa: E402
from tools import dictionary_fetch  # noqa: E402
from tools import dictionary_synthetic  # noqa: E402

from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dict")
    source = dictionary_synthetic.write_source(root / "mozc")
    meta = build_dictionary.compile_dictionary(source, root / "out", {"path": "synthetic"})
    return source, root / "out", meta


def test_every_entry_round_trips(built):
    _, out, meta = built
    d = SystemDictionary(out)
    got = sorted((e.reading, e.lid, e.rid, e.cost, e.surface) for e in d.iter_entries())
    want = sorted((r, lid, lid, c, s) for r, lid, c, s in dictionary_synthetic.WORDS)
    assert got == want
    assert meta["entries"] == len(dictionary_synthetic.WORDS)


def test_entries_of_a_reading_are_cheapest_first(built):
    d = SystemDictionary(built[1])
    assert [e.surface for e in d.lookup("きょう")] == ["今日", "京"]
    assert [e.surface for e in d.lookup("さん")] == ["さん", "三"]   # さん is stored as "same as reading"


def test_prefix_and_predictive_search(built):
    d = SystemDictionary(built[1])
    assert d.prefixes("きょうはいい") == ["きょう", "きょうは"]
    assert set(d.predictive("きょう")) == {"きょう", "きょうは"}
    assert d.lookup("ない") == []


def test_connection_matrix_follows_mozc_indexing(built):
    source, out, _ = built
    values = (source / "dictionary_oss" / "connection_single_column.txt").read_text().split()
    size = int(values[0])
    d = SystemDictionary(out)
    for rid, lid in [(0, 1), (1, 5), (5, 6), (8, 3)]:
        assert d.connection(rid, lid) == int(values[1 + rid * size + lid])


def test_segmenter_first_matching_rule_wins(built):
    d = SystemDictionary(built[1])
    noun, number, particle, suffix, verb = 1, 2, 5, 7, 8
    assert not d.segmenter[noun, particle]        # * ^(助詞|助動詞) false
    assert not d.segmenter[number, suffix]        # 名詞 名詞,接尾 false (名詞 matches 名詞,数 too)
    assert d.segmenter[verb, suffix]              # only the default rule matches
    assert d.segmenter[noun, noun]
    assert d.segmenter[0].all() and d.segmenter[:, 0].all()   # BOS/EOS always bound a segment


def test_boundary_penalties_and_user_pos(built):
    _, out, meta = built
    d = SystemDictionary(out)
    assert d.prefix_penalty[7] == 1000 and d.prefix_penalty[1] == 0
    assert d.suffix_penalty[1] == 10 and d.suffix_penalty[2] == 0
    assert meta["user_pos"] == {"名詞": 1, "数": 2, "動詞カ行五段": 8}
    # forms whose feature id.def lacks (連用形 here) are left out; the dictionary form comes first
    forms = d.meta["user_pos_forms"]   # as stored in meta.json
    assert forms["動詞カ行五段"] == [["く", "く", 8], ["か", "か", 9]]
    assert forms["名詞"] == [["", "", 1]]


def test_missing_files_raise_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        SystemDictionary(tmp_path)


def test_bad_pos_id_is_rejected(tmp_path):
    source = dictionary_synthetic.write_source(tmp_path / "mozc", words=[("あ", 99, 10, "亜")])
    with pytest.raises(ValueError):
        build_dictionary.compile_dictionary(source, tmp_path / "out", {})


def test_private_apt_config_mirrors_system_sources(tmp_path, monkeypatch):
    etc = tmp_path / "etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: stable\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/security\nSuites: stable-security\nComponents: main\n")
    monkeypatch.setattr(dictionary_fetch, "APT_ETC", etc)
    conf = dictionary_fetch.write_private_apt_config(tmp_path / "apt", extra_suite="trixie")
    parts = tmp_path / "apt" / "parts"
    copied = (parts / "debian.sources").read_text()
    assert copied.count("Types: deb-src") == 2 and "Types: deb\n" not in copied
    extra = (parts / "extra-trixie.sources").read_text()
    assert "Suites: trixie" in extra and "mirror.example/debian" in extra and "security" not in extra
    assert f'Dir::Etc::SourceParts "{parts}"' in conf.read_text()


def test_one_line_sources_get_the_extra_suite(tmp_path, monkeypatch):
    etc = tmp_path / "etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text("deb [arch=amd64] http://mirror.example/debian stable main\n# x\n")
    monkeypatch.setattr(dictionary_fetch, "APT_ETC", etc)
    dictionary_fetch.write_private_apt_config(tmp_path / "apt", extra_suite="trixie")
    lines = (tmp_path / "apt" / "parts" / "src.list").read_text().split("\n")
    assert lines[0] == "deb-src [arch=amd64] http://mirror.example/debian stable main"
    assert lines[1] == "deb-src [arch=amd64] http://mirror.example/debian trixie main"


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_bundled_dictionary_is_compact_and_complete():
    d = SystemDictionary()
    total = sum(p.stat().st_size for p in DEFAULT_DIR.iterdir())
    assert total < 40 * 2**20
    assert d.meta["entries"] > 1_000_000
    licence = (DEFAULT_DIR / "LICENSE.mozc.txt").read_text()
    assert "Mozc LICENSE" in licence and "Google" in licence and "IPA" in licence
    assert d.lookup("きしゃ")[0].surface == "記者"
    assert d.matrix.dtype == np.int16


def test_untrained_rows_borrow_their_relatives_costs(tmp_path):
    """A POS id whose right connections are all 0 (never trained in Mozc's matrix) would let a
    word ending in it precede anything for free (約 before a verb: 約立たず); the build gives it
    the costs of the POS ids that share its leading feature fields."""
    size = len(dictionary_synthetic.FEATURES)
    matrix = [[(7 * i + 13 * j) % 3000 + 1 for j in range(size)] for i in range(size)]
    matrix[0][0] = 0
    matrix[9] = [0] * size     # 動詞,自立,…,五段・カ行イ音便,未然形: untrained
    source = dictionary_synthetic.write_source(tmp_path / "mozc", matrix=matrix)
    meta = build_dictionary.compile_dictionary(source, tmp_path / "out", {"path": "synthetic"})
    d = SystemDictionary(tmp_path / "out")
    assert meta["untrained_rows_filled"] == 1
    assert d.matrix[9].tolist() == matrix[8]   # its one relative: the same verb, another form
    assert [d.matrix[i].tolist() for i in range(size) if i != 9] == [matrix[i] for i in range(size) if i != 9]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fill_untrained_rows_property(data):
    size = data.draw(st.integers(3, 8))
    features = ["BOS/EOS,*,*"] + [",".join(data.draw(st.sampled_from(["A", "B"])) for _ in range(3))
                                  for _ in range(size - 1)]
    rows = data.draw(st.lists(st.lists(st.integers(0, 50), min_size=size, max_size=size),
                              min_size=size, max_size=size))
    untrained = data.draw(st.sets(st.integers(1, size - 1)))
    for i in untrained:
        rows[i] = [0] * size
    matrix = np.array(rows, dtype=np.int16)
    out, repaired = build_dictionary.fill_untrained_rows(matrix, features)
    trained = [i for i in range(1, size) if matrix[i, 1:].any()]
    assert out[0].tolist() == matrix[0].tolist()            # BOS/EOS untouched
    for i in trained:
        assert out[i].tolist() == matrix[i].tolist()        # trained rows untouched
    for i in set(range(1, size)) - set(trained):
        relatives = [q for q in trained if features[q].split(",")[0] == features[i].split(",")[0]]
        assert (i in repaired) == bool(relatives)
        if relatives:
            # the longest shared head short of the whole feature (a lexical field is the last)
            closest = min(2, max(len(_common(features[q], features[i])) for q in relatives))
            chosen = [q for q in relatives if len(_common(features[q], features[i])) >= closest]
            assert out[i].tolist() == np.median(matrix[chosen].astype(np.int32), axis=0).astype(np.int16).tolist()
        else:
            assert out[i].tolist() == matrix[i].tolist()


def _common(a: str, b: str) -> list[str]:
    out = []
    for x, y in zip(a.split(","), b.split(",")):
        if x != y:
            break
        out.append(x)
    return out


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_bundled_dictionary_has_no_free_connections():
    """Every POS id a word can end in costs something before some following word."""
    matrix = SystemDictionary().matrix
    assert all(matrix[rid, 1:].any() for rid in range(1, matrix.shape[0]))
