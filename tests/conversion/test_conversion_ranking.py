"""The fused score and ranking of whole-reading candidates."""

from dataclasses import replace

from hypothesis import given, settings, strategies as st

from karukan_engine.conversion.ranking import Evidence, fused_score, rank
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.conversion.settings import ConversionSettings, FusionWeights
from karukan_engine.core.types import Candidate

import pytest


def ev(surface, source="dictionary", cost=None, nll=None, learning=0.0):
    return Evidence(Candidate(surface, source=source), cost, nll, learning)


def test_model_evidence_can_overturn_the_dictionary_order():
    weights = FusionWeights(lattice=1.0, nll=1.0, learning=1.0, unaligned=5.0)
    items = [ev("公園に", cost=4000, nll=3.0), ev("講演に", cost=4400, nll=1.0, source="model")]
    assert [c.surface for c in rank(items, 5, weights)] == ["講演に", "公園に"]
    no_model = FusionWeights(lattice=1.0, nll=0.0, learning=1.0, unaligned=5.0)
    assert [c.surface for c in rank(items, 5, no_model)] == ["公園に", "講演に"]


def test_whole_surface_nll_does_not_favour_the_longer_spelling():
    # Same total log-probability, spread over 3 or 4 characters: the per-character mean prefers
    # the longer kana spelling, the whole-surface NLL sees a tie and keeps the dictionary order.
    items = [ev("今日は", cost=3000, nll=4.0 / 3), ev("きょうは", cost=3000, nll=1.0)]
    per_char = FusionWeights(lattice=0.0, nll=1.0, unaligned=0.0)
    total = FusionWeights(lattice=0.0, nll=0.0, nll_total=1.0, unaligned=0.0)
    assert rank(items, 4, per_char)[0].surface == "きょうは"
    assert rank(items, 4, total)[0].surface == "今日は"
    assert fused_score(items[0], 4, total) == pytest.approx(4.0)


@given(st.floats(0, 5), st.floats(0, 5), st.text("あいう今日", min_size=1, max_size=6))
@settings(max_examples=60)
def test_whole_surface_nll_is_the_mean_times_the_nfkc_length(nll, weight, surface):
    item = ev(surface, cost=0, nll=nll)
    base = FusionWeights(lattice=0.0, nll=0.0, unaligned=0.0)
    assert fused_score(item, 3, replace(base, nll_total=weight)) == pytest.approx(weight * nll * len(surface))
    assert replace(base, nll_total=weight).uses_model_score == (weight > 0)


def test_learning_lifts_a_candidate():
    weights = FusionWeights(learning=2.0)
    items = [ev("箸", cost=3000, nll=2.0), ev("橋", cost=3500, nll=2.0, learning=1.0, source="learning")]
    assert rank(items, 2, weights)[0].surface == "橋"


def test_unaligned_surfaces_pay_a_penalty():
    weights = FusionWeights(unaligned=10.0)
    items = [ev("xyz", source="model", nll=0.1), ev("今日", cost=1000, nll=1.0)]
    assert rank(items, 3, weights)[0].surface == "今日"


def test_variants_stay_last_and_duplicates_go():
    items = [ev("キョウ", source="variant"), ev("今日", cost=100), ev("今日", source="model", nll=0.5),
             ev("きょう", source="variant")]
    ranked = rank(items, 3, FusionWeights())
    assert [c.surface for c in ranked] == ["今日", "キョウ", "きょう"]


def test_settings_from_config_table():
    s = ConversionSettings.from_mapping({"live_budget_ms": 30, "weights": {"nll": 2.5}, "scheme": "verify"})
    assert s.live_budget_ms == 30 and s.weights.nll == 2.5 and s.scheme == "verify"
    assert s.weights.lattice == FusionWeights().lattice
    with pytest.raises(ValueError):
        ConversionSettings.from_mapping({"no_such_key": 1})
    with pytest.raises(ValueError):
        ConversionSettings.from_mapping({"weights": {"bogus": 1}})
    with pytest.raises(ValueError):
        ConversionSettings.from_mapping({"scheme": "magic"})
    with pytest.raises(ValueError):
        FusionWeights(nll=-1)


evidence = st.builds(
    ev,
    st.text("あいう今日", min_size=1, max_size=3),
    st.sampled_from(["dictionary", "model", "learning", "variant"]),
    st.one_of(st.none(), st.integers(0, 20000)),
    st.one_of(st.none(), st.floats(0, 10)),
    st.floats(0, 3),
)
weights = st.builds(FusionWeights, *(st.floats(0, 5) for _ in range(4)))


@given(st.lists(evidence, max_size=12), weights, st.integers(1, 20))
@settings(max_examples=200)
def test_ranking_is_a_deduplicated_permutation_sorted_by_score(items, w, n):
    ranked = rank(items, n, w)
    assert len({c.surface for c in ranked}) == len(ranked)
    assert {c.surface for c in ranked} == {it.candidate.surface for it in items}
    # Among non-variants, first occurrences come out in ascending score order.
    best = {}
    for it in items:
        if it.candidate.source != "variant":
            s = fused_score(it, n, w)
            best[it.candidate.surface] = min(best.get(it.candidate.surface, s), s)
    scores = [best[c.surface] for c in ranked if c.source != "variant" and c.surface in best]
    firsts = []
    seen = set()
    for it in sorted((it for it in items if it.candidate.source != "variant"),
                     key=lambda it: fused_score(it, n, w)):
        if it.candidate.surface not in seen:
            seen.add(it.candidate.surface)
            firsts.append(it.candidate.surface)
    assert [c.surface for c in ranked][: len(firsts)] == firsts
    assert scores == sorted(scores)


def test_dedup_keeps_first():
    assert [c.surface for c in unique_surfaces([Candidate("a"), Candidate("b"), Candidate("a"), Candidate("")])] == ["a", "b"]


def test_settings_from_the_config_file(tmp_path, caplog):
    path = tmp_path / "config.toml"
    path.write_text("[conversion]\nscheme = \"verify\"\n[conversion.weights]\nnll = 0.5\n", encoding="utf-8")
    s = ConversionSettings.from_config(path)
    assert s.scheme == "verify" and s.weights.nll == 0.5
    # A bad key or value falls back on its own, with a warning naming it (never stops the engine).
    path.write_text("[conversion]\nbeam = 3\nbeam_width = 3\nscheme = \"magic\"\nworkers = \"2\"\n",
                    encoding="utf-8")
    s = ConversionSettings.from_config(path)
    assert s.beam_width == 3 and s.scheme == "rerank" and s.workers == ConversionSettings().workers
    assert "beam:" in caplog.text and "scheme" in caplog.text and "workers" in caplog.text
    path.write_text("conversion = 3\n", encoding="utf-8")
    assert ConversionSettings.from_config(path) == ConversionSettings()


def test_fitted_weights_apply_only_when_none_are_configured():
    from karukan_engine.conversion.settings import FITTED_WEIGHTS

    default = ConversionSettings()
    assert default.for_model("karukan-bundled").weights == FITTED_WEIGHTS["karukan-bundled"]
    assert default.for_model("some-other-model") is default
    configured = ConversionSettings.from_mapping({"weights": {"nll": 3.0}})
    assert configured.for_model("karukan-bundled").weights == configured.weights


def test_the_space_budget_is_the_models_unless_one_is_configured():
    from karukan_engine.conversion.settings import SPACE_BUDGETS

    default = ConversionSettings()
    assert default.space_budget_ms == float("inf")                       # all the model work
    assert default.for_model("karukan-bundled").space_budget_ms == SPACE_BUDGETS["karukan-bundled"]
    assert default.for_model("jinen-v2-small-q5").space_budget_ms == float("inf")
    configured = ConversionSettings.from_mapping({"space_budget_ms": 300})
    assert configured.for_model("karukan-bundled").space_budget_ms == 300
    for bad in (0, -5):
        with pytest.raises(ValueError):
            ConversionSettings.from_mapping({"space_budget_ms": bad})


@given(st.lists(evidence, max_size=12), st.floats(0, 5), st.integers(1, 20))
@settings(max_examples=200)
def test_zero_model_weight_keeps_the_given_order(items, learning, n):
    """lattice = nll = unaligned = 0 (the model has no say): the pool's order stands, variants
    last, except that learned candidates may rise."""
    w = FusionWeights(lattice=0.0, nll=0.0, learning=learning, unaligned=0.0)
    unlearned = [replace(it, learning=0.0) for it in items]
    expected = unique_surfaces([it.candidate for it in unlearned if it.candidate.source != "variant"]
                     + [it.candidate for it in unlearned if it.candidate.source == "variant"])
    assert rank(unlearned, n, w) == expected


@given(st.lists(evidence, min_size=1, max_size=12), weights, st.integers(1, 20), st.data())
@settings(max_examples=200)
def test_a_lower_nll_never_moves_a_candidate_down(items, w, n, data):
    """Monotone in the model's NLL: making one candidate likelier never ranks it later."""
    items = [replace(it, candidate=Candidate(f"{i}", source=it.candidate.source)) for i, it in enumerate(items)]
    index = data.draw(st.integers(0, len(items) - 1))
    target = items[index]
    if target.nll is None or target.candidate.source == "variant":
        return
    better = list(items)
    better[index] = replace(target, nll=data.draw(st.floats(0, target.nll)))
    before = [c.surface for c in rank(items, n, w)].index(target.candidate.surface)
    after = [c.surface for c in rank(better, n, w)].index(target.candidate.surface)
    assert after <= before


def test_the_model_changes_the_first_candidate_only_where_it_is_confident():
    items = [ev("公園に", cost=4000, nll=3.0), ev("講演に", cost=4400, nll=0.01, source="model")]
    gated = FusionWeights(lattice=1.0, nll=1.0, learning=1.0, unaligned=5.0, confident_nll=0.05)
    assert rank(items, 5, gated)[0].surface == "講演に"                 # confident: it overrules
    unsure = [items[0], replace(items[1], nll=0.5)]
    assert rank(unsure, 5, FusionWeights(lattice=1.0, nll=10.0, confident_nll=0.05))[0].surface == "公園に"
    assert rank(unsure, 5, FusionWeights(lattice=1.0, nll=10.0))[0].surface == "講演に"   # ungated


def test_a_learned_first_candidate_is_not_held_back_by_the_gate():
    items = [ev("鏡は", cost=3000, nll=2.0), ev("今日は", cost=3200, nll=0.9, learning=2.0)]
    gated = FusionWeights(lattice=1.0, nll=0.5, learning=1.0, confident_nll=0.05)
    assert rank(items, 4, gated)[0].surface == "今日は"


def test_confident_nll_must_be_a_non_negative_number():
    with pytest.raises(ValueError):
        FusionWeights(confident_nll=-0.1)
    with pytest.raises(ValueError):
        FusionWeights(confident_nll=float("nan"))
    table = ConversionSettings.from_mapping({"weights": {"nll": 1.0, "confident_nll": 0.03}})
    assert table.weights.confident_nll == 0.03


@given(st.lists(evidence, max_size=12), weights, st.floats(0, 3), st.integers(1, 20))
@settings(max_examples=200)
def test_the_gated_first_is_a_confident_model_choice_or_the_order_without_the_model(items, w, gate, n):
    gated = replace(w, confident_nll=gate)
    ranked = rank(items, n, gated)
    if not any(it.candidate.source != "variant" for it in items):
        return
    with_model = rank(items, n, w)
    without_model = rank(items, n, replace(w, nll=0.0, nll_total=0.0))
    first = ranked[0].surface
    confident = {it.candidate.surface for it in items
                 if it.candidate.source != "variant" and it.nll is not None and it.nll <= gate}
    assert first == without_model[0].surface or (first == with_model[0].surface and first in confident)
    assert sorted(c.surface for c in ranked) == sorted(c.surface for c in with_model)


@given(st.lists(evidence, max_size=12), weights, st.integers(1, 20))
@settings(max_examples=100)
def test_a_gate_no_candidate_exceeds_is_no_gate(items, w, n):
    scored = [it if it.nll is not None else replace(it, nll=1.0) for it in items]
    assert rank(scored, n, replace(w, confident_nll=1e9)) == rank(scored, n, w)


def test_the_ngram_score_can_pick_the_common_spelling():
    # Same path cost and no model NLL: the n-gram's log P decides between homophones.
    items = [ev("機械を", cost=4000), replace(ev("機会を", cost=4000), lm=-3.0)]
    items[0] = replace(items[0], lm=-9.0)
    weights = FusionWeights(lattice=1.0, nll=0.0, ngram=0.1)
    assert rank(items, 4, weights)[0].surface == "機会を"
    assert rank(items, 4, replace(weights, ngram=0.0))[0].surface == "機械を"
    assert FusionWeights(ngram=0.1).uses_model_score


def test_a_near_tie_does_not_overrule_the_dictionary_first():
    items = [replace(ev("機械を", cost=4000), lm=-9.0), replace(ev("機会を", cost=4000), lm=-3.0)]
    weights = FusionWeights(lattice=1.0, nll=0.0, ngram=0.1)           # 機会を lower by 0.6
    assert rank(items, 4, replace(weights, margin=0.5))[0].surface == "機会を"
    assert [c.surface for c in rank(items, 4, replace(weights, margin=1.0))] == ["機械を", "機会を"]
    with pytest.raises(ValueError):
        FusionWeights(margin=-1.0)
    with pytest.raises(ValueError):
        FusionWeights(ngram=-0.1)
    with pytest.raises(ValueError):
        FusionWeights(ngram=float("nan"))
    table = ConversionSettings.from_mapping({"weights": {"ngram": 0.1, "margin": 0.5}})
    assert (table.weights.ngram, table.weights.margin) == (0.1, 0.5)


@given(st.lists(evidence, min_size=1, max_size=12), weights, st.floats(0, 3), st.integers(1, 20),
       st.lists(st.one_of(st.none(), st.floats(-30, 0)), min_size=12, max_size=12))
@settings(max_examples=200)
def test_the_margin_keeps_the_first_unless_another_leads_by_it(items, w, margin, n, lms):
    items = [replace(it, lm=lm) for it, lm in zip(items, lms)]
    w = replace(w, ngram=0.1)
    ranked = rank(items, n, replace(w, margin=margin))
    plain = rank(items, n, w)
    assert sorted(c.surface for c in ranked) == sorted(c.surface for c in plain)
    scored = [it for it in items if it.candidate.source != "variant"]
    if not scored:
        return
    first = ranked[0].surface
    if first != scored[0].candidate.surface:
        # It moved the dictionary's first down: the leader beats it by the margin at least.
        lead = min(fused_score(it, n, w) for it in scored if it.candidate.surface == first)
        assert fused_score(scored[0], n, w) - lead >= margin
        assert first == plain[0].surface


def test_the_base_order_stands_and_only_the_models_and_learnings_candidates_move():
    # The base judged 会派 over 会は with its language models; their raw path costs say otherwise.
    items = [ev("会派", cost=5000), ev("会は", cost=3000), ev("回は", cost=4000),
             ev("かいは", cost=2000, source="model"), ev("貝は", cost=2500, learning=1.0, source="learning")]
    scored = FusionWeights(lattice=1.0, nll=0.0, learning=1.0, unaligned=5.0)
    assert [c.surface for c in rank(items, 3, scored)] == ["貝は", "かいは", "会は", "回は", "会派"]
    kept = replace(scored, keep_base_order=True)
    assert [c.surface for c in rank(items, 3, kept)] == ["貝は", "かいは", "会派", "会は", "回は"]


@given(st.lists(evidence, max_size=12), weights, st.integers(1, 20), st.booleans())
@settings(max_examples=200)
def test_with_the_base_order_kept_the_base_candidates_come_out_in_their_given_order(items, w, n, margin):
    items = [replace(it, candidate=Candidate(f"{i}", source=it.candidate.source)) for i, it in enumerate(items)]
    w = replace(w, keep_base_order=True, margin=1.0 if margin else 0.0)
    ranked = rank(items, n, w)
    base = [it.candidate for it in items if it.candidate.source not in ("model", "learning", "variant")]
    assert [c for c in ranked if c in base] == base
    assert sorted(c.surface for c in ranked) == sorted(it.candidate.surface for it in items)
    # the slots stay where the score put them: the same sources in the same places as without
    unkept = rank(items, n, replace(w, keep_base_order=False))
    moved = ("model", "learning")
    assert [c.source in moved for c in ranked] == [c.source in moved for c in unkept]
    assert [c for c in ranked if c.source in moved] == [c for c in unkept if c.source in moved]


def test_keep_base_order_is_a_switch_in_the_config():
    s = ConversionSettings.from_mapping({"weights": {"keep_base_order": True, "nll": 1}})
    assert s.weights.keep_base_order is True and s.weights.nll == 1.0
    with pytest.raises(ValueError):
        ConversionSettings.from_mapping({"weights": {"keep_base_order": 1}})


@given(st.lists(evidence, min_size=1, max_size=12), weights, st.integers(1, 20))
@settings(max_examples=200)
def test_an_infinite_margin_keeps_the_pools_first_candidate_first(items, w, n):
    ranked = rank(items, n, replace(w, margin=float("inf")))
    firsts = [it.candidate for it in items if it.candidate.source != "variant"]
    if firsts:
        assert ranked[0] == firsts[0]
