"""The fused converter on the real dictionary and a tiny real llama.cpp model."""

import time
from dataclasses import replace

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.chunking import chunk_left_context, split_chunks  # noqa: E402
from karukan_engine.conversion.factory import ConverterOptions, build_converter  # noqa: E402
from karukan_engine.conversion.fused import FusedConverter, build_fused_converter  # noqa: E402
from karukan_engine.conversion.fused.live_text import LIVE_NBEST  # noqa: E402
from karukan_engine.live.live_service import LiveService  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.scheduling.scheduler import Cancelled, JobContext, Priority  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from karukan_engine.core.types import ConversionRequest, check_segments  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.neural.background import LoadHandle  # noqa: E402
from karukan_engine.neural.model import load_model  # noqa: E402
from karukan_testing.tiny_models import TinyModelSpec, write_model_dir  # noqa: E402

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")

READINGS = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "3じにこうえんでまつ"]
# An unbounded Space budget: which model work runs must not depend on how loaded the machine is.
SETTINGS = ConversionSettings(chunk_chars=8, space_budget_ms=float("inf"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_model_dir(tmp_path_factory.mktemp("tiny"), TinyModelSpec(seed=3, eos_scale=2.0))


@pytest.fixture(scope="module")
def model(model_dir):
    m = load_model(model_dir)
    yield m
    m.close()


@pytest.fixture
def base(system, tmp_path):
    return LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))


@pytest.fixture
def fused(base, model, system):
    return FusedConverter(base, [ModelSlot(model, "tiny")], SETTINGS, lexicon=system)


def req(reading, context=""):
    return ConversionRequest(reading, context)


def test_without_a_model_it_is_the_dictionary(base, system):
    fused = FusedConverter(base, [], SETTINGS, lexicon=system)
    for reading in READINGS:
        assert fused.candidates(req(reading), 9) == base.candidates(req(reading), 9)
        assert fused.convert(req(reading)) == base.convert(req(reading))
        assert fused.live(req(reading)) == base.live(req(reading))


def test_a_model_that_fails_to_load_leaves_the_dictionary(base, system, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    slot = ModelSlot(LoadHandle(lambda: load_model(broken)), "broken")
    fused = FusedConverter(base, [slot], SETTINGS, lexicon=system)
    assert not fused.wait_for_model(30)
    assert fused.candidates(req(READINGS[0]), 5) == base.candidates(req(READINGS[0]), 5)
    assert fused.live_refined(req(READINGS[0])) is None


def expected_live(fused, model, reading, context=""):
    """What live conversion must be: the model per Japanese chunk, the dictionary elsewhere."""
    done = []
    for chunk in split_chunks(reading, SETTINGS.chunk_limits):
        lctx = chunk_left_context(context, done, SETTINGS.context_chars)
        if chunk.japanese:
            text = model.greedy(chunk.text, lctx, max_new=fused.shared.max_new_for(chunk.text)).text
            dictionary = fused.base.live(req(chunk.text, lctx))
            if not text or any(not ch.isprintable() or ch == "\ufffd" for ch in text):
                text = None
            text = fused.live_text.arbitrate(fused.slots[0], chunk.text, lctx, dictionary, text)
        else:
            text = fused.base.live(req(chunk.text, lctx))
        done.append(text)
    return "".join(done)


def test_live_refined_is_the_model_per_chunk_and_digits_bypass_it(fused, model):
    for reading in READINGS:
        assert fused.live_refined(req(reading, "前")) == expected_live(fused, model, reading, "前")


def test_live_text_is_the_models_only_where_the_fused_score_prefers_it(base, model, system):
    nll_only = replace(SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=1.0))
    fused = FusedConverter(base, [ModelSlot(model, "tiny")], nll_only, system)
    slot = fused.slots[0]
    for a, b in (("今日", "京"), ("京", "今日"), ("会議", "かいぎ")):
        reading = "きょう" if a != "会議" else "かいぎ"
        # The pool: the dictionary's text, the lattice's other spellings, the model's text.
        others = [c.surface for c in base.candidates(req(reading), LIVE_NBEST) if c.source != "variant"]
        pool = list(dict.fromkeys([a, *others, b]))
        assert len(pool) > 2
        nll = model.score_many(reading, "", pool)
        best = min(range(len(pool)), key=lambda i: (nll[i], i))
        assert fused.live_text.arbitrate(slot, reading, "", a, b) == pool[best]


def test_live_text_weighs_only_the_dictionary_and_model_text_without_a_model_score(base, model, system):
    no_score = replace(SETTINGS, weights=replace(SETTINGS.weights, lattice=1.0, unaligned=8.0, nll=0.0))
    fused = FusedConverter(base, [ModelSlot(model, "tiny")], no_score, system)
    slot = fused.slots[0]
    assert fused.live_text.arbitrate(slot, "きょう", "", "今日", None) == "今日"
    # 京 has a path in the dictionary but costs more than the dictionary's own text.
    assert fused.live_text.arbitrate(slot, "きょう", "", "今日", "京") == "今日"
    never = FusedConverter(base, [ModelSlot(model, "tiny")], replace(
        SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=0.0)), system)
    assert never.shared.model_never_wins() and never.live_refined(req("きょう")) is None
    assert never.live(req("きょう")) == base.live(req("きょう"))


def test_refined_chunks_are_cached_and_shown_by_the_quick_path(fused):
    reading = READINGS[1]
    refined = fused.live_refined(req(reading))
    hits = fused.cache.hits
    assert fused.live_quick(req(reading)) == refined   # no flip back to the dictionary text
    assert fused.cache.hits > hits
    # Typing on: finished chunks are not converted again.
    before = fused.cache.misses
    fused.live_refined(req(reading + "ね"))
    assert fused.cache.misses - before <= 2  # only the last chunk (model + dictionary tiers)


def test_learning_beats_the_model_in_live_conversion(fused):
    fused.live(req("きょう"))
    fused.live(req("かいぎ"))
    fused.record([("きょう", "京")])
    readings = {k.reading for k in fused.cache.keys()}
    assert "かいぎ" in readings and "きょう" not in readings   # only what learning changes goes
    assert fused.live(req("きょう")) == "京"


def test_a_learned_word_inside_a_chunk_does_not_freeze_its_live_text(fused, base):
    """Only a choice for exactly the chunk's reading beats the model: a path that holds a
    learned word is marked learned too, and once let every such chunk keep the dictionary's
    text (with a week's learning, nearly every chunk)."""
    fused.record([("ですね", "ですね")])
    top = base.candidates(req("いいてんきですね"), 1)[0]
    assert top.source == "learning" and top.surface.endswith("ですね")   # the path holds the learned word
    assert fused.live_text.learned_best("いいてんきですね", "") is None
    fused.record([("いいてんきですね", "いい天気ですね")])
    assert fused.live_text.learned_best("いいてんきですね", "") == "いい天気ですね"


def test_explicit_candidates_merge_model_and_dictionary(fused, model, base):
    reading = READINGS[0]
    got = fused.candidates(req(reading), 30)
    surfaces = [c.surface for c in got]
    assert len(set(surfaces)) == len(surfaces)
    assert base.candidates(req(reading), 1)[0].surface in surfaces
    assert any(c.source == "model" for c in got)
    sources = [c.source for c in got]
    assert "variant" not in sources or all(s == "variant" for s in sources[sources.index("variant"):])


def test_without_a_model_say_the_model_runs_only_when_its_candidates_can_show(base, model, system, monkeypatch):
    never = FusedConverter(base, [ModelSlot(model, "tiny")], replace(
        SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=0.0)), system)
    reading = "ぬ"   # the lattice writes it only two ways
    dictionary = [c for c in base.candidates(req(reading), 10) if c.source != "variant"]
    full = never.candidates(req(reading), 10)
    calls = []
    real = never.ranking.model_candidates
    monkeypatch.setattr(never.ranking, "model_candidates", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    # The dictionary's candidates fill the places asked for: the model cannot show there.
    assert never.candidates(req(reading), len(dictionary)) == full[:len(dictionary)] and not calls
    # More places than the dictionary fills: the model's candidates follow its, as before.
    assert never.candidates(req(reading), 10) == full and len(calls) == 1
    assert [c.surface for c in full[:len(dictionary)]] == [c.surface for c in dictionary]


def test_weights_decide_the_order(base, model, system):
    reading = READINGS[0]
    model_heavy = FusedConverter(base, [ModelSlot(model, "tiny")], replace(
        SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=1.0)), system)
    top = model_heavy.candidates(req(reading), 1)[0].surface
    pool = [c.surface for c in model_heavy.candidates(req(reading), 30) if c.source != "variant"]
    nlls = model.score_many(reading, "", pool)
    assert top == pool[min(range(len(pool)), key=lambda i: nlls[i])]


def test_convert_segments_spell_the_best_candidate(fused):
    for reading in READINGS:
        segments = fused.convert(req(reading))
        check_segments(reading, segments)
        best = fused.candidates(req(reading), 1)[0].surface
        assert "".join(s.best.surface for s in segments) == best


def test_the_dictionarys_own_best_keeps_its_segments_and_the_models_text_is_cut_again(fused, base, monkeypatch):
    from karukan_engine.core.types import Candidate, Source

    analysed = []
    real = base._analyse
    monkeypatch.setattr(base, "_analyse", lambda request: analysed.append(request.fixed_lengths) or real(request))
    reading = READINGS[1]
    own = base.convert(req(reading))
    best = Candidate("".join(s.best.surface for s in own), source=Source.DICTIONARY)
    analysed.clear()
    segments = fused.space.splitter.segments_for(req(reading), best)
    # live conversion's segmentation and lists, from the cached analysis: no search with cuts
    assert [(s.reading, s.best.surface) for s in segments] == [(s.reading, s.best.surface) for s in own]
    assert [list(s.candidates) for s in segments] == [list(s.candidates) for s in own]
    assert analysed == [()]
    # a text the dictionary did not put first: aligned, and the reading searched with its cuts
    other = next(c for c in base.candidates(req(reading), 9) if c.surface != best.surface and c.source != "variant")
    segments = fused.space.splitter.segments_for(req(reading), other)
    assert "".join(s.best.surface for s in segments) == other.surface
    assert any(fixed for fixed in analysed)


def test_segments_offer_the_other_candidates_cut_at_the_same_place(fused):
    from karukan_engine.conversion.fused.space_segments import surface_offsets

    offered = 0
    for reading in READINGS:
        ranked = fused.candidates(req(reading), fused.settings.num_candidates)
        segments = fused.convert(req(reading))
        starts = [0]
        for seg in segments:
            starts.append(starts[-1] + len(seg.reading))
        for other in [c for c in ranked[1:6] if c.source != "variant"]:
            cuts = surface_offsets(fused.shared.alignment(reading, other.surface))
            for seg, lo, hi in zip(segments, starts, starts[1:]):
                if lo in cuts and hi in cuts:
                    assert other.surface[cuts[lo]:cuts[hi]] in [c.surface for c in seg.candidates]
                    offered += 1
    assert offered > 0


def test_resized_segments_keep_the_users_boundaries(fused):
    segments = fused.convert(ConversionRequest(READINGS[0], fixed_lengths=(2,)))
    check_segments(READINGS[0], segments, (2,))


def test_deadline_fallback_keeps_the_dictionary_text(fused):
    request = req("とうきょうとにいく")
    stage = fused.live_text.greedy_stage(fused.slots[0])
    for _ in range(5):
        fused.timings.observe(stage, 1.0, units=1)   # the model looks far too slow
    tight = JobContext("s", 0, Priority.LIVE, deadline=time.monotonic() + 0.01)
    assert fused.live_refined(request, tight) is None
    assert fused.live_refined(request) is not None  # without a budget it still runs


def test_superseded_refinement_stops(fused):
    ctx = JobContext("s", 0, Priority.LIVE, deadline=None)
    ctx._cancel.set()
    assert fused.live_refined(req(READINGS[0]), ctx) is None


def test_a_key_superseded_during_the_model_call_leaves_the_decode_batch(base, model, system):
    slot = ModelSlot(model, "tiny")
    fused = FusedConverter(base, [slot], SETTINGS, lexicon=system)
    ctx = JobContext("s", 0, Priority.LIVE, deadline=None)
    real_greedy = slot.greedy

    def newer_key_arrives_then_greedy(*args, **kwargs):
        ctx._cancel.set()
        return real_greedy(*args, **kwargs)

    slot.greedy = newer_key_arrives_then_greedy
    with pytest.raises(Cancelled):
        fused.live_refined(req(READINGS[0]), ctx)
    assert slot.batching()[1] == 0  # the job left the queue before anything was decoded


def test_verify_scheme_returns_dictionary_paths(base, model, system):
    fused = FusedConverter(base, [ModelSlot(model, "tiny")], replace(SETTINGS, scheme="verify"), system)
    for reading in READINGS:
        top = fused.candidates(req(reading), 5)[0].surface
        assert fused.aligner.align(reading, top) is not None


def test_verify_keeps_a_draft_the_model_agrees_with(model, system):
    from karukan_engine.conversion.align import Aligner
    from karukan_engine.conversion.verify import verify_draft

    slot = ModelSlot(model, "tiny")
    generation = model.greedy("かいぎ")
    assert generation.finished
    assert slot.check_draft("かいぎ", "", generation.text) is None
    assert verify_draft(slot, Aligner(system), "かいぎ", "", generation.text, 3) == generation.text


def test_broken_model_text_is_never_shown():
    from karukan_engine.conversion.fused.live_text import presentable

    assert presentable("今日は　晴れ")
    assert not presentable("")
    assert not presentable("治\ufffd")
    assert not presentable("火\x1a")


def test_keys_queue_no_refinement_when_the_weights_give_the_model_no_say(base, fused, model, system):
    never = FusedConverter(base, [ModelSlot(model, "tiny")], replace(
        SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=0.0)), system)
    for converter, refines in ((never, False), (fused, True)):
        service = LiveService(converter, budget_ms=10_000)
        try:
            quick = service.key("s", service.begin("s"), req(READINGS[0]), lambda update: None)
            assert quick == converter.live_quick(req(READINGS[0]))
            # a refinement that can only tie the dictionary's text would wake a worker per key
            assert converter.model_ready() is refines
            assert service.scheduler.stats.submitted == int(refines)
        finally:
            service.shutdown()


def test_live_service_answers_now_and_refines_later(fused):
    service = LiveService(fused, budget_ms=10_000)
    updates = []
    try:
        reading = READINGS[0]
        quick = service.key("s", service.begin("s"), req(reading), updates.append)
        assert quick == fused.live_quick(req(reading))
        assert service.scheduler.idle(30)
        refined = fused.live_refined(req(reading))
        assert [u.text for u in updates] == ([refined] if refined != quick else [])
        # Two keys in a row: only the second key's refinement may arrive.
        updates.clear()
        service.key("s", service.begin("s"), req("とうきょうと"), updates.append)
        last = service.key("s", service.begin("s"), req("とうきょうとに"), updates.append)
        assert service.scheduler.idle(30)
        assert all(u.reading == "とうきょうとに" for u in updates)
        assert service.call("s", lambda: fused.candidates(req("とうきょう"), 3))
        assert last
    finally:
        service.shutdown()


def test_factory_builds_the_fused_pipeline_from_a_model_path(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KARUKAN_CONFIG", str(tmp_path / "config.toml"))   # defaults, hermetic
    converter = build_converter(ConverterOptions(model_id=str(model_dir)))
    assert isinstance(converter, FusedConverter)
    assert converter.shared.ready_slots()
    assert converter.live(req(READINGS[0]))
    converter.close()


def test_factory_without_the_model_gives_the_dictionary(tmp_path, base):
    assert build_fused_converter(base, ConverterOptions(model_id=str(tmp_path / "none.gguf"))) is base


def test_model_errors_fall_back_to_the_dictionary(fused, base):
    long_reading = "かいぎのしりょう" * 40          # longer than the tiny model's context
    assert fused.candidates(req(long_reading), 3) == base.candidates(req(long_reading), 3)
    live = fused.live(req(long_reading))           # chunked: every chunk fits the model
    assert live and len(live) >= 40


def test_a_late_main_model_hands_live_conversion_to_the_light_one(base, model, system, tmp_path):
    light_dir = write_model_dir(tmp_path / "light", TinyModelSpec(seed=5, eos_scale=2.0, name="light"))
    light = load_model(light_dir)
    try:
        fused = FusedConverter(base, [ModelSlot(model, "main"), ModelSlot(light, "light")], SETTINGS, system)
        for _ in range(5):
            fused.timings.observe("main/greedy", 1.0)     # main: a second per chunk
            fused.timings.observe("light/greedy", 0.001)  # light: a millisecond
        ctx = JobContext("s", 0, Priority.LIVE, deadline=time.monotonic() + 0.5)
        refined = fused.live_refined(req("とうきょうへいく"), ctx)
        assert refined is not None
        tiers = {key.model_id for key in fused.cache.keys()}
        assert "light" in tiers and "main" not in tiers
        assert fused.live_quick(req("とうきょうへいく")) == refined   # the light text stays shown
    finally:
        light.close()


def test_a_model_failing_while_typing_leaves_the_dictionary_text(base, model_dir, system, caplog):
    broken = load_model(model_dir)
    fused = FusedConverter(base, [ModelSlot(broken, "tiny")], SETTINGS, lexicon=system)
    broken.close()   # every llama.cpp call now fails with a NeuralError
    reading = READINGS[1]
    assert fused.live_refined(req(reading)) is None
    assert fused.live(req(reading)) == base.live(req(reading))
    assert "live model conversion failed" in caplog.text and reading not in caplog.text


def _ngram_handle(sentences):
    from karukan_engine.lm.char_ngram import CharNgram

    handle = LoadHandle(lambda: CharNgram.count(sentences))
    handle.settle()
    return handle


def test_the_ngram_decides_between_homophones_after_the_context(base, model, system):
    # Only the n-gram weighs (no lattice, no model NLL): the spelling its text knows after the
    # context wins, in explicit and in live conversion.
    weights = replace(SETTINGS.weights, lattice=0.0, nll=0.0, nll_total=0.0, unaligned=50.0, ngram=1.0)
    settings = replace(SETTINGS, weights=weights)
    for text, expected in (("機械を修理する", "機械"), ("機会を待つ", "機会")):
        fused = FusedConverter(base, [ModelSlot(model, "tiny")], settings, system,
                               ngram=_ngram_handle([text] * 20))
        top = fused.candidates(req("きかいを"), 5)[0].surface
        assert top.startswith(expected), top
        assert fused.live(req("きかいを")).startswith(expected)
        evidence = fused.evidence(fused.slots[0], req("きかいを"), base.candidates(req("きかいを"), 10))
        assert all(e.lm is not None and e.lm <= 0 for e in evidence if e.candidate.source != "variant")


def test_a_missing_ngram_leaves_the_ranking_without_it(base, model, system, caplog, tmp_path):
    from karukan_engine.lm.char_ngram import CharNgram

    broken = LoadHandle(lambda: CharNgram.load(tmp_path / "missing.npz"))
    broken.settle()
    weights = replace(SETTINGS.weights, ngram=0.1)
    fused = FusedConverter(base, [ModelSlot(model, "tiny")], replace(SETTINGS, weights=weights), system, ngram=broken)
    with caplog.at_level("WARNING"):
        assert fused.candidates(req(READINGS[0]), 3)
        assert fused.candidates(req(READINGS[1]), 3)
    assert sum("n-gram unavailable" in r.message for r in caplog.records) == 1
    assert fused.ngram is None


def test_the_factory_loads_the_ngram_only_when_the_weights_use_it(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KARUKAN_CONFIG", str(tmp_path / "config.toml"))
    plain = build_converter(ConverterOptions(model_id=str(model_dir)))
    assert plain.ngram is None
    plain.close()
    (tmp_path / "config.toml").write_text("[conversion.weights]\nngram = 0.1\n", encoding="utf-8")
    weighted = build_converter(ConverterOptions(model_id=str(model_dir)))
    assert weighted.ngram is not None and weighted.ngram.done()
    weighted.close()


def _counting(model, monkeypatch):
    """The real model, with its beam and NLL calls counted."""
    calls = {"beam": 0, "score_many": 0}
    for name in calls:
        real = getattr(model, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(model, name, counted)
    return calls


def test_space_does_only_the_model_work_its_budget_allows(base, model, system, monkeypatch):
    from karukan_engine.conversion.fused.space_ranking import SPACE_BEAM, SPACE_GREEDY, SPACE_SCORE

    weights = replace(SETTINGS.weights, lattice=1.0, nll=0.0, nll_total=0.05, ngram=0.0, margin=0.0)
    reading = "かいぎの"     # one chunk: no live text of earlier chunks (which has its own NLL pass)

    def converter(**settings):
        return FusedConverter(base, [ModelSlot(model, "tiny")], replace(SETTINGS, weights=weights, **settings), system)

    calls = _counting(model, monkeypatch)
    unlimited = converter(space_budget_ms=float("inf"))
    unlimited.timings.observe(SPACE_SCORE, 100.0)           # however slow: no budget, all of it
    unlimited.candidates(req(reading), 5)
    assert calls == {"beam": 1, "score_many": 1}

    slow_beam = converter(space_budget_ms=100.0)
    slow_beam.timings.observe(SPACE_BEAM, 100.0)            # 100 s a character: never fits
    slow_beam.timings.observe(SPACE_SCORE, 1e-6)            # (a stage never measured is tried)
    slow_beam.timings.observe(SPACE_GREEDY, 1e-6)
    slow_beam.candidates(req(reading), 5)
    assert calls == {"beam": 1, "score_many": 2}

    lean = converter(space_budget_ms=100.0)
    for stage in (SPACE_BEAM, SPACE_SCORE, SPACE_GREEDY):
        lean.timings.observe(stage, 100.0)
    top = [c for c in lean.candidates(req(reading), 8) if c.source != "variant"]
    assert calls == {"beam": 1, "score_many": 2}
    # Without the NLL pass no candidate carries an NLL: the path cost alone orders them.
    costs = [lean.shared.path_cost(reading, c.surface) for c in top]
    keys = [(cost is None, cost or 0) for cost in costs]
    assert keys == sorted(keys)


def test_a_greedy_text_typing_decoded_is_not_decoded_again(model, monkeypatch):
    slot = ModelSlot(model, "tiny")
    assert slot.remembered_greedy("かいぎの", "前に") is None
    first = slot.greedy("かいぎの", "前に")
    batcher = slot._batcher_for(model)
    decoded = []
    monkeypatch.setattr(batcher, "generate", lambda job: decoded.append(job))
    assert slot.remembered_greedy("かいぎの", "前に") == first
    assert slot.greedy("かいぎの", "前に") == first and not decoded
    assert slot.remembered_greedy("かいぎの", "後に") is None       # another context: another prompt


def test_batch_commands_get_all_of_the_model_work(model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KARUKAN_CONFIG", str(tmp_path / "config.toml"))
    budgeted = ConversionSettings(space_budget_ms=50.0)
    typing = build_converter(ConverterOptions(model_id=str(model_dir), conversion=budgeted))
    batch = build_converter(ConverterOptions(model_id=str(model_dir), conversion=budgeted, batch=True))
    try:
        assert typing.settings.space_budget_ms == 50.0
        assert batch.settings.space_budget_ms == float("inf")
    finally:
        typing.close()
        batch.close()


def test_the_engine_service_measures_the_space_stages_before_the_first_space(model_dir, tmp_path, monkeypatch):
    from karukan_engine.conversion.fused.space_ranking import SPACE_BEAM, SPACE_SCORE

    monkeypatch.setenv("KARUKAN_CONFIG", str(tmp_path / "config.toml"))
    budgeted = ConversionSettings(space_budget_ms=100.0)
    service = build_converter(ConverterOptions(model_id=str(model_dir), conversion=budgeted, load_in_background=True))
    batch = build_converter(ConverterOptions(model_id=str(model_dir), conversion=budgeted, batch=True))
    try:
        deadline = time.monotonic() + 30
        while service.timings.per_unit(SPACE_SCORE) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert service.timings.per_unit(SPACE_SCORE) is not None and service.timings.per_unit(SPACE_BEAM) is not None
        assert batch.timings.per_unit(SPACE_SCORE) is None       # no budget: nothing to plan, no warm-up
    finally:
        service.close()
        batch.close()


@pytest.fixture(scope="module")
def judged_base(system):
    """The product's lattice: the dictionary judged with the bundled character and word n-grams."""
    converter = LatticeConverter.judged(system)
    assert converter.lm() is not None and converter.word_lm() is not None
    return converter


def test_the_bundled_weights_keep_the_judged_lattices_order(judged_base, model, system):
    """The model's candidates join the list; the lattice's own keep the order its language
    models gave them, which the raw path costs of the fused score would undo (一万 → 1万)."""
    from karukan_engine.conversion.settings import FITTED_WEIGHTS

    fitted = FITTED_WEIGHTS["karukan-bundled"]
    assert fitted.keep_base_order
    reordered = []
    for keep in (True, False):
        settings = replace(SETTINGS, weights=replace(fitted, keep_base_order=keep))
        fused = FusedConverter(judged_base, [ModelSlot(model, "tiny")], settings, lexicon=system)
        for reading in ("いちまん", "かいは", "こめこうじです", *READINGS):
            found = fused.candidates(req(reading), 9)
            own = [c.surface for c in found if c.source not in ("model", "learning", "variant")]
            lattice = [c.surface for c in judged_base.candidates(req(reading), 30) if c.source != "variant"]
            if keep:
                assert own == lattice[:len(own)] and len(own) >= 3
            elif own != lattice[:len(own)]:
                reordered.append(reading)
    assert reordered   # without it the fused score reorders them: the check above can fail


def test_a_pool_the_score_places_nothing_in_is_ranked_without_its_scores(judged_base, model, system, monkeypatch):
    """With the base's order kept, a quick Space's pool of the lattice's candidates alone (no
    model text, nothing learned) comes out in its order whatever the scores: none is worked out
    (no alignment), and the list is the one the scores would give."""
    from karukan_engine.conversion.fused.run_options import RunOptions, SpacePlan
    from karukan_engine.conversion.ranking import rank
    from karukan_engine.conversion.settings import FITTED_WEIGHTS
    from karukan_engine.core.candidates import unique_surfaces

    fitted = replace(SETTINGS, weights=FITTED_WEIGHTS["karukan-bundled"])
    fused = FusedConverter(judged_base, [ModelSlot(model, "tiny")], fitted, lexicon=system)
    slot, lean = fused.slots[0], RunOptions(plan=SpacePlan.LEAN)
    aligned: list[str] = []
    alignments = fused.shared.alignments
    monkeypatch.setattr(fused.shared, "alignments", lambda reading, surfaces: aligned.append(reading)
                        or alignments(reading, surfaces))
    for reading in READINGS:
        pool = judged_base.candidates(req(reading), 9)
        scored = rank(fused.ranking._weigh(slot, req(reading), unique_surfaces(pool), score=False),
                      len(reading), fitted.weights)
        aligned.clear()
        found = fused.ranking.reranked(slot, req(reading), pool, 9, lean)
        assert not any(c.source in ("model", "learning") for c in found)
        assert found == scored and aligned == []


def test_with_the_base_order_kept_live_text_weighs_the_dictionarys_text_and_the_models(base, model, system):
    kept = replace(SETTINGS, weights=replace(SETTINGS.weights, lattice=0.0, unaligned=0.0, nll=1.0,
                                             keep_base_order=True))
    fused = FusedConverter(base, [ModelSlot(model, "tiny")], kept, system)
    slot = fused.slots[0]
    for a, b in (("今日", "京"), ("京", "今日"), ("会議", "かいぎ")):
        reading = "きょう" if a != "会議" else "かいぎ"
        nll = model.score_many(reading, "", [a, b])
        assert fused.live_text.arbitrate(slot, reading, "", a, b) == (b if nll[1] < nll[0] else a)


def test_with_the_bundled_weights_the_models_text_joins_the_list_but_never_leads(judged_base, model, system):
    """An infinite margin: Space's first candidate and the live text are the lattice's (the
    network's text was right on 3 of the 30 rows where it led), no live refinement is queued,
    and the network's candidates still join the list."""
    from karukan_engine.conversion.settings import FITTED_WEIGHTS

    fitted = replace(SETTINGS, weights=FITTED_WEIGHTS["karukan-bundled"])
    fused = FusedConverter(judged_base, [ModelSlot(model, "tiny")], fitted, lexicon=system)
    assert fused.model_ready() and not fused.refines_live()
    joined = 0
    for reading in READINGS:
        assert fused.live_refined(req(reading)) is None
        assert fused.live(req(reading)) == judged_base.live(req(reading))
        assert fused.candidates(req(reading), 9)[0] == judged_base.candidates(req(reading), 1)[0]
        # a short pool, so the network's candidates (a tiny random model's: unaligned) show
        pool = judged_base.candidates(req(reading), 3)
        found = fused.ranking.reranked(fused.slots[0], req(reading), pool, 20)
        assert found[0] == pool[0]
        joined += any(c.source == "model" for c in found)
    assert joined
    finite = FusedConverter(judged_base, [ModelSlot(model, "tiny")],
                            replace(fitted, weights=replace(fitted.weights, margin=0.5)), lexicon=system)
    assert finite.refines_live() and finite.live_refined(req(READINGS[0])) is not None
