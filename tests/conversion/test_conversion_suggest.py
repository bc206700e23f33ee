"""Suggestions while composing: learned completions first, then dictionary predictive search."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.conversion.suggest import PREDICTIVE_READINGS, predictive_cost, suggestions
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


def _ranked_by_every_entry(reading: str, dictionary, limit: int) -> list[tuple[str, str]]:
    """The dictionary completions as ranked before cheapest_cost: every entry built, then sorted."""
    ranked = sorted((predictive_cost(dictionary.lookup(full)[0].cost, len(full) - len(reading)), full,
                     dictionary.lookup(full)[0].surface)
                    for full in dictionary.predictive(reading, PREDICTIVE_READINGS) if full != reading)
    out: list[tuple[str, str]] = []
    for _cost, full, surface in ranked:
        if surface not in {s for s, _r in out}:
            out.append((surface, full))
    return out[:limit]


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
@settings(max_examples=60, deadline=None)
@given(st.sampled_from("あいうかきくさしすたちつなにはひまみやよらりわ"), st.text("あいうえおかきくけこしたてとなのはまもらるん", min_size=1, max_size=3))
def test_ranking_by_the_cheapest_cost_alone_finds_what_building_every_entry_found(first, rest):
    reading = first + rest
    dictionary = _dictionary()
    for full in dictionary.predictive(reading, 20):
        assert dictionary.cheapest_cost(full) == dictionary.lookup(full)[0].cost
    assert dictionary.cheapest_cost(reading + "ゔゔゔ") is None
    found = [(c.surface, c.reading) for c in suggestions(reading, None, dictionary, limit=3)]
    assert found == _ranked_by_every_entry(reading, dictionary, 3)


_LOADED: list[SystemDictionary] = []


def _dictionary() -> SystemDictionary:
    if not _LOADED:
        _LOADED.append(SystemDictionary())
    return _LOADED[0]
