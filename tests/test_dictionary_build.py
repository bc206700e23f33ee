"""The dictionary build on a small synthetic Mozc-shaped source, and the reader over its output."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))

import build_dictionary  # noqa: E402
import dictionary_fetch  # noqa: E402
import dictionary_synthetic  # noqa: E402

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
