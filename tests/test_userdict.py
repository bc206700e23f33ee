"""User dictionary: Mozc TSV round trip, validation, and the `karukan dict` command."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.cli import main
from karukan_engine.dictionary.user_dictionary import UserDictionary, UserDictionaryError, parse_line

POS = {"名詞", "人名", "地名", "動詞ワ行五段"}


def test_add_save_reload_round_trip(tmp_path):
    path = tmp_path / "user.tsv"
    d = UserDictionary(path, POS)
    assert d.add("かるかん", "軽羹", "名詞", "和菓子")
    assert d.add("カルカン", "カルカン", "地名")          # katakana readings are stored as hiragana
    assert not d.add("かるかん", "軽羹", "名詞")          # duplicate
    d.save()
    again = UserDictionary(path, POS)
    assert [(w.reading, w.surface, w.pos, w.comment) for w in again.words] == [
        ("かるかん", "軽羹", "名詞", "和菓子"), ("かるかん", "カルカン", "地名", "")]
    assert again.remove("かるかん", "軽羹") == 1
    assert [w.surface for w in again.lookup("かるかん")] == ["カルカン"]


def test_unknown_pos_and_bad_lines_are_refused(tmp_path):
    d = UserDictionary(tmp_path / "u.tsv", POS)
    with pytest.raises(UserDictionaryError):
        d.add("あ", "亜", "存在しない品詞")
    with pytest.raises(UserDictionaryError):
        parse_line("readingonly")
    assert parse_line("# comment") is None and parse_line("   ") is None


def test_import_reports_problems_and_export_matches(tmp_path):
    d = UserDictionary(tmp_path / "u.tsv", POS)
    added, problems = d.import_tsv(io.StringIO("すし\t寿司\t名詞\t\n# c\nbad\nやまだ\t山田\t人名\tcomment\nx\ty\t謎\n"))
    assert added == 2 and len(problems) == 2 and problems[0].startswith("line 3")
    out = io.StringIO()
    d.export_tsv(out)
    assert out.getvalue() == "すし\t寿司\t名詞\t\nやまだ\t山田\t人名\tcomment\n"


fields = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters="\t#"),
                 min_size=1, max_size=8).map(str.strip).filter(bool)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.tuples(st.text(alphabet="あいうかきくアイウ", min_size=1, max_size=6), fields,
                                st.sampled_from(sorted(POS)), st.text(alphabet="abc メモ", max_size=5).map(str.strip)),
                      max_size=8))
def test_export_import_round_trip(tmp_path_factory, words):
    root = tmp_path_factory.mktemp("rt")
    d = UserDictionary(root / "a.tsv", POS)
    for reading, surface, pos, comment in words:
        d.add(reading, surface, pos, comment)
    out = io.StringIO()
    d.export_tsv(out)
    other = UserDictionary(root / "b.tsv", POS)
    added, problems = other.import_tsv(io.StringIO(out.getvalue()))
    assert problems == [] and other.words == d.words and added == len(d.words)


def test_dict_cli_add_list_export_import_remove(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert main(["dict", "add", "かるかん", "軽羹", "--pos", "名詞", "--comment", "菓子"]) == 0
    assert main(["dict", "add", "やまだ", "山田", "--pos", "人名"]) == 0
    assert (tmp_path / "data" / "karukan" / "user_dictionary.tsv").is_file()
    capsys.readouterr()
    assert main(["dict", "list"]) == 0
    assert capsys.readouterr().out == "かるかん\t軽羹\t名詞\t菓子\nやまだ\t山田\t人名\t\n"
    export = tmp_path / "export.tsv"
    assert main(["dict", "export", str(export)]) == 0
    assert main(["dict", "remove", "かるかん", "軽羹"]) == 0
    assert main(["dict", "remove", "かるかん", "軽羹"]) == 1        # nothing left to remove
    assert main(["dict", "import", str(export)]) == 0
    capsys.readouterr()
    main(["dict", "list"])
    assert "軽羹" in capsys.readouterr().out
    assert main(["dict", "add", "あ", "亜", "--pos", "謎の品詞"]) == 2
    assert main(["dict", "import", str(tmp_path / "missing.tsv")]) == 1


def test_edits_by_another_process_are_picked_up(tmp_path):
    path = tmp_path / "u.tsv"
    engine_side = UserDictionary(path, POS)
    assert not engine_side.reload_if_changed()
    cli_side = UserDictionary(path, POS)
    cli_side.add("すし", "寿司")
    cli_side.save()
    generation = engine_side.generation
    assert engine_side.reload_if_changed()
    assert [w.surface for w in engine_side.words] == ["寿司"] and engine_side.generation > generation
    assert not engine_side.reload_if_changed()
