"""The language models' training text and the per-register dev sets: held-out documents never
train, sources without blank lines are held out by runs of lines, `lm_every` samples, and the
devsets stage writes one evaluation pair per held-out sentence (real fugashi and SudachiPy)."""

from __future__ import annotations

import json
import lzma
from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from karukan_engine.training import ngram as ngram_stage
from karukan_engine.training.corpus import _groups, corpus_sentences, is_held_out_group
from karukan_engine.training.devsets import build_devsets, spread
from karukan_engine.training.lm_text import lm_sources, lm_text
from karukan_engine.training.sources import SOURCES

CHAT = next(s for s in SOURCES if s.name == "chat")


def write_xz(path, text: str) -> None:
    with lzma.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)


def held_out_dialogue(percent: int) -> list[str]:
    """A dialogue whose hash puts it in the held-out share (found by trying)."""
    for i in range(10_000):
        group = [f"禁じられた話の{i}番目です", "秘密にしておいてください"]
        if is_held_out_group(group, percent):
            return group
    raise AssertionError("no held-out dialogue found")


def chat_corpus(tmp_path) -> tuple:
    secret = held_out_dialogue(CHAT.heldout_percent)
    kept = ["こんにちは元気ですか", "はい元気です"]
    assert not is_held_out_group(kept, CHAT.heldout_percent)
    write_xz(tmp_path / CHAT.file, "\n".join(kept) + "\n\n" + "\n".join(secret) + "\n")
    return kept, secret


def test_training_text_never_reads_held_out_documents(tmp_path):
    kept, secret = chat_corpus(tmp_path)
    write_xz(tmp_path / "wac_train.jsonl.xz", json.dumps({"words": [["日本", "にほん", "名詞"], ["語", "ご", "名詞"]]},
                                                         ensure_ascii=False) + "\n")
    write_xz(tmp_path / "wac_test.jsonl.xz", json.dumps({"words": [["禁", "きん", "名詞"]]}, ensure_ascii=False) + "\n")
    text = dict(lm_text(tmp_path))
    # chat keeps every 2nd paragraph for the neural pairs, every paragraph for the n-gram
    assert text == {"chat": kept, "wac_train": ["日本語"]}
    model, stats, used = ngram_stage.build(tmp_path, max_chars=1000)
    assert used == {"chat": sum(map(len, kept)), "wac_train": 3}
    assert "禁" not in {chr(c) for c in model.chars} and "秘" not in {chr(c) for c in model.chars}
    assert stats.sentences == 3


def test_no_corpus_directory_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="--corpus"):
        list(lm_text(None))


def test_the_held_out_splits_and_docs_never_train():
    names = {s.name for s in lm_sources()}
    assert {"chat", "jaquad", "whitepaper", "wikinews", "asdc", "mpchat", "laws", "wac_train"} <= names
    assert not names & {"wac_dev", "wac_test", "gimp-help-ja", "gnome-user-docs-ja"}


def test_lm_every_keeps_every_kth_paragraph(tmp_path):
    write_xz(tmp_path / CHAT.file, "".join(f"これは{i}番目の文です\n" for i in range(10)))
    source = replace(CHAT, heldout_percent=0)
    assert corpus_sentences(source, tmp_path, every=3)[source.name] == [f"これは{i}番目の文です" for i in (2, 5, 8)]
    assert len(corpus_sentences(source, tmp_path, every=1)[source.name]) == 10


@given(st.lists(st.sampled_from(["あ", "い", ""]), max_size=30), st.integers(0, 4))
def test_groups_cover_every_line_once_in_order(lines, group_lines):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.txt.xz"
        write_xz(path, "".join(f"{line}\n" for line in lines))
        groups = list(_groups(path, group_lines))
    assert [line for group in groups for line in group] == [line for line in lines if line]
    assert all(group for group in groups)
    if group_lines:
        assert all(len(group) <= group_lines for group in groups)


def test_runs_of_lines_are_documents_where_a_file_has_no_blank_lines(tmp_path):
    write_xz(tmp_path / "f.txt.xz", "a\nb\nc\n\nd\n")
    assert list(_groups(tmp_path / "f.txt.xz", 2)) == [["a", "b"], ["c"], ["d"]]
    assert list(_groups(tmp_path / "f.txt.xz")) == [["a", "b", "c"], ["d"]]


@given(st.integers(0, 200), st.integers(1, 60))
def test_spread_takes_at_most_limit_evenly(n, limit):
    items = list(range(n))
    taken = spread(items, limit)
    assert len(taken) <= limit and taken == sorted(set(taken)) and set(taken) <= set(items)
    gaps = {b - a for a, b in zip(taken, taken[1:])}
    assert len(gaps) <= 1   # evenly: one step between neighbours
    assert len(taken) > limit // 2 or len(items) < limit
    if len(items) <= limit:
        assert taken == items


def test_devsets_hold_out_documents_with_their_readings(tmp_path, monkeypatch):
    pytest.importorskip("fugashi", reason="fugashi (the `train` extra) is not installed")
    pytest.importorskip("sudachipy", reason="sudachipy (the `train` extra) is not installed")
    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path / "work"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    kept, secret = chat_corpus(corpus)
    words = [["東京", "とうきょう", "名詞"], ["に", "に", "助詞"], ["行き", "いき", "動詞"], ["ます", "ます", "助動詞"]]
    write_xz(corpus / "wac_dev.jsonl.xz", json.dumps({"words": words}, ensure_ascii=False) + "\n")
    written = build_devsets(corpus, processes=1, docs=False)
    assert set(written) == {"chat_heldout", "wac_dev"}   # wac_test and the other sources are absent
    chat = [json.loads(line) for line in written["chat_heldout"].read_text(encoding="utf-8").splitlines()]
    assert chat and all(row["surface"] in "".join(secret) for row in chat)
    assert all(row["reading"] and row["source"] == "chat_heldout" for row in chat)
    wac = [json.loads(line) for line in written["wac_dev"].read_text(encoding="utf-8").splitlines()]
    assert wac and all(row["surface"] in "東京に行きます" for row in wac)
    # the gold readings, in katakana
    assert all(row["reading"] and all("\u30a0" <= ch <= "\u30ff" for ch in row["reading"]) for row in wac)


def test_devsets_hold_out_the_debian_documentation(tmp_path, monkeypatch):
    """The Debian help pages give their own dev set; the packages are served from a local tree
    here (a test never downloads), read and annotated as fetched ones are."""
    pytest.importorskip("fugashi", reason="fugashi (the `train` extra) is not installed")
    pytest.importorskip("sudachipy", reason="sudachipy (the `train` extra) is not installed")
    from karukan_engine.training import corpus as corpus_stage

    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path / "work"))
    trees = {"gimp-help-ja": ("usr/share/gimp/2.0/help/ja/filters/blur.html",
                              "<html><body><p>画像の境界をぼかすには次の手順を使います。</p></body></html>"),
             "gnome-user-docs": ("usr/share/help/ja/gnome-help/net.page",
                                 "<page><p>無線ネットワークに接続するには設定を開きます。</p></page>")}
    fetched = []

    def local_package(package, dest):
        fetched.append(package)
        path, text = trees[package]
        root = tmp_path / "packages" / package
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        return root

    monkeypatch.setattr(corpus_stage, "fetch_package", local_package)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    chat_corpus(corpus)
    written = build_devsets(corpus, processes=1)
    assert sorted(fetched) == ["gimp-help-ja", "gnome-user-docs"]
    docs = [json.loads(line) for line in written["docs_heldout"].read_text(encoding="utf-8").splitlines()]
    pages = "画像の境界をぼかすには次の手順を使います。無線ネットワークに接続するには設定を開きます。"
    assert docs and all(row["surface"] in pages and row["reading"] for row in docs)
    assert {row["source"] for row in docs} == {"docs_heldout"}
    # built once: a second run reads the cached packages and keeps the file
    assert build_devsets(corpus, processes=1)["docs_heldout"] == written["docs_heldout"]
    assert len(fetched) == 2


def test_devsets_without_the_debian_help_keep_the_other_sets(tmp_path, monkeypatch, capsys):
    pytest.importorskip("fugashi", reason="fugashi (the `train` extra) is not installed")
    pytest.importorskip("sudachipy", reason="sudachipy (the `train` extra) is not installed")
    import subprocess

    from karukan_engine.training import corpus as corpus_stage

    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path / "work"))

    def unreachable(package, dest):
        raise subprocess.CalledProcessError(100, ["apt-get", "download", package])

    monkeypatch.setattr(corpus_stage, "fetch_package", unreachable)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    chat_corpus(corpus)
    written = build_devsets(corpus, processes=1)
    assert set(written) == {"chat_heldout"} and written["chat_heldout"].is_file()
    assert "docs_heldout skipped" in capsys.readouterr().out
