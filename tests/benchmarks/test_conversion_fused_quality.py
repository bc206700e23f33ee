"""tools/fusion_fit.py and benchmarks/fused_quality.py: the paired statistics, the significance guard
of the weight fit, and an end-to-end run on the real dictionary with a tiny real model."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.conversion.ranking import Evidence
from karukan_engine.conversion.settings import FusionWeights
from karukan_engine.core.types import Candidate
from karukan_engine.evaluation.metrics import EvalItem
from tools import fusion_fit

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "fused_quality.py"


def load_script():
    spec = importlib.util.spec_from_file_location("fused_quality", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fq = load_script()


def test_sign_test_known_values():
    assert fusion_fit.sign_test(5, 0, two_sided=False) == pytest.approx(1 / 32)
    assert fusion_fit.sign_test(5, 0) == pytest.approx(2 / 32)
    assert fusion_fit.sign_test(0, 0) == 1.0
    assert fusion_fit.sign_test(3, 3) == 1.0


@given(st.integers(0, 60), st.integers(0, 60))
def test_sign_test_is_a_symmetric_probability(wins, losses):
    p = fusion_fit.sign_test(wins, losses)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(fusion_fit.sign_test(losses, wins))
    # One more win among as many discordant pairs is never less significant.
    if losses:
        assert fusion_fit.sign_test(wins + 1, losses - 1, two_sided=False) <= fusion_fit.sign_test(wins, losses, two_sided=False)


@given(st.integers(1, 2000), st.floats(0, 1))
def test_wilson_interval_holds_the_proportion_and_narrows_with_n(n, share):
    k = round(share * n)
    lo, hi = fq.wilson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    lo4, hi4 = fq.wilson(4 * k, 4 * n)
    assert hi4 - lo4 < hi - lo


def ev(surface, cost, nll, source="dictionary"):
    return Evidence(Candidate(surface, source=source), cost, nll)


def items_where_the_model_fixes(fixes: int, breaks: int, ties: int):
    """Rows whose gold the model (low NLL) gets and the dictionary (low cost) misses, and back."""
    items, evidence, dictionary = [], [], []
    for i in range(fixes + breaks + ties):
        kind = "fix" if i < fixes else "break" if i < fixes + breaks else "tie"
        gold = {"fix": "model", "break": "dict", "tie": "dict"}[kind]
        pool = [ev("dict", 1000, 3.0), ev("model", 3000, 0.5 if kind != "tie" else 4.0, "model")]
        items.append(EvalItem("よみ", (gold,)))
        evidence.append(pool)
        dictionary.append(["dict", "model"])
    return items, evidence, dictionary


def test_the_fit_gives_the_model_a_say_only_when_it_wins_significantly():
    items, evidence, dictionary = items_where_the_model_fixes(fixes=12, breaks=1, ties=20)
    chosen = fusion_fit.fit(items, evidence, dictionary)
    assert chosen["significant"] and chosen["weights"].uses_model_score
    assert (chosen["fit_wins"], chosen["fit_losses"]) == (12, 1)
    # A small edge on the fit rows is noise, not a reason to let the model reorder.
    items, evidence, dictionary = items_where_the_model_fixes(fixes=4, breaks=2, ties=20)
    chosen = fusion_fit.fit(items, evidence, dictionary)
    assert not chosen["significant"] and chosen["weights"] == fusion_fit.NO_MODEL_SAY
    assert chosen["best_grid_point"]["nll"] > 0 or chosen["best_grid_point"]["nll_total"] > 0


def test_paired_counts_only_discordant_items():
    items = [EvalItem("a", ("A",)), EvalItem("b", ("B",)), EvalItem("c", ("C",)), EvalItem("d", ("D",))]
    ours = [["A"], ["x"], ["C"], ["y"]]
    theirs = [["x"], ["B"], ["C"], ["z"]]
    assert fusion_fit.paired(items, ours, theirs) == fusion_fit.Paired(1, 1)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["a", "b", "c", None]),
                          st.sampled_from(["a", "b", "c", None])), max_size=20))
@settings(max_examples=100)
def test_the_changed_rows_are_the_paired_wins_and_losses(rows):
    items = [EvalItem(f"よみ{i}", (gold,), context="前の文" * 10) for i, (gold, _, _) in enumerate(rows)]
    ours = fq.Run([[a] if a else [] for _, a, _ in rows], [0.0] * len(rows))
    theirs = fq.Run([[b] if b else [] for _, _, b in rows], [0.0] * len(rows))
    changed = fq.changed_rows(items, ours, theirs)
    versus = fusion_fit.paired(items, ours.outputs, theirs.outputs)
    assert (len(changed["fixed"]), len(changed["broken"])) == (versus.wins, versus.losses)
    for row in changed["fixed"]:
        assert row["system"] == row["gold"] != row["dictionary"] and len(row["context"]) == 20
    for row in changed["broken"]:
        assert row["dictionary"] == row["gold"] != row["system"]


def test_held_out_sets_come_from_the_devsets_stage_with_the_docs_first(tmp_path, monkeypatch, capsys):
    heldout = tmp_path / "pairs" / "heldout"
    heldout.mkdir(parents=True)
    for name, reading, surface in (("chat_heldout", "ゲンキデス", "元気です"),
                                   ("docs_heldout", "セッテイヲヒラキマス", "設定を開きます")):
        row = {"context": "", "reading": reading, "surface": surface}
        (heldout / f"{name}.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path))
    sets = fq.work_sets(10)
    assert list(sets) == ["docs_heldout", "chat_heldout"]
    assert sets["docs_heldout"][0] == EvalItem("せっていをひらきます", ("設定を開きます",), "")
    assert list(fq.work_sets(10, docs=False)) == ["chat_heldout"]
    (heldout / "docs_heldout.jsonl").unlink()
    capsys.readouterr()
    assert list(fq.work_sets(10)) == ["chat_heldout"]
    assert "docs_heldout skipped" in capsys.readouterr().out


def test_weights_from_the_command_line():
    w = fq.parse_weights("lattice=2,margin=0.5,keep_base_order=true,confident_nll=none")
    assert (w.lattice, w.margin, w.keep_base_order, w.confident_nll, w.learning) == (2.0, 0.5, True, None, 1.0)
    assert not fq.parse_weights("keep_base_order=false").keep_base_order


def test_no_model_say_ranks_like_the_dictionary():
    pool = [ev("b", 5000, 0.1), ev("a", 1000, 9.0), ev("c", None, 0.0, "model")]
    assert fusion_fit.ranked_surfaces(EvalItem("よみ", ("a",)), pool, fusion_fit.NO_MODEL_SAY) == ["b", "a", "c"]
    assert fusion_fit.ranked_surfaces(EvalItem("よみ", ("a",)), pool, FusionWeights(nll=1.0, lattice=0, unaligned=0))[0] == "c"


def run_script(tmp_path, script: Path, *extra: str) -> dict:
    """Run a benchmarks/ quality script on a four-item dev set with a tiny real model."""
    pytest.importorskip("llama_cpp")
    from karukan_engine.dictionary.system import DEFAULT_DIR

    if not (DEFAULT_DIR / "meta.json").is_file():
        pytest.skip("compiled dictionary not built")
    sys.path.insert(0, str(REPO / "tests" / "support"))
    from neural_support import tiny_model_dir

    dev = tmp_path / "dev.tsv"
    dev.write_text("きょうはいいてんき\t今日はいい天気\nかいぎ\t会議\nはし\t橋\nくるま\t車\n", encoding="utf-8")
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(script), "--model", str(tiny_model_dir("gpt2")), "--dev", str(dev),
           "--no-docs", "--limit", "4", "--threads", "1", "--json", str(out), *extra]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_script_runs_end_to_end(tmp_path):
    payload = run_script(tmp_path, SCRIPT, "--fit")
    rows = payload["results"]["dev.tsv"]
    assert set(rows) == {"dictionary", "model", "fused-rerank", "fused-verify", "fused-live"}
    assert rows["fused-rerank"]["items"] == 2
    assert {"wins_vs_dictionary", "losses_vs_dictionary", "sign_test_p", "acc1_nfkc_ci95"} <= set(rows["model"])
    assert payload["fitted"]["fit_items"] == 2


@pytest.mark.slow
def test_lm_scores_the_products_lattice_beside_the_dictionary(tmp_path):
    payload = run_script(tmp_path, SCRIPT, "--lm", "--systems", "fused-rerank", "fused-live",
                         "--pairs", str(tmp_path / "pairs.json"))
    rows = payload["results"]["dev.tsv"]
    assert set(rows) == {"dictionary", "lattice-lm", "fused-rerank", "fused-live"}
    assert rows["lattice-lm"]["items"] == 2 and "wins_vs_dictionary" in rows["lattice-lm"]
    pairs = json.loads((tmp_path / "pairs.json").read_text(encoding="utf-8"))["dev.tsv"]
    for system in ("lattice-lm", "fused-rerank"):
        assert len(pairs[system]["fixed"]) == rows[system]["wins_vs_dictionary"]
        assert len(pairs[system]["broken"]) == rows[system]["losses_vs_dictionary"]


def test_gathered_evidence_is_what_the_converter_ranks_whatever_the_weights(tmp_path):
    """The script fits weights on one gathered pool: the pool must not depend on the weights,
    and ranking it must give exactly FusedConverter.candidates."""
    pytest.importorskip("llama_cpp")
    from dataclasses import replace

    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.neural.model import load_model
    from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

    if not (DEFAULT_DIR / "meta.json").is_file():
        pytest.skip("compiled dictionary not built")
    system = SystemDictionary()
    base = LatticeConverter(system, None, None)
    with load_model(write_model_dir(tmp_path / "tiny", TinyModelSpec(seed=3, eos_scale=2.0))) as model:
        slot = ModelSlot(model, "tiny")
        pools = []
        for weights in (fusion_fit.NO_MODEL_SAY, FusionWeights(lattice=0.0, nll=1.0, unaligned=0.0), FusionWeights()):
            settings = replace(ConversionSettings(), weights=weights, space_budget_ms=float("inf"))
            fused = FusedConverter(base, [slot], settings, lexicon=system)
            items = [EvalItem("きょうはいいてんき", ("今日はいい天気",), "前"), EvalItem("かいぎ", ("会議",))]
            evidence = fusion_fit.gather_evidence(fused, slot, items)
            for item, found in zip(items, evidence):
                expected = [c.surface for c in fused.candidates(fusion_fit.request_of(item), fusion_fit.N_CANDIDATES)]
                assert fusion_fit.ranked_surfaces(item, found, weights) == expected
                assert any(e.candidate.source == "model" for e in found)
            pools.append([[e.candidate.surface for e in found] for found in evidence])
        assert pools[0] == pools[1] == pools[2]


def load_features_script():
    spec = importlib.util.spec_from_file_location("fusion_features", REPO / "benchmarks" / "fusion_features.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ff = load_features_script()


def test_features_are_relative_to_the_dictionarys_best():
    item = EvalItem("きしゃ", ("貴社",))
    pool = [ev("記者", 3000, 2.0), ev("貴社", 3600, 0.5), ev("キシャ", None, 1.0, "model"), ev("[全]キシャ", None, None, "variant")]
    row = ff.row_of(item, pool, greedy="貴社")
    assert row.features.shape == (3, len(ff.COLUMNS))
    assert list(row.features[0]) == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert row.features[1].tolist() == pytest.approx([0.2, -1.5, -3.0, 1.0, 0.0, 0.0])
    assert row.features[2][0] == ff.CAPPED_DC and row.features[2][4] == 1.0
    assert row.correct.tolist() == [False, True, False] and row.d_nll == 2.0


@st.composite
def rows(draw):
    """A pool: the dictionary's best (all-zero features) and 1-6 other candidates."""
    others = draw(st.lists(st.tuples(st.floats(0, 2), st.floats(-5, 5), st.floats(-20, 20), st.just(1.0),
                                     st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0])),
                           min_size=1, max_size=6))
    features = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]] + [list(x) for x in others])
    return ff.Row(features, np.zeros(len(features), bool), draw(st.floats(0, 6)))


@given(rows(), st.sampled_from(ff.GATES))
@settings(max_examples=200)
def test_the_gate_only_overrules_the_dictionary_within_its_margin(row, gate):
    """A candidate whose lattice margin is above the gate never replaces the dictionary's best,
    nor does one the model does not prefer by the required NLL gain, nor one it did not output."""
    top = ff.gate_top(row, gate)
    if top == 0:
        return
    max_dc, min_gain, min_d_nll = gate
    f = row.features[top]
    assert f[0] <= max_dc and -f[1] >= min_gain and f[5] == 0 and row.d_nll >= min_d_nll


def test_a_high_enough_switch_price_is_the_dictionary():
    row = ff.Row(np.array([[0, 0, 0, 0, 0, 1], [0.1, -2.0, -4.0, 1, 0, 0]], float), np.array([True, False]), 3.0)
    grid = ff.grid_of({"dc": (1.0,), "dnll": (1.0,), "switch": (0.0, 5.0)})
    assert [int(t) for t in ff.linear_tops([row], grid)[0]] == [1, 0]
    assert ff.versus_dictionary([row], [1]) == (0, 1)


@pytest.mark.slow
def test_the_feature_study_runs_end_to_end(tmp_path):
    payload = run_script(tmp_path, REPO / "benchmarks" / "fusion_features.py")
    assert payload["oracle"]["dev.tsv"]["rows"] == 2
    assert set(payload["families"]) == set(ff.FAMILIES) | {"gate"}
    for result in payload["families"].values():
        assert set(result["held_out"]["dev.tsv"]) == {"wins", "losses"}


def test_the_fit_never_buys_a_gain_on_one_set_with_losses_on_another():
    """20 chat rows the model fixes, 6 rows of another set it breaks: pooled, letting it rerank
    wins (+20 -6), but that set would be worse than the dictionary, so the fit keeps it out
    (here: it has no say at all, as no weighting tells the two kinds of rows apart)."""
    fixes, f_ev, f_dict = items_where_the_model_fixes(fixes=20, breaks=0, ties=0)
    breaks, b_ev, b_dict = items_where_the_model_fixes(fixes=0, breaks=6, ties=0)
    items, evidence, dictionary = fixes + breaks, f_ev + b_ev, f_dict + b_dict
    pooled = fusion_fit.fit(items, evidence, dictionary)
    assert pooled["weights"].uses_model_score and (pooled["fit_wins"], pooled["fit_losses"]) == (20, 6)
    per_set = fusion_fit.fit(items, evidence, dictionary, groups=["chat"] * 20 + ["mozc"] * 6)
    assert per_set["weights"] == fusion_fit.NO_MODEL_SAY
    assert (per_set["fit_wins"], per_set["fit_losses"]) == (0, 0)


def test_the_confidence_gate_lets_the_model_fix_where_it_is_sure_and_spares_the_rest():
    """The model fixes rows where it is sure (NLL 0.01 per character) and breaks rows where it
    guesses (0.5): only a gated weighting is never worse on either set, and the fit finds it."""
    items, evidence, dictionary = [], [], []
    for i in range(30):
        sure = i < 20
        gold = "model" if sure else "dict"
        items.append(EvalItem("よみ", (gold,)))
        evidence.append([ev("dict", 1000, 3.0), ev("model", 1200, 0.01 if sure else 0.5, "model")])
        dictionary.append(["dict", "model"])
    chosen = fusion_fit.fit(items, evidence, dictionary, groups=["chat"] * 20 + ["wac"] * 10)
    assert chosen["significant"] and (chosen["fit_wins"], chosen["fit_losses"]) == (20, 0)
    gate = chosen["weights"].confident_nll
    assert gate is not None and 0.01 <= gate < 0.5
