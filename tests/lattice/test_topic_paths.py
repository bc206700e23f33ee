"""The topic vectors in the lattice converter (lattice/topic_paths.py): a context word further
back than the n-grams read picks the homophone it keeps company with, the left context is cut
into the word n-gram's words, and a missing or foreign topic file leaves the converter working."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.topic_paths import TopicContext
from karukan_engine.lattice.word_lm import WordLmWeights, WordScorer, _load_scorer
from karukan_engine.lm.kneser_ney import BOS, estimate, flatten
from karukan_engine.lm.topic_vectors import TopicVectors
from karukan_engine.lm.word_ngram import WordNgram

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")

WORDS = ["船\tふね", "映画\tえいが", "航海\tこうかい", "公開\tこうかい", "話\tはなし", "の\tの"]
# the two topics, one axis each: ships (船, 航海) and films (映画, 公開)
AXES = {"船": (1.0, 0.0), "航海": (1.0, 0.0), "映画": (0.0, 1.0), "公開": (0.0, 1.0)}
# the same last 14 characters: only the topic vectors read far enough back to tell them apart
SEA = "船の話をしましょう。それではまた明日にでも。"
FILM = "映画の話をしましょう。それではまた明日にでも。"


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("topics")
    ids = {word.split("\t")[0]: i for i, word in enumerate(WORDS, BOS + 2)}
    text = [["船", "の", "話"], ["映画", "の", "話"], ["航海"], ["公開"]] * 10
    model = estimate(*flatten([[ids[w] for w in s] for s in text]), len(WORDS) + BOS + 2, order=3)
    words_path = tmp / "words.npz"
    WordNgram.save(words_path, model, WORDS)
    words = WordNgram.load(words_path)
    embedding = np.zeros((len(words.words), 2))
    for surface, axis in AXES.items():
        embedding[ids[surface]] = axis
    kept = np.abs(embedding).sum(axis=1) > 0
    topics_path = tmp / "topics.npz"
    TopicVectors.save(topics_path, embedding, np.ones(2), np.zeros(2), kept, words.vocabulary_digest)
    return words_path, topics_path


def converter_with(system, files, topic: float) -> LatticeConverter:
    scorer = _load_scorer(*files, system)
    assert scorer.topics is not None
    return LatticeConverter(system, None, None, word_lm=lambda: scorer,
                            word_weights=WordLmWeights(weight=800.0, topic=topic, dictionary_margin=0.0))


def test_a_context_word_far_back_picks_its_homophone(system, files):
    converter = converter_with(system, files, topic=5000.0)
    assert converter.live(ConversionRequest("こうかい", left_context=SEA)) == "航海"
    # the same converter (its cache) with another topic further back
    assert converter.live(ConversionRequest("こうかい", left_context=FILM)) == "公開"
    assert converter.candidates(ConversionRequest("こうかい", left_context=SEA), 3)[0].surface == "航海"
    # without the term both contexts read alike to the n-grams
    plain = converter_with(system, files, topic=0.0)
    assert plain.live(ConversionRequest("こうかい", left_context=SEA)) == \
        plain.live(ConversionRequest("こうかい", left_context=FILM))


def test_the_path_s_own_words_are_company_too(system, files):
    converter = converter_with(system, files, topic=5000.0)
    assert "航海" in converter.live(ConversionRequest("ふねのこうかい"))
    assert "公開" in converter.live(ConversionRequest("えいがのこうかい"))


def test_the_left_context_is_cut_into_known_words_from_the_right(files):
    words = WordNgram.load(files[0])
    topics = TopicContext(TopicVectors.load(files[1]), words.surface_id)
    ship, film = (int(topics.vectors.rows_of([words.surface_id(w)])[0]) for w in ("船", "映画"))
    assert topics.rows("映画と船の話") == (film, ship)   # の and 話 are known but no content words
    assert topics.rows("") == () and topics.rows("xyz。") == ()


def test_missing_or_foreign_topic_files_leave_the_word_model_working(system, files, tmp_path, caplog):
    words_path, topics_path = files
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(topics_path.read_bytes().replace(b"digest", b"digesx"))   # a member lost
    for broken in (tmp_path / "missing.npz", damaged):
        with caplog.at_level(logging.WARNING):
            scorer = _load_scorer(words_path, broken, system)
        assert scorer.topics is None and "topic vectors unavailable" in caplog.text
        caplog.clear()
        converter = LatticeConverter(system, None, None, word_lm=lambda: scorer,
                                     word_weights=WordLmWeights(topic=5000.0))
        assert converter.live(ConversionRequest("こうかい", left_context=SEA))
    mismatched = tmp_path / "mismatched.npz"
    embedding = np.zeros((4, 2))
    TopicVectors.save(mismatched, embedding, np.ones(2), np.zeros(2), np.ones(4, bool), "0" * 16)
    assert _load_scorer(words_path, mismatched, system).topics is None
    assert isinstance(_load_scorer(words_path, topics_path, system), WordScorer)


def test_a_huge_context_is_read_only_as_far_back_as_the_topics_look(files):
    words = WordNgram.load(files[0])
    topics = TopicContext(TopicVectors.load(files[1]), words.surface_id)
    ship = int(topics.vectors.rows_of([words.surface_id("船")])[0])
    huge = "映画" * 500_000 + "あ" * 100 + "船"
    assert topics.rows(huge) == (ship,)     # 映画 lies further back than CONTEXT_CHARS
    assert topics._cached_rows.cache_info().currsize == 1
