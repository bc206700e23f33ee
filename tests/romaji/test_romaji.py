import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.romaji import Composer, ComposerSettings, RomajiTable, Script, TableError
from karukan_testing.inspect import resolved_text

TABLE = RomajiTable.default()
# ゕ and ゖ are typed as ヵ and ヶ (as in Mozc), so they have no romaji of their own.
HIRAGANA = [chr(c) for c in range(0x3041, 0x3095)] + ["ー", "ヵ", "ヶ"]


def typed(keys: str, script: Script = Script.HIRAGANA, **settings) -> Composer:
    c = Composer(settings=ComposerSettings(**settings), script=script)
    for k in keys:
        c.insert(k)
    return c


def flushed(keys: str, **kw) -> str:
    c = typed(keys, **kw)
    c.flush()
    return c.text()


@pytest.mark.parametrize("keys, text", [
    ("konnnichiha", "こんにちは"),
    ("konnichiha", "こんいちは"),       # as in Mozc: nn is ん, so the next n starts に only with a vowel
    ("kanji", "かんじ"),                 # n before a consonant
    ("kan'i", "かんい"),
    ("shinbun", "しんぶん"),             # trailing n resolved on flush
    ("xn", "ん"),
    ("gakkou", "がっこう"),
    ("matcha", "まっちゃ"),
    ("xtultuxtsu", "っっっ"),
    ("xalilyaxyoxwa", "ぁぃゃょゎ"),
    ("kyakyukyo", "きゃきゅきょ"),
    ("sixyashashi", "しゃしゃし"),
    ("tyatsacha", "ちゃつぁちゃ"),
    ("thit'idhid'yu", "てぃてぃでぃでゅ"),
    ("fafifufefo", "ふぁふぃふふぇふぉ"),
    ("vuvavo", "ゔゔぁゔぉ"),
    ("wowyiwye", "をゐゑ"),
    ("ra-menn", "らーめん"),
    ("zhzjzkzlz.z,z/z-z[z]", "←↓↑→…‥・〜『』"),
    ("[a]~/", "「あ」〜・"),
    ("20seiki", "20せいき"),
    ("a!b?c", "あ！ｂ？ｃ"),
    ("thx", "ｔｈｘ"),
])
def test_romaji_examples(keys, text):
    assert flushed(keys) == text


def test_punctuation_styles_and_widths():
    assert flushed("a,i.") == "あ、い。"
    assert flushed("a,i.", punctuation="，．") == "あ，い．"
    assert flushed("a,i.", punctuation=",.") == "あ,い."
    assert flushed("1!", digit_width="full", symbol_width="half") == "１!"
    assert flushed("1!@") == "1！＠"
    assert flushed("q", letter_width="half") == "q"
    with pytest.raises(ValueError):
        ComposerSettings(punctuation="xx")
    with pytest.raises(ValueError):
        ComposerSettings(digit_width="wide")


def test_scripts():
    assert flushed("kyouha", script=Script.KATAKANA) == "キョウハ"
    assert flushed("gakkou-", script=Script.HALF_KATAKANA) == "ｶﾞｯｺｳｰ"
    assert flushed("Tokyo 1", script=Script.FULL_ASCII) == "Ｔｏｋｙｏ\u3000１"
    assert flushed("Tokyo 1", script=Script.HALF_ASCII) == "Tokyo 1"
    c = typed("kan", script=Script.KATAKANA)
    c.flush()
    assert c.text() == "カン"


def test_pending_is_shown_and_resolved():
    c = typed("kak")
    assert (c.text(), c.caret(), c.pending) == ("かｋ", 2, "k")
    c = typed("ky")
    assert c.text() == "ｋｙ"
    assert resolved_text(c) == "ｋｙ" and c.pending == "ky"  # resolving a copy changes nothing
    c = typed("kan")
    assert resolved_text(c) == "かん" and c.text() == "かｎ"


def test_backspace_like_mozc():
    c = typed("kaky")
    assert c.backspace() and c.text() == "かｋ"
    assert c.backspace() and c.text() == "か"
    assert c.backspace() and c.text() == "" and c.is_empty
    assert not c.backspace()
    c = typed("kya")
    assert c.backspace() and c.text() == "き"
    assert c.keys() == "ki"  # the broken-up rule re-derives its keys
    c = typed("kantan")
    c.flush()
    c.backspace()
    assert c.text() == "かんた" and c.keys() == "kanta"


def test_cursor_editing():
    c = typed("aiueo")
    c.move(-2)
    assert c.caret() == 3
    c.insert("k")
    assert c.text() == "あいうｋえお" and c.caret() == 4
    c.insert("a")
    assert c.text() == "あいうかえお"
    c.move_to(0)
    assert c.delete() and c.text() == "いうかえお"
    c.move_to(99)
    assert c.caret() == 5 and not c.delete()
    c.move(-99)
    assert c.caret() == 0 and not c.backspace()


def test_insert_inside_a_multi_char_rule_rederives_keys():
    c = typed("kya")
    c.move(-1)
    c.insert("a")
    assert c.text() == "きあゃ"
    assert c.keys() == "kia" + TABLE.romaji_for("ゃ")


def test_keys_are_kept():
    c = typed("tokyo")
    assert c.text() == "ときょ" and c.keys() == "tokyo"
    c.script = Script.HALF_ASCII
    c.move(-1)
    c.insert("X")
    assert c.text() == "ときXょ" and c.keys() == "tokiX" + TABLE.romaji_for("ょ")


def test_table_loading_errors(tmp_path):
    with pytest.raises(TableError, match=":1:"):
        RomajiTable.from_tsv("onlyonecolumn\n")
    with pytest.raises(TableError, match="no rules"):
        RomajiTable.from_tsv("# just a comment\n")
    with pytest.raises(TableError, match="cannot read"):
        RomajiTable.load(tmp_path / "missing.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TableError):
        RomajiTable.load(bad)
    good = tmp_path / "good.tsv"
    good.write_text("ka\tカ\nkk\tッ\tk\n", encoding="utf-8")
    c = Composer(table=RomajiTable.load(good))
    for k in "kka":
        c.insert(k)
    assert c.text() == "ッカ" and c.keys() == "kka"


def test_looping_user_table_terminates():
    table = RomajiTable.from_tsv("a\t\tb\nb\t\ta\nab\tx\tab\n")
    c = Composer(table=table)
    for k in "abab":
        c.insert(k)
    c.flush()
    assert c.pending == ""


@given(st.text(alphabet=HIRAGANA, max_size=20))
def test_typing_canonical_romaji_gives_the_kana_back(kana):
    keys = TABLE.romaji_for(kana)
    assert keys is not None
    c = typed(keys)
    c.flush()
    assert c.text() == kana
    assert c.keys() == keys


KEYS = st.text(alphabet="aiueoknstyhmrwgzdbpfjvcqlx'-.,/[]~!?0123456789 AKZ@#", max_size=40)


@given(KEYS)
def test_random_keys_never_raise_and_keys_are_reproduced(keys):
    c = typed(keys)
    assert c.keys() == keys
    assert c.caret() == len(c.text())
    c.flush()
    assert c.keys() == keys and c.pending == ""


@settings(max_examples=200)
@given(KEYS, st.lists(st.sampled_from(["bs", "del", "left", "right", "home", "end", "flush"]), max_size=10),
       st.sampled_from(list(Script)))
def test_random_edits_keep_the_composer_consistent(keys, edits, script):
    c = Composer(script=script)
    for i, k in enumerate(keys):
        c.insert(k)
        if edits and i % 3 == 0:
            op = edits[i % len(edits)]
            {"bs": c.backspace, "del": c.delete, "left": lambda: c.move(-1), "right": lambda: c.move(1),
             "home": lambda: c.move_to(0), "end": lambda: c.move_to(10**6), "flush": c.flush}[op]()
        assert 0 <= c.cursor <= len(c.units)
        assert 0 <= c.caret() <= len(c.text())
        assert all(len(u.text) == 1 for u in c.units)


def test_remove_prefix():
    c = typed("kyouha")
    c.move(-2)
    c.remove_prefix(2)
    assert c.text() == "うは" and c.caret() == 2 and c.keys() == "uha"


def _state(c: Composer) -> tuple:
    return ([(u.text, u.keys, u.group) for u in c.units], c.cursor, c.pending, c.pending_keys, c.text())


@settings(max_examples=300)
@given(KEYS, st.sampled_from(list("aiueonktsyx-',")), st.integers(0, 5))
def test_settled_after_is_what_typing_the_key_settles_and_leaves_the_composer_alone(keys, key, back):
    c = typed(keys)
    c.move(-back)   # anywhere in the composition, not only at its end
    before = _state(c)
    predicted = c.settled_after(key)
    assert _state(c) == before
    c.insert(key)
    assert predicted == c.settled_reading()


def test_a_copy_numbers_its_new_groups_past_the_originals():
    c = typed("kya")   # one group of two units
    copy = c.copy()
    copy.insert("k")
    copy.insert("y")
    copy.insert("a")
    assert len({u.group for u in copy.units}) == 2 and c.text() == "きゃ"
