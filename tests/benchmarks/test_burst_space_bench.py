"""benchmarks/burst_space_bench.py times each burst's keys and one Space per burst, through a
real Session and LiveService (the dictionary converter here), with and without the warm-up."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import burst_space_bench  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")


@pytest.mark.parametrize("warm", [True, False])
def test_each_burst_gives_its_keys_and_one_space(system, tmp_path, monkeypatch, warm):
    monkeypatch.setattr(burst_space_bench, "BURSTS", ["kaigino", "ame"])
    monkeypatch.setattr(burst_space_bench, "WARM_UP", "a")
    converter = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    warmed = []
    real = converter.convert
    monkeypatch.setattr(converter, "convert", lambda request: warmed.append(request.reading) or real(request))
    engine = burst_space_bench.attached(converter, warm=warm)
    try:
        times = burst_space_bench.measure(engine, rounds=2, gap_s=0.003, space_after_s=0.008)
    finally:
        engine.service.shutdown()
    assert len(times["typing"]) == 2 * len("kaigino" + "ame") and len(times["space"]) == 2 * 2
    assert all(t > 0 for t in times["typing"] + times["space"])
    # the warm-up converts what was typed so far between keys; without it only Space converts
    assert ("かいぎ" in warmed) == warm and "かいぎの" in warmed
