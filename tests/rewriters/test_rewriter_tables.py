"""The build script compiles Mozc-format tables (tiny ones written here) into the format the
rewriters read; the committed file is that format and small; the choice memory survives a
restart and shrugs off a damaged file."""

from __future__ import annotations

from pathlib import Path

from karukan_engine.rewriters import tables
from karukan_engine.rewriters.choice_memory import MAX_ENTRIES, ChoiceMemory
from tools import build_rewriters

FILES = {
    "emoji/emoji_data.tsv": "# header\n1F408\t🐈\tどうぶつ ねこ\t\t絵文字\t猫\nE0.7\n1F431\t🐱\tねこ ぺっと\t\tネコ\t猫\n",
    "emoji/manual_emoji_data.tsv": "# manual\n1F97A\t🥺\tぴえん\t\t\t\n",
    "emoticon/emoticon.tsv": "\tkeys\tcategories\n(^o^)\tにこにこ わーい\tSMILE\n",
    "emoticon/categorized.tsv": "# value\n(•ө•)♡\tSMILE\tはーと\n",
    "symbol/symbol.tsv": "POS\tCHAR\tReading\tdescription\tadditional\tcategory\n"
                         "記号\t→\tやじるし みぎ ->\t矢印\t右\tSYMBOL\n記号\t←\tやじるし ひだり\t矢印\t左\tSYMBOL\n",
    "symbol/categorized.tsv": "# value\tcategory\tdescription\n☆\tGENERAL\tほし\n★\tGENERAL\tほし\n",
    "symbol/ordering_rule.txt": "# order\n#\n★\n☆\n",
    "single_kanji/single_kanji.tsv": "ねこ\t猫\nたか\t高髙\n",
    "single_kanji/variant_rule.txt": "# rules\n\n異体字\n# comment\n髙\t高\n\n",
}


def write_mozc(root: Path) -> Path:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_build_compiles_each_table(tmp_path):
    out = tmp_path / "tables.json.gz"
    assert build_rewriters.main(["--mozc-data", str(write_mozc(tmp_path / "data")), "--output", str(out)]) == 0
    built = tables.read(out)
    assert built.emoji["ねこ"] == ["🐱", "🐈"]            # the one named ネコ first
    assert built.emoji["ぴえん"] == ["🥺"]
    assert built.symbols["やじるし"] == [["→", "矢印（右）"], ["←", "矢印（左）"]] and "->" not in built.symbols
    assert built.symbols["ほし"] == [["★", ""], ["☆", ""]]     # ordering_rule.txt's order
    assert built.emoticons["かおもじ"] == ["(^o^)", "(•ө•)♡"] and built.emoticons["はーと"] == ["(•ө•)♡"]
    assert built.single_kanji["たか"] == "高髙" and built.kanji_notes["髙"] == "高の異体字"
    assert built.emoji_names          # names from the emoji package or from Unicode's
    again = tmp_path / "again.json.gz"
    build_rewriters.main(["--mozc-data", str(tmp_path / "data"), "--output", str(again)])
    assert again.read_bytes() == out.read_bytes()     # reproducible


def test_the_committed_tables_are_small_and_complete():
    assert tables.DEFAULT_PATH.stat().st_size < 2 << 20
    data = tables.read()
    assert "🐱" in data.emoji["ねこ"] and data.emoji_names["+1"] == "👍"
    assert [s for s, _ in data.symbols["やじるし"][:5]] == ["→", "←", "↑", "↓", "⇒"]
    assert [s for s, _ in data.symbols["かっこ"][:4]] == ["（）", "「」", "【】", "『』"]   # Mozc's display order
    assert (tables.DEFAULT_PATH.parent / "NOTICE.md").read_text(encoding="utf-8").count("0c8acf48331724da42f82ebf038cbe6dce25da42")


def test_a_damaged_table_file_is_refused(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    try:
        tables.read(bad)
    except (OSError, ValueError):
        pass
    else:
        raise AssertionError("read a damaged file")


def test_choice_memory_persists_is_bounded_and_survives_damage(tmp_path):
    path = tmp_path / "choices.json"
    memory = ChoiceMemory(path)
    memory.remember("きょう", "slash")
    assert ChoiceMemory(path).kind_for("きょう") == "slash"
    for i in range(MAX_ENTRIES + 5):
        memory.remember(f"よみ{i}", "era")
    fresh = ChoiceMemory(path)
    assert fresh.kind_for("きょう") is None and fresh.kind_for(f"よみ{MAX_ENTRIES + 4}") == "era"
    memory.remember("bad\x00", "slash")
    assert ChoiceMemory(path).kind_for("bad\x00") is None
    path.write_text("{not json", encoding="utf-8")
    assert ChoiceMemory(path).kind_for("きょう") is None
