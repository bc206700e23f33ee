"""The fused converter hands saving and closing on to its base converter (learning survives)."""

import json

import pytest

from karukan_engine.conversion.fused import FusedConverter
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.converter import LatticeConverter

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    return tmp_path


def learned_file(data_home):
    found = list(data_home.rglob("learning.json"))
    assert len(found) == 1
    return found[0]


def test_close_flushes_the_base_learning(data_home):
    fused = FusedConverter(LatticeConverter.load_default())
    fused.record([("きしゃ", "帰社")])
    assert not list(data_home.rglob("learning.json"))   # debounced: nothing written yet
    fused.close()
    assert LearningStore(learned_file(data_home)).lookup("きしゃ") == ["帰社"]


def test_save_writes_pending_learning_and_keeps_the_converter_usable(data_home):
    fused = FusedConverter(LatticeConverter.load_default())
    fused.record([("きしゃ", "帰社")])
    assert fused.save()
    assert "帰社" in json.dumps(json.loads(learned_file(data_home).read_text(encoding="utf-8")),
                               ensure_ascii=False)
    fused.record([("きしゃ", "汽車")])
    fused.close()
    assert LearningStore(learned_file(data_home)).lookup("きしゃ")[0] == "汽車"
