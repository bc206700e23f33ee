"""Corpus extraction, reading alignment, pair cutting, vocabulary and training mechanics."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.training.corpus import (
    corpus_sentences, is_held_out_group, is_japanese_sentence, markup_blocks, roff_blocks,
    sentences_of_block, units_of_line,
)
from karukan_engine.training.pairs import (
    EVAL_SURFACE_CHARS, MAX_CONTEXT_CHARS, Pair, evaluation_pair, is_dev_sentence, readable_runs,
    sentence_pairs, span_pair,
)
from karukan_engine.training.readings import align, gold_chunks
from karukan_engine.training.sources import SOURCES, Source, corpus_parts
from karukan_engine.training.vocab import BYTE_BASE, CharTokenizer, build_vocabulary, write_tokenizer_json

# --- corpus -------------------------------------------------------------------------------


def test_markup_blocks_split_headings_and_drop_code():
    html = ("<html><head><title>題</title><script>var x = '無視';</script></head><body>"
            "<h1>見出し</h1><p>本文です。<b>太字</b>も含む。</p><pre>コード</pre>"
            "<input id='search'><p>検索の後も読む。</p></body></html>")
    assert markup_blocks(html) == ["題", "見出し", "本文です。太字も含む。", "検索の後も読む。"]


def test_roff_keeps_inline_macros_in_the_paragraph():
    roff = ('.\\" comment line\n.SH 説明\n.I dir\nを掃除する。\n.PP\n'
            '\\fBls\\fR は\nファイルを表示する。\n')
    assert roff_blocks(roff) == ["説明", "dir を掃除する。", "ls は ファイルを表示する。"]


def test_sentences_join_japanese_lines_and_split_on_full_stops():
    block = "これは一行目で\n続きです。次の文！ ＡＢＣ"
    assert sentences_of_block(block) == ["これは一行目で続きです。", "次の文!", "ABC"]


def test_is_japanese_sentence():
    assert is_japanese_sentence("ファイルを削除します。")
    assert not is_japanese_sentence("ls -l /usr/bin")
    assert not is_japanese_sentence("短い")
    assert not is_japanese_sentence("dd if=/dev/zero of=ファイル bs=1M")


def test_units_keep_short_lines_whole_and_split_long_ones():
    assert units_of_line("そうですね！明日も晴れるといいな") == ["そうですね!明日も晴れるといいな"]
    long = "今日は晴れです。" * 15
    assert units_of_line(long) == ["今日は晴れです。"] * 15
    assert units_of_line("   ") == []


def _write_xz(path, text):
    import lzma

    with lzma.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)


def test_dialogues_are_held_out_whole_and_stably(tmp_path):
    dialogues = [[f"こんにちは、{i}番です", f"よろしくお願いします{i}"] for i in range(400)]
    _write_xz(tmp_path / "chat.txt.xz", "\n\n".join("\n".join(d) for d in dialogues) + "\n")
    source = Source("chat", "lines", "test", file="chat.txt.xz", heldout_percent=10)
    parts = corpus_sentences(source, tmp_path)
    assert set(parts) == {"chat", "chat_heldout"}
    held = [d for d in dialogues if is_held_out_group(d, 10)]
    assert 15 < len(held) < 70  # about 10 %
    assert parts["chat_heldout"] == [line for d in held for line in d]
    assert not set(parts["chat"]) & set(parts["chat_heldout"])
    assert corpus_sentences(source, tmp_path) == parts


def test_sampled_source_keeps_every_kth_paragraph_and_drops_historical_kana(tmp_path):
    lines = [f"第{i}段落の文章です。" for i in range(30)] + ["さうであらう。", "ゐなかの道です。"]
    _write_xz(tmp_path / "aozora.txt.xz", "\n".join(lines) + "\n")
    source = Source("aozora", "lines", "test", file="aozora.txt.xz", every=3)
    kept = corpus_sentences(source, tmp_path)["aozora"]
    assert kept == [f"第{i}段落の文章です。" for i in range(2, 30, 3)]
    every_one = corpus_sentences(Source("aozora", "lines", "t", file="aozora.txt.xz"), tmp_path)
    assert "さうであらう。" not in every_one["aozora"] and "ゐなかの道です。" not in every_one["aozora"]


def test_sources_name_a_licence_and_hold_out_the_evaluation_splits():
    assert all(source.licence for source in SOURCES)
    splits = {part: split for _, part, split in corpus_parts()}
    assert splits["wac_test"] == splits["wac_dev"] == splits["chat_heldout"] == "heldout"
    assert splits["chat"] == splits["wac_train"] == "train"
    # Training text must be combinable with CC BY-SA 4.0 (no GPL/GFDL documentation).
    assert all("GFDL" not in s.licence and "GPL" not in s.licence for s in SOURCES if s.split == "train")


# --- readings -----------------------------------------------------------------------------


def test_align_keeps_agreed_readings_and_drops_disagreements():
    sentence = "今日は一人"
    first = [(0, 2, "キョウ"), (2, 3, "ハ"), (3, 5, "ヒトリ")]
    second = [(0, 1, "コン"), (1, 2, "ニチ"), (2, 3, "ハ"), (3, 5, "ヒトリ")]
    assert align(sentence, first, second) == [("今日", None), ("は", "ハ"), ("一人", "ヒトリ")]


def test_align_unknown_readings_stay_unknown():
    sentence = "ls は"
    first = [(0, 2, None), (3, 4, "ハ")]
    second = [(0, 2, "エルエス"), (2, 3, None), (3, 4, "ハ")]
    assert align(sentence, first, second) == [("ls", None), (" ", None), ("は", "ハ")]


@st.composite
def tokenizations(draw):
    """A sentence and two random segmentations of it with random (sometimes unknown) readings."""
    sentence = draw(st.text(alphabet="あいう漢字カナ 、。", min_size=1, max_size=20))

    def segmentation():
        cuts = sorted(draw(st.sets(st.integers(1, len(sentence) - 1), max_size=len(sentence)))
                      if len(sentence) > 1 else set())
        bounds = [0, *cuts, len(sentence)]
        return [(b, e, draw(st.sampled_from(["ア", "イ", None]))) for b, e in zip(bounds, bounds[1:])]

    return sentence, segmentation(), segmentation()


@given(tokenizations())
def test_align_chunks_cover_the_sentence(case):
    sentence, first, second = case
    chunks = align(sentence, first, second)
    assert "".join(surface for surface, _ in chunks) == sentence
    # A reading survives only where both analysers give the same known reading.
    offset = 0
    for surface, reading in chunks:
        end = offset + len(surface)
        if reading is not None:
            for tokens in (first, second):
                inside = [r for b, e, r in tokens if b >= offset and e <= end]
                assert None not in inside and "".join(inside) == reading
        offset = end


def test_real_analysers_agree_on_a_plain_sentence():
    pytest.importorskip("fugashi", reason="fugashi (the `train` extra) is not installed")
    pytest.importorskip("sudachipy", reason="sudachipy (the `train` extra) is not installed")
    from karukan_engine.training.readings import Annotator

    chunks = Annotator().chunks("会議の資料を送ります。")
    assert "".join(s for s, _ in chunks) == "会議の資料を送ります。"
    assert "".join(r for _, r in chunks) == "カイギノシリョウヲオクリマス。"
    digits = Annotator().chunks("2023年に送る")
    assert digits[0] == ("2023", None)


def test_gold_chunks_use_the_human_reading_as_katakana():
    words = [["足利", "あしかが", "名詞"], ["　", "　", "特殊"], ["は", "は", "助詞"], ["、", "、", "特殊"],
             ["２０", "２０", "名詞"], ["ＡＢ", "えーびー", "名詞"]]
    assert gold_chunks(words) == [("足利", "アシカガ"), (" ", None), ("は", "ハ"), ("、", "、"),
                                  ("20", None), ("AB", None)]


def test_agreement_compares_readings_on_gold_boundaries():
    from karukan_engine.training.readings import measure_agreement

    class FixedAnnotator:
        def chunks(self, sentence):
            # One chunk matches gold, one disagrees, one has no reading.
            return [("今日", "コンニチ"), ("は", "ハ"), ("晴れ", None)]

    words = [["今日", "きょう", "名詞"], ["は", "は", "助詞"], ["晴れ", "はれ", "名詞"]]
    report = measure_agreement([words], FixedAnnotator())
    assert report["chunks_compared"] == 2
    assert report["precision"] == 0.5
    assert report["coverage"] == 3 / 5


# --- pairs --------------------------------------------------------------------------------

_CHUNKS = [["今日", "キョウ"], ["は", "ハ"], [" ", None], ["ls", None], ["を", "ヲ"],
           ["使い", "ツカイ"], ["ます", "マス"], ["。", "。"]]


def test_readable_runs():
    assert readable_runs(_CHUNKS) == [(0, 2), (4, 8)]
    assert readable_runs([["a", None]]) == []


def test_span_pair_takes_the_text_before_as_context():
    pair = span_pair(_CHUNKS, 4, 7, MAX_CONTEXT_CHARS, "s")
    assert pair == Pair("今日は ls", "ヲツカイマス", "を使います", "s")
    assert span_pair(_CHUNKS, 4, 7, 0, "s").context == ""


chunk_lists = st.lists(
    st.tuples(st.sampled_from(["漢字", "かな", "カナ", "。", " ", "x1", "語"]), st.booleans()).map(
        lambda t: [t[0], (t[0] if t[1] and t[0] not in (" ", "x1") else None)]),
    min_size=1, max_size=30)


@given(chunk_lists, st.integers(0, 2**32 - 1))
@settings(max_examples=60)
def test_sentence_pairs_are_readable_substrings_with_true_context(chunks, seed):
    text = "".join(c[0] for c in chunks)
    for pair in sentence_pairs(chunks, random.Random(seed), "s", 4):
        start = text.find(pair.context + pair.surface) if pair.context else text.find(pair.surface)
        assert start >= 0
        assert len(pair.context) <= MAX_CONTEXT_CHARS
        assert pair.surface and pair.reading
        assert "x1" not in pair.surface and " " not in pair.surface


@given(chunk_lists, st.integers(0, 2**32 - 1))
@settings(max_examples=60)
def test_evaluation_pair_is_a_kanji_span_with_its_full_left_context(chunks, seed):
    text = "".join(c[0] for c in chunks)
    pair = evaluation_pair(chunks, random.Random(seed), "s")
    if pair is None:
        return
    assert EVAL_SURFACE_CHARS[0] <= len(pair.surface) <= EVAL_SURFACE_CHARS[1]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in pair.surface)
    start = text.find(pair.context + pair.surface)
    assert start >= 0 and len(pair.context) <= MAX_CONTEXT_CHARS
    assert evaluation_pair(chunks, random.Random(seed), "s") == pair


def test_dev_split_is_stable_and_small():
    sentences = [f"文{i}です。" for i in range(5000)]
    chosen = [s for s in sentences if is_dev_sentence(s)]
    assert chosen == [s for s in sentences if is_dev_sentence(s)]
    assert 40 < len(chosen) < 170  # about 2 %


# --- vocabulary ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    tokens = build_vocabulary(["会議の資料を送ります", "会議", "資料", "今日は晴れ"], size=600)
    path = write_tokenizer_json(tmp_path_factory.mktemp("tok") / "tokenizer.json", tokens)
    return tokens, path


def test_vocabulary_layout(vocab):
    tokens, _ = vocab
    assert tokens[:7] == ["<unk>", "<s>", "</s>", "<pad>", "\uee02", "\uee00", "\uee01"]
    assert tokens[BYTE_BASE] == "<0x00>" and tokens[BYTE_BASE + 255] == "<0xFF>"
    assert "会" in tokens and "議" in tokens
    assert "晴" not in tokens  # seen once: below min_count
    assert len(tokens) == len(set(tokens))


@given(st.text(alphabet=st.sampled_from(list("会議の資料を送ります晴鬱 ab。アイ\U0001f600")), max_size=20))
@settings(max_examples=80)
def test_tokenizer_json_encodes_like_the_training_encoder(vocab, text):
    from tokenizers import Tokenizer

    tokens, path = vocab
    hf = Tokenizer.from_file(str(path))
    assert hf.encode(text, add_special_tokens=False).ids == CharTokenizer(tokens).encode(text)
    assert hf.decode(CharTokenizer(tokens).encode(text), skip_special_tokens=False) == text


# --- training mechanics -------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch", reason="torch (the `train` extra) is not installed")


def test_collate_predicts_only_the_surface_and_eos():
    _torch()
    from karukan_engine.training.data import IGNORE, collate, encode_pair
    from karukan_engine.training.vocab import EOS_ID

    tokenizer = CharTokenizer(build_vocabulary(["会議を"], 400, min_count=1))
    first = encode_pair(tokenizer, Pair("", "カイギ", "会議", "s"), 64)
    short = encode_pair(tokenizer, Pair("", "ア", "あ", "s"), 64)
    inputs, targets, weights = collate([first, short])
    ids, prompt_len = first.ids, first.prompt_len
    assert targets[0].tolist()[prompt_len - 1 :] == tokenizer.encode("会議") + [EOS_ID]
    assert set(targets[0].tolist()[: prompt_len - 1]) == {IGNORE}
    assert inputs[0].tolist() == ids[:-1]
    assert targets[1].tolist()[len(short.ids) - 1 :] == [IGNORE] * (len(ids) - len(short.ids))
    assert ((targets != IGNORE) == (weights > 0)).all()
    assert encode_pair(tokenizer, Pair("", "カイギ" * 30, "会議", "s"), 64) is None


def test_collate_with_context_weight_also_predicts_the_context():
    _torch()
    from karukan_engine.training.data import IGNORE, collate, encode_pair
    from karukan_engine.training.vocab import EOS_ID

    tokenizer = CharTokenizer(build_vocabulary(["今日の会議を"], 700, min_count=1))
    example = encode_pair(tokenizer, Pair("今日の", "カイギ", "会議", "s"), 64)
    assert example.context_len == 3
    inputs, targets, weights = collate([example], context_weight=0.5)
    row, row_weights = targets[0].tolist(), weights[0].tolist()
    assert row[:3] == tokenizer.encode("今日の")          # the context mark predicts 今, …
    assert row_weights[:3] == [0.5] * 3
    assert set(row[3 : example.prompt_len - 1]) == {IGNORE}  # no loss on the reading
    assert row[example.prompt_len - 1 :] == tokenizer.encode("会議") + [EOS_ID]
    assert row_weights[example.prompt_len - 1 :] == [1.0] * 3


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    _torch()
    from karukan_engine.training.train import TrainOptions, learning_rate

    options = TrainOptions(minutes=60, warmup_minutes=2, lr=1e-3)
    rates = [learning_rate(options, m * 60) for m in (0.5, 1, 2, 10, 30, 59, 60, 90)]
    assert rates[0] < rates[1] < rates[2] == pytest.approx(1e-3)
    assert rates[2] > rates[3] > rates[4] > rates[5]
    assert rates[6] == pytest.approx(1e-4) and rates[7] == pytest.approx(1e-4)


def test_training_resumes_from_its_checkpoint(tmp_path):
    torch = _torch()
    from karukan_engine.training.train import TrainOptions, train

    pairs = [Pair("", "カイギ", "会議", "s"), Pair("今日の", "シリョウ", "資料", "s")] * 20
    options = TrainOptions(minutes=10, max_steps=3, n_embd=32, n_layer=1, n_head=2, n_ctx=32,
                           tokens_per_batch=64, warmup_minutes=0.0, threads=1)
    train(options, out_dir=tmp_path, train_pairs=pairs, dev_pairs=pairs[:4], log=lambda _: None)
    first = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert first["progress"]["step"] == 3
    options.max_steps = 5
    final = train(options, out_dir=tmp_path, train_pairs=pairs, dev_pairs=pairs[:4], log=lambda _: None)
    resumed = torch.load(final, weights_only=False)
    assert resumed["progress"]["step"] == 5
    assert resumed["progress"]["batch_index"] == first["progress"]["batch_index"] + 2
    assert resumed["tokens"] == first["tokens"]
    assert resumed["progress"]["elapsed"] > first["progress"]["elapsed"]
