"""Suggestions while composing: learned completions first, then dictionary predictive search."""

import pytest

from karukan_engine.conversion.suggest import predictive_cost, suggestions
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary


def test_learned_completions_come_first(tmp_path):
    learning = LearningStore(tmp_path / "learning.json")
    learning.record("かるかんです", "Karukanです")
    learning.record("かるい", "軽い")
    found = suggestions("かる", learning, None)
    assert {c.surface for c in found} == {"Karukanです", "軽い"}
    assert all(c.source == "learning" for c in found)
    assert suggestions("き", learning, None) == []


def test_fewer_remaining_characters_rank_first():
    assert predictive_cost(1000, 1) < predictive_cost(1000, 4)
    assert predictive_cost(1000, 2) < predictive_cost(3000, 2)


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_dictionary_predictive_search(tmp_path):
    dictionary = SystemDictionary()
    learning = LearningStore(tmp_path / "learning.json")
    learning.record("ありがとうございます", "有難うございます")
    found = suggestions("ありがと", learning, dictionary, limit=4)
    assert found[0].surface == "有難うございます" and found[0].source == "learning"
    assert [c.source for c in found[1:]] == ["dictionary"] * (len(found) - 1)
    assert len(found) >= 2 and len({c.surface for c in found}) == len(found)
    assert suggestions("あ", None, dictionary) == []   # dictionary completions need two characters
