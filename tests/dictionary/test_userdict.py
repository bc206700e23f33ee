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
    version = engine_side.version
    assert engine_side.reload_if_changed()
    assert [w.surface for w in engine_side.words] == ["寿司"] and engine_side.version > version
    assert not engine_side.reload_if_changed()


# -- control characters, damaged and unreadable files (issue 17) --------------------------------------

import os  # noqa: E402

from karukan_engine.core.user_files import has_control_chars  # noqa: E402
from damage_support import as_unprivileged, aside_copies, shared_tmp  # noqa: E402

CONTROLS = ["\x00", "\x1b", "\x7f", "\x85", "\x1c", "\u2028", "\ud800", "\x08"]


@pytest.mark.parametrize("bad", CONTROLS)
def test_control_characters_are_refused_at_add_and_import(tmp_path, bad):
    # Issue 17 item 7: a NUL in a word made every key that showed it go unanswered.
    d = UserDictionary(tmp_path / "u.tsv", POS)
    for fields in ((f"か{bad}か", "蚊"), ("か", f"蚊{bad}蚊"), ("か", "蚊", "名詞", f"メ{bad}モ")):
        with pytest.raises(UserDictionaryError, match="control"):
            d.add(*fields)
    added, problems = d.import_tsv(io.StringIO(f"か\t蚊{bad}蚊\t名詞\t\nすし\t寿司\t名詞\t\n"))
    assert added == 1 and len(problems) == 1 and "control" in problems[0]
    assert [w.surface for w in d.words] == ["寿司"]


def test_dict_add_with_a_nul_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert main(["dict", "add", "かるかん", "軽\x01羹"]) == 2
    assert not (tmp_path / "karukan" / "user_dictionary.tsv").exists()


def test_lines_with_control_characters_on_disk_are_skipped_and_kept(tmp_path):
    path = tmp_path / "u.tsv"
    raw = "すし\t寿司\t名詞\t\nか\t蚊\x00\t名詞\t\nえき\t駅\x1c名\t名詞\t\n".encode()
    path.write_bytes(raw)
    d = UserDictionary(path, POS)
    assert [w.surface for w in d.words] == ["寿司"]
    assert d.add("いぬ", "犬")
    d.save()
    assert [p.read_bytes() for p in aside_copies(path)] == [raw]   # the skipped lines are not lost
    assert [w.surface for w in UserDictionary(path, POS).words] == ["寿司", "犬"]


@given(st.text(max_size=12))
def test_parsed_words_never_hold_control_characters(text):
    try:
        word = parse_line(text)
    except UserDictionaryError:
        return
    if word is not None:
        assert not any(has_control_chars(f) for f in (word.reading, word.surface, word.pos, word.comment))


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "loop", "latin1", "huge"])
def test_a_user_dictionary_that_cannot_be_used_leaves_an_empty_one(tmp_path, kind):
    path = tmp_path / "u.tsv"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "latin1":
        path.write_bytes("すし\t寿司\n".encode("euc-jp"))
    else:
        with open(path, "wb") as stream:
            stream.truncate((64 << 20) + 1)   # sparse: larger than the cap without using the disk
    d = UserDictionary(path, POS)           # never blocks, never raises
    assert d.words == [] and not d.reload_if_changed()
    assert len(aside_copies(path)) == 1     # what was there is kept
    assert d.add("すし", "寿司")
    d.save()
    assert [w.surface for w in UserDictionary(path, POS).words] == ["寿司"]


def test_an_unreadable_user_dictionary_is_set_aside_not_replaced():
    with shared_tmp() as tmp:
        path = tmp / "u.tsv"
        path.write_bytes("すし\t寿司\t名詞\t\n".encode())
        os.chmod(path, 0)
        result = as_unprivileged("""
            import sys
            from pathlib import Path
            from karukan_engine.dictionary.user_dictionary import UserDictionary
            drop_privileges()
            d = UserDictionary(Path(sys.argv[1]))
            print(len(d.words))
            d.add("いぬ", "犬")
            d.save()
        """, str(path), open_dirs=(tmp,))
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["0"]
        (copy,) = aside_copies(path)
        assert copy.read_bytes() == "すし\t寿司\t名詞\t\n".encode()
        assert [w.surface for w in UserDictionary(path).words] == ["犬"]


def test_a_file_that_can_be_neither_read_nor_moved_is_never_replaced(tmp_path, monkeypatch, capsys):
    from karukan_engine.core import user_files as storage

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    path = tmp_path / "karukan" / "user_dictionary.tsv"
    path.parent.mkdir()
    path.write_bytes(b"precious\tdata\n")

    def fail(*_args, **_kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("karukan_engine.dictionary.user_dictionary.read_user_file", fail)
    monkeypatch.setattr(storage, "_move_no_replace", fail)
    assert main(["dict", "add", "すし", "寿司"]) == 1
    assert "not replacing" in capsys.readouterr().err
    assert path.read_bytes() == b"precious\tdata\n"


@given(st.text())
def test_control_characters_are_exactly_the_categories_cc_cs_zl_zp(text):
    import unicodedata

    assert has_control_chars(text) == any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in text)
