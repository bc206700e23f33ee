"""The real-app run's measures (benchmarks/gtk_latency.py) read the window's timestamps right:
keys after which the preedit showed two texts, Return -> commit, Space -> the settled text."""

import sys
from pathlib import Path

from hypothesis import given, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from gtk_latency import (commit_latency, karukan_config, keys_with_two_texts, merged, round_order,  # noqa: E402
                         settled_text_latency, summarised)


def test_a_key_whose_preedit_changes_to_another_text_counts_once():
    timings = {"keys": [[ord("k"), 1.0], [ord("a"), 2.0], [ord("n"), 3.0], [0x20, 4.0]],
               "preedits": [["ｋ", 1.01], ["か", 2.01], ["蚊", 2.02], ["蚊", 2.03], ["かｎ", 3.01], ["かｎ", 3.02],
                            ["漢", 4.01]]}
    # k: one text; a: か then 蚊 (the repeat of 蚊 is not a third); n: one text, shown twice
    assert keys_with_two_texts(timings) == (3, 1)


def test_return_and_space_latencies():
    timings = {"keys": [[0xff0d, 10.0]], "preedits": [["", 10.002]], "texts": [["a", 9.0], ["会議", 10.003]]}
    assert abs(commit_latency(timings)[0] - 3.0) < 1e-6
    space = {"keys": [[ord("u"), 1.0], [0x20, 2.0]],
             "preedits": [["かいぎ", 2.001], ["開議", 2.004], ["会議", 2.010], ["会議", 2.2]]}
    # Space -> the first showing of the text it settles on (a late answer replaced the first)
    assert abs(settled_text_latency(space)[0] - 10.0) < 1e-6
    assert commit_latency({"keys": [[0xff0d, 1.0]], "preedits": [], "texts": [["x", 0.5]]}) == []


keys = st.lists(st.floats(0, 100), min_size=0, max_size=12).map(sorted)
preedits = st.lists(st.tuples(st.sampled_from(["か", "蚊", "かｎ", ""]), st.floats(0, 110)), max_size=30)


@given(keys, preedits)
def test_at_most_every_typed_key_flickers(key_times, changes):
    timings = {"keys": [[0x61, t] for t in key_times], "preedits": sorted(([x, t] for x, t in changes), key=lambda p: p[1])}
    typed, flickers = keys_with_two_texts(timings)
    assert typed == max(0, len(key_times) - 1) and 0 <= flickers <= typed
    # one text per key can never flicker
    same = {"keys": timings["keys"], "preedits": [["か", t] for _x, t in timings["preedits"]]}
    assert keys_with_two_texts(same)[1] == 0


@given(st.booleans(), st.booleans(), st.booleans())
def test_the_karukan_config_sets_what_the_options_turn_off(prepare, quick, suggest):
    from karukan_engine.config import Config

    text = karukan_config(prepare, quick, suggest)
    if prepare and quick and suggest:
        assert text is None
        return
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.toml"
        path.write_text(text, encoding="utf-8")
        config = Config.load(path)
    conversion = config.sections["conversion"]
    assert not config.problems
    assert (conversion["prepare_space"], conversion["quick_space"], config.suggest.enabled) == (prepare, quick, suggest)


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True), st.integers(1, 12))
def test_rounds_put_every_engine_in_every_place(engines, rounds):
    orders = [round_order(engines, r) for r in range(rounds)]
    assert all(sorted(order) == sorted(engines) for order in orders)
    if rounds >= len(engines):   # each engine has started a round and ended one
        assert {order[0] for order in orders} == set(engines) == {order[-1] for order in orders}


def test_rounds_pool_the_times_and_add_the_counts():
    one = {"typing": [1.0, 3.0], "typed_keys": 2, "burst_space": [5.0]}
    two = {"typing": [2.0], "typed_keys": 1, "burst_space": []}
    pooled = summarised(merged(merged(None, one), two))
    assert pooled["typing"]["n"] == 3 and pooled["typing"]["p50_ms"] == 2.0
    assert pooled["typed_keys"] == 3 and pooled["burst_space"]["n"] == 1
